// Every built-in profile loads cleanly and keeps its promises; PolicyToJson carries no secret.
#include <gtest/gtest.h>

#include <algorithm>

#include "common/sha256.h"
#include "policy/builtin_profiles.h"
#include "policy/decide.h"
#include "policy/loader.h"
#include "policy/policy_json.h"
#include "policy_test_util.h"

namespace ward::policy {
namespace {

using V = PathDecision::Visibility;
using testing::ErrorOf;

Result<Policy> LoadBuiltin(const std::string& name, RunFlags f = RunFlags()) {
  testing::MemFs fs;
  f.profile = name;
  return testing::Load(fs, f);
}

std::vector<std::string> BuiltinNames() {
  std::vector<std::string> names;
  for (const BuiltinProfile& p : BuiltinProfiles()) names.emplace_back(p.name);
  return names;
}

TEST(BuiltinProfiles, TheExpectedOnesShip) {
  std::vector<std::string> names = BuiltinNames();
  for (const char* want : {"default", "claude-code", "codex", "gemini", "opencode", "aider"}) {
    EXPECT_NE(std::find(names.begin(), names.end(), want), names.end()) << want;
  }
}

// The audit trail records each profile's digest; for built-ins it was computed at build time.
TEST(BuiltinProfiles, TheDigestMadeAtBuildTimeIsTheTextsDigest) {
  ASSERT_FALSE(BuiltinProfiles().empty());
  for (const BuiltinProfile& p : BuiltinProfiles()) {
    EXPECT_EQ(p.sha256, Sha256Hex(p.text)) << p.name;
  }
  Result<Policy> r = LoadBuiltin("default");
  ASSERT_TRUE(r.ok()) << ErrorOf(r);
  ASSERT_FALSE(r->sources.empty());
  EXPECT_EQ(r->sources.back().name, "default");
  auto text =
      std::find_if(BuiltinProfiles().begin(), BuiltinProfiles().end(), [](const BuiltinProfile& p) {
        return p.name == "default";
      })->text;
  EXPECT_EQ(r->sources.back().sha256, Sha256Hex(text));
}

TEST(BuiltinProfiles, EveryOneLoadsCleanly) {
  for (const std::string& name : BuiltinNames()) {
    Result<Policy> r = LoadBuiltin(name);
    ASSERT_TRUE(r.ok()) << name << ": " << ErrorOf(r);
    EXPECT_FALSE(r->description.empty()) << name;
    EXPECT_EQ(r->sources.back().origin, "builtin") << name;
    EXPECT_EQ(r->sources.back().name, name);
    EXPECT_TRUE(r->allow_degraded.empty()) << name << " must not weaken the sandbox";
    // Every built-in profile keeps the default's limits (enforceable without a cgroup).
    EXPECT_EQ(r->limits.memory_bytes, 8ull << 30) << name;
    EXPECT_EQ(r->limits.pids, 1024u) << name;
    EXPECT_EQ(r->limits.tmp_size_bytes, 2ull << 30) << name;
    for (const auto& [cname, c] : r->credentials) {
      EXPECT_FALSE(c.enabled) << name << ": " << cname << " is enabled by --credential only";
    }
    // Every built-in profile loads with each of its credentials enabled.
    for (const auto& [cname, c] : r->credentials) {
      RunFlags f;
      f.credentials = {cname};
      Result<Policy> e = LoadBuiltin(name, f);
      EXPECT_TRUE(e.ok()) << name << " --credential " << cname << ": " << ErrorOf(e);
    }
  }
}

TEST(BuiltinProfiles, DefaultProfileContents) {
  Result<Policy> r = LoadBuiltin("default");
  ASSERT_TRUE(r.ok()) << ErrorOf(r);
  const Policy& p = *r;
  EXPECT_EQ(p.workspace_access, Access::kWrite);
  EXPECT_TRUE(p.network.allow.empty());
  EXPECT_TRUE(p.credentials.empty());
  for (const char* sys : {"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc",
                          "/opt", "/home/u/.gitconfig", "/home/u/.config/git/config"}) {
    auto it = std::find_if(p.paths.begin(), p.paths.end(),
                           [&](const PathRule& r) { return r.path == sys; });
    ASSERT_NE(it, p.paths.end()) << sys;
    EXPECT_EQ(it->access, Access::kRead) << sys;
    EXPECT_TRUE(it->optional) << sys;
  }
  EXPECT_TRUE(std::none_of(p.paths.begin(), p.paths.end(),
                           [](const PathRule& r) { return r.access == Access::kWrite; }));
  for (const char* secret :
       {"/etc/shadow", "/etc/gshadow", "/etc/shadow-", "/etc/sudoers", "/etc/ssh/ssh_host_rsa_key",
        "/etc/ssl/private/x.key", "/etc/security/opasswd", "/etc/krb5.keytab",
        "/etc/ppp/chap-secrets", "/etc/wireguard/wg0.conf", "/etc/credstore/x",
        "/etc/mysql/debian.cnf", "/etc/NetworkManager/system-connections/w"}) {
    EXPECT_EQ(DecidePath(p, secret).visibility, V::kHidden) << secret;
  }
  std::vector<std::string> env;
  for (const EnvRule& e : p.env) env.push_back(e.name);
  EXPECT_EQ(env, (std::vector<std::string>{"PATH", "HOME", "USER", "LOGNAME", "SHELL", "TERM",
                                           "LANG", "LC_*", "TZ", "COLORTERM", "NO_COLOR"}));
}

struct AgentCase {
  const char* profile;
  std::vector<const char*> writable;  // state the agent must write
  std::vector<const char*> hidden;    // its secrets
  std::vector<const char*> readonly;  // settings that name host commands
  std::vector<const char*> hosts;
  std::vector<const char*> credentials;
};

TEST(BuiltinProfiles, AgentProfilesGiveStateButNoSecrets) {
  const AgentCase cases[] = {
      {"claude-code",
       {"/home/u/.claude/projects/x.jsonl", "/home/u/.claude.json", "/home/u/.claude/todos/a"},
       {"/home/u/.claude/.credentials.json", "/home/u/.ssh/id_ed25519"},
       {"/home/u/.claude/settings.json", "/home/u/.claude/hooks/pre.sh"},
       {"api.anthropic.com"},
       {"anthropic", "claude-oauth"}},
      {"codex",
       {"/home/u/.codex/sessions/s.jsonl", "/home/u/.codex/history.jsonl"},
       {"/home/u/.codex/auth.json"},
       {"/home/u/.codex/config.toml"},
       {"api.openai.com"},
       {"openai"}},
      {"gemini",
       {"/home/u/.gemini/tmp/ws/chats/s.jsonl", "/home/u/.gemini/history/ws/.project_root",
        "/home/u/.gemini/projects.json", "/home/u/.gemini/installation_id"},
       {"/home/u/.gemini/oauth_creds.json", "/home/u/.gemini/google_accounts.json",
        "/home/u/.gemini/mcp-oauth-tokens.json", "/home/u/.gemini/.env"},
       {"/home/u/.gemini/settings.json", "/home/u/.gemini/trustedFolders.json",
        "/home/u/.gemini/extensions/x/gemini-extension.json", "/home/u/.gemini/commands/c.toml"},
       {"generativelanguage.googleapis.com"},
       {"gemini"}},
      {"opencode",
       {"/home/u/.config/opencode/package.json", "/home/u/.local/share/opencode/log/x.log",
        "/home/u/.local/state/opencode/kv.json", "/home/u/.cache/opencode/models.json"},
       {"/home/u/.local/share/opencode/auth.json"},
       {"/home/u/.config/opencode/opencode.json"},
       {"api.anthropic.com", "api.openai.com", "models.opencode.ai", "models.dev"},
       {"anthropic", "openai"}},
      {"aider",
       {"/home/u/.aider/caches/x"},
       {"/home/u/.aider/oauth-keys.env", "/home/u/.env"},
       {},
       {"api.anthropic.com", "api.openai.com"},
       {"anthropic", "openai"}},
  };
  for (const AgentCase& c : cases) {
    Result<Policy> r = LoadBuiltin(c.profile);
    ASSERT_TRUE(r.ok()) << c.profile << ": " << ErrorOf(r);
    const Policy& p = *r;
    // It extends default: the default's rules come first.
    EXPECT_EQ(p.sources.front().name, "default") << c.profile;
    EXPECT_EQ(DecidePath(p, "/etc/shadow").visibility, V::kHidden) << c.profile;
    for (const char* w : c.writable) {
      PathDecision d = DecidePath(p, w);
      EXPECT_EQ(d.visibility, V::kWrite) << c.profile << " " << w;
      EXPECT_TRUE(d.host_file) << c.profile << " " << w;
    }
    for (const char* h : c.hidden) {
      PathDecision d = DecidePath(p, h);
      EXPECT_FALSE(d.host_file) << c.profile << " " << h << ": " << d.reason;
    }
    for (const char* ro : c.readonly) {
      EXPECT_EQ(DecidePath(p, ro).visibility, V::kRead) << c.profile << " " << ro;
    }
    std::vector<std::string> allowed;
    for (const HostRule& h : p.network.allow) allowed.push_back(h.pattern);
    EXPECT_EQ(allowed.size(), c.hosts.size()) << c.profile;
    for (const char* h : c.hosts) {
      EXPECT_NE(std::find(allowed.begin(), allowed.end(), h), allowed.end()) << c.profile << h;
    }
    EXPECT_EQ(p.credentials.size(), c.credentials.size()) << c.profile;
    for (const char* name : c.credentials) {
      ASSERT_EQ(p.credentials.count(name), 1u) << c.profile << " " << name;
      const Credential& cred = p.credentials.at(name);
      EXPECT_FALSE(cred.route.empty());
      // Gemini CLI takes a base URL as a different sign-in ("gateway") that headless use
      // refuses; it reaches its API through interception instead (profiles/gemini.toml).
      EXPECT_EQ(cred.route_env.empty(), std::string(c.profile) == "gemini") << c.profile;
      EXPECT_FALSE(cred.env.empty());
    }
  }
}

TEST(BuiltinProfiles, ModelApiCredentials) {
  Result<Policy> r = LoadBuiltin("claude-code");
  ASSERT_TRUE(r.ok()) << ErrorOf(r);
  const Credential& a = r->credentials.at("anthropic");
  EXPECT_EQ(a.from.kind, CredentialSource::Kind::kEnv);
  EXPECT_EQ(a.from.value, "ANTHROPIC_API_KEY");
  EXPECT_EQ(a.hosts, std::vector<std::string>{"api.anthropic.com"});
  EXPECT_EQ(a.inject.kind, CredentialInject::Kind::kHeader);
  EXPECT_EQ(a.inject.name, "x-api-key");
  EXPECT_EQ(a.route, "anthropic");
  EXPECT_EQ(a.route_env.at("ANTHROPIC_BASE_URL"), "{route_url}");
  Result<Policy> codex = LoadBuiltin("codex");
  ASSERT_TRUE(codex.ok()) << ErrorOf(codex);
  const Credential& o = codex->credentials.at("openai");
  EXPECT_EQ(o.inject.name, "Authorization");
  EXPECT_EQ(o.inject.template_, "Bearer {secret}");
  EXPECT_EQ(o.route, "openai");
  EXPECT_EQ(o.route_env.at("OPENAI_BASE_URL"), "{route_url}/v1");
  Result<Policy> gemini = LoadBuiltin("gemini");
  ASSERT_TRUE(gemini.ok()) << ErrorOf(gemini);
  const Credential& g = gemini->credentials.at("gemini");
  EXPECT_EQ(g.from.value, "GEMINI_API_KEY");
  EXPECT_EQ(g.env, "GEMINI_API_KEY");
  EXPECT_EQ(g.hosts, std::vector<std::string>{"generativelanguage.googleapis.com"});
  EXPECT_EQ(g.inject.kind, CredentialInject::Kind::kHeader);
  EXPECT_EQ(g.inject.name, "x-goog-api-key");
  EXPECT_EQ(g.inject.template_, "{secret}");
}

TEST(PolicyToJson, CarriesTheEffectivePolicyAndNoSecrets) {
  testing::MemFs fs;
  RunFlags f;
  f.profile = "claude-code";
  f.credentials = {"anthropic"};
  f.env = {"MY_TOKEN=super-secret-value"};
  f.allow_degraded = {"landlock"};
  Result<Policy> r = testing::Load(fs, f);
  ASSERT_TRUE(r.ok()) << ErrorOf(r);
  nlohmann::json j = PolicyToJson(*r);
  EXPECT_EQ(j["profile"], "claude-code");
  EXPECT_EQ(j["workspace"]["access"], "write");
  EXPECT_EQ(j["workspace"]["path"], testing::kWorkspace);
  EXPECT_EQ(j["sources"].size(), 2u);
  EXPECT_EQ(j["sources"][0]["name"], "default");
  EXPECT_EQ(j["sources"][0]["sha256"].get<std::string>().size(), 64u);
  EXPECT_EQ(j["filesystem"]["paths"][0]["path"], "/usr");
  EXPECT_EQ(j["filesystem"]["paths"][0]["origin"]["source"], "builtin:default");
  EXPECT_GT(j["filesystem"]["paths"][0]["origin"]["line"].get<int>(), 0);
  EXPECT_EQ(j["filesystem"]["nested_repo_depth"], 3);
  EXPECT_EQ(j["network"]["allow"][0]["pattern"], "api.anthropic.com");
  EXPECT_EQ(j["limits"]["memory_bytes"], 8ull << 30);
  EXPECT_EQ(j["credentials"]["anthropic"]["enabled"], true);
  EXPECT_EQ(j["credentials"]["anthropic"]["from"]["kind"], "env");
  EXPECT_EQ(j["credentials"]["anthropic"]["inject"]["header"], "x-api-key");
  EXPECT_EQ(j["allow_degraded"][0]["layer"], "landlock");
  EXPECT_EQ(j["allow_degraded"][0]["origin"]["key"], "--allow-degraded");
  EXPECT_EQ(j["audit"], true);
  const nlohmann::json& last_env = j["env"].back();
  EXPECT_EQ(last_env["name"], "MY_TOKEN");
  EXPECT_EQ(last_env["kind"], "set");
  EXPECT_EQ(j.dump().find("super-secret-value"), std::string::npos);
}

TEST(PolicyToJson, LimitsAndApprovals) {
  testing::MemFs fs;
  RunFlags f;
  f.memory = "1G";
  f.cpu = "0.5";
  f.approvals = true;
  Result<Policy> r = testing::Load(fs, f);
  ASSERT_TRUE(r.ok()) << ErrorOf(r);
  nlohmann::json j = PolicyToJson(*r);
  EXPECT_EQ(j["limits"]["memory_bytes"], 1ull << 30);
  EXPECT_DOUBLE_EQ(j["limits"]["cpu_cores"].get<double>(), 0.5);
  EXPECT_EQ(j["limits"]["origins"]["memory"]["key"], "--memory");
  EXPECT_EQ(j["approvals"]["enabled"], true);
  EXPECT_EQ(j["approvals"]["timeout_ms"], 60000);
}

}  // namespace
}  // namespace ward::policy
