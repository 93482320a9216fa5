// Profiles: parsing, merging along `extends`, and every class of validation error (each one
// checked for the file, the line and the key in its message).
#include <gtest/gtest.h>

#include <functional>

#include <algorithm>

#include "common/sha256.h"
#include "policy/loader.h"
#include "policy_test_util.h"

namespace ward::policy {
namespace {

using testing::ErrorOf;
using ::testing::HasSubstr;
using testing::Load;
using testing::LoadText;
using testing::MemFs;
using testing::ProfilePath;

const PathRule* FindPath(const Policy& p, const std::string& path) {
  const PathRule* found = nullptr;
  for (const PathRule& r : p.paths) {
    if (r.path == path) found = &r;
  }
  return found;
}

bool HasDeny(const Policy& p, const std::string& path) {
  return std::any_of(p.deny.begin(), p.deny.end(),
                     [&](const DenyRule& r) { return r.path == path; });
}

bool HasProtected(const Policy& p, const std::string& rel) {
  return std::any_of(p.protected_paths.begin(), p.protected_paths.end(),
                     [&](const ProtectedRule& r) { return r.relpath == rel; });
}

// Expects a failure whose message contains every fragment.
void ExpectError(const Result<Policy>& r, std::initializer_list<const char*> fragments) {
  ASSERT_FALSE(r.ok()) << "expected an error containing '" << *fragments.begin() << "'";
  EXPECT_EQ(r.status().code(), Code::kInvalidArgument) << r.status().message();
  for (const char* f : fragments) EXPECT_THAT(r.status().message(), HasSubstr(f));
}

// ---------------------------------------------------------------------------------------------
// Parsing

TEST(Loader, MinimalProfileKeepsTheModelDefaults) {
  Result<Policy> r = LoadText("description = \"minimal\"\n");
  ASSERT_TRUE(r.ok()) << ErrorOf(r);
  EXPECT_EQ(r->profile, ProfilePath("t"));
  EXPECT_EQ(r->workspace, testing::kWorkspace);
  EXPECT_EQ(r->home, testing::kHome);
  EXPECT_EQ(r->workspace_access, Access::kWrite);
  EXPECT_TRUE(r->paths.empty());
  EXPECT_TRUE(r->env.empty());
  EXPECT_TRUE(r->network.allow.empty());
  EXPECT_TRUE(r->credentials.empty());
  EXPECT_TRUE(r->audit);
  ASSERT_EQ(r->sources.size(), 1u);
  EXPECT_EQ(r->sources[0].origin, "file");
  EXPECT_EQ(r->sources[0].name, ProfilePath("t"));
  EXPECT_EQ(r->sources[0].sha256, Sha256Hex("description = \"minimal\"\n"));
}

TEST(Loader, EveryKeyIsParsedWithItsOrigin) {
  Result<Policy> r = LoadText(R"(description = "all keys"
[workspace]
access = "read"
[filesystem]
read = ["/usr", "~/.gitconfig", "/opt//tools/./bin/../lib/"]
write = ["~/.npm"]
deny = ["/etc/shadow", "/etc/ssh/ssh_host_*_key"]
protected = [".git/hooks", "./.envrc"]
nested_repo_depth = 5
[env]
pass = ["PATH", "LC_*"]
set = { NODE_OPTIONS = "--max-old-space-size=4096", EMPTY = "" }
[network]
allow = ["packages.example.com", "*.github.com:443"]
deny = ["evil.example.com"]
[limits]
memory = "8G"
pids = 1024
cpu = 2.5
timeout = "1h"
tmp_size = "2G"
file_size = 1048576
[credentials.github]
from = "env:GITHUB_TOKEN"
hosts = ["api.github.com"]
inject = { header = "Authorization", value = "Bearer {secret}" }
env = "GITHUB_TOKEN"
route = "github"
route_env = { GITHUB_API_URL = "{route_url}" }
enabled = true
[approvals]
enabled = true
auto_deny = ["~/.ssh/*"]
auto_allow_once = ["example.com"]
timeout = "30s"
[sandbox]
allow_degraded = ["landlock"]
)");
  ASSERT_TRUE(r.ok()) << ErrorOf(r);
  const Policy& p = *r;
  const std::string file = ProfilePath("t");
  EXPECT_EQ(p.description, "all keys");
  EXPECT_EQ(p.workspace_access, Access::kRead);
  EXPECT_EQ(p.workspace_origin.source, file);
  EXPECT_EQ(p.workspace_origin.line, 3);
  EXPECT_EQ(p.workspace_origin.key, "workspace.access");

  ASSERT_EQ(p.paths.size(), 4u);
  EXPECT_EQ(p.paths[0].path, "/usr");
  EXPECT_EQ(p.paths[0].access, Access::kRead);
  EXPECT_TRUE(p.paths[0].optional);
  EXPECT_EQ(p.paths[0].origin.line, 5);
  EXPECT_EQ(p.paths[0].origin.key, "filesystem.read");
  EXPECT_EQ(p.paths[1].path, "/home/u/.gitconfig");
  EXPECT_EQ(p.paths[2].path, "/opt/tools/lib");
  EXPECT_EQ(p.paths[3].path, "/home/u/.npm");
  EXPECT_EQ(p.paths[3].access, Access::kWrite);
  EXPECT_EQ(p.paths[3].origin.line, 6);
  EXPECT_EQ(p.paths[3].origin.key, "filesystem.write");

  ASSERT_EQ(p.deny.size(), 2u);
  EXPECT_EQ(p.deny[1].path, "/etc/ssh/ssh_host_*_key");
  EXPECT_EQ(p.deny[1].origin.line, 7);
  ASSERT_EQ(p.protected_paths.size(), 2u);
  EXPECT_EQ(p.protected_paths[1].relpath, ".envrc");
  EXPECT_TRUE(HasProtected(p, ".git/hooks"));
  EXPECT_EQ(p.nested_repo_depth, 5);

  ASSERT_EQ(p.env.size(), 4u);
  EXPECT_EQ(p.env[0].name, "PATH");
  EXPECT_FALSE(p.env[0].value.has_value());
  EXPECT_EQ(p.env[1].name, "LC_*");
  EXPECT_EQ(p.env[2].name, "EMPTY");
  EXPECT_EQ(p.env[2].value, "");
  EXPECT_EQ(p.env[3].name, "NODE_OPTIONS");
  EXPECT_EQ(p.env[3].value, "--max-old-space-size=4096");
  EXPECT_EQ(p.env[3].origin.key, "env.set.NODE_OPTIONS");

  // The enabled credential's host joins the allow list, with the credential's origin.
  ASSERT_EQ(p.network.allow.size(), 3u);
  EXPECT_EQ(p.network.allow[1].pattern, "*.github.com:443");
  EXPECT_EQ(p.network.allow[1].origin.line, 14);
  EXPECT_EQ(p.network.allow[2].pattern, "api.github.com");
  EXPECT_EQ(p.network.allow[2].origin.key, "credentials.github");
  EXPECT_EQ(p.network.allow[2].origin.line, 23);
  ASSERT_EQ(p.network.deny.size(), 1u);

  EXPECT_EQ(p.limits.memory_bytes, 8ull << 30);
  EXPECT_EQ(p.limits.pids, 1024u);
  EXPECT_DOUBLE_EQ(*p.limits.cpu_cores, 2.5);
  EXPECT_EQ(p.limits.timeout_ms, 3600000u);
  EXPECT_EQ(p.limits.tmp_size_bytes, 2ull << 30);
  EXPECT_EQ(p.limits.file_size_bytes, 1048576u);
  EXPECT_EQ(p.limits.origins.at("memory").line, 17);
  EXPECT_EQ(p.limits.origins.at("file_size").key, "limits.file_size");

  ASSERT_EQ(p.credentials.count("github"), 1u);
  const Credential& c = p.credentials.at("github");
  EXPECT_EQ(c.from.kind, CredentialSource::Kind::kEnv);
  EXPECT_EQ(c.from.value, "GITHUB_TOKEN");
  EXPECT_EQ(c.hosts, std::vector<std::string>{"api.github.com"});
  EXPECT_EQ(c.inject.kind, CredentialInject::Kind::kHeader);
  EXPECT_EQ(c.inject.name, "Authorization");
  EXPECT_EQ(c.inject.template_, "Bearer {secret}");
  EXPECT_EQ(c.env, "GITHUB_TOKEN");
  EXPECT_EQ(c.route, "github");
  EXPECT_EQ(c.route_env.at("GITHUB_API_URL"), "{route_url}");
  EXPECT_TRUE(c.enabled);
  EXPECT_EQ(c.origin.line, 23);
  EXPECT_EQ(c.origin.key, "credentials.github");

  EXPECT_TRUE(p.approvals.enabled);
  EXPECT_EQ(p.approvals.auto_deny, std::vector<std::string>{"~/.ssh/*"});
  EXPECT_EQ(p.approvals.auto_allow_once, std::vector<std::string>{"example.com"});
  EXPECT_EQ(p.approvals.timeout_ms, 30000u);

  EXPECT_EQ(p.allow_degraded, std::set<Layer>{Layer::kLandlock});
  EXPECT_EQ(p.degraded_origins.at(Layer::kLandlock).line, 37);
}

TEST(Loader, CredentialSourcesAndInjectKinds) {
  Result<Policy> r = LoadText(R"(
[credentials.a]
from = "file:~/.config/gh/token"
hosts = ["api.github.com", "uploads.github.com"]
inject = { basic = "x-access-token" }
[credentials.b]
from = "command:gh auth token"
hosts = ["api.example.com"]
inject = { query = "key" }
[credentials.c]
from = "env:C_KEY"
hosts = ["c.example.com"]
)");
  ASSERT_TRUE(r.ok()) << ErrorOf(r);
  const Credential& a = r->credentials.at("a");
  EXPECT_EQ(a.from.kind, CredentialSource::Kind::kFile);
  EXPECT_EQ(a.from.value, "/home/u/.config/gh/token");
  EXPECT_EQ(a.inject.kind, CredentialInject::Kind::kBasic);
  EXPECT_EQ(a.inject.template_, "x-access-token");
  EXPECT_FALSE(a.enabled);
  const Credential& b = r->credentials.at("b");
  EXPECT_EQ(b.from.kind, CredentialSource::Kind::kCommand);
  EXPECT_EQ(b.from.value, "gh auth token");
  EXPECT_EQ(b.inject.kind, CredentialInject::Kind::kQuery);
  EXPECT_EQ(b.inject.name, "key");
  EXPECT_EQ(b.inject.template_, "{secret}");
  // No inject: a bearer token in Authorization.
  const Credential& c = r->credentials.at("c");
  EXPECT_EQ(c.inject.kind, CredentialInject::Kind::kHeader);
  EXPECT_EQ(c.inject.name, "Authorization");
  EXPECT_EQ(c.inject.template_, "Bearer {secret}");
}

// Credentials need egress: an enabled credential's hosts join the allow list once (a host
// already listed keeps its own rule); a disabled one's do not (the control).
TEST(Loader, AnEnabledCredentialsHostsJoinTheAllowListOnce) {
  Result<Policy> r = LoadText(R"(
[network]
allow = ["api.github.com"]
[credentials.on]
from = "env:ON_KEY"
hosts = ["api.github.com", "uploads.github.com"]
enabled = true
[credentials.off]
from = "env:OFF_KEY"
hosts = ["off.example.com"]
)");
  ASSERT_TRUE(r.ok()) << ErrorOf(r);
  std::vector<std::string> allow;
  for (const HostRule& h : r->network.allow) allow.push_back(h.pattern);
  EXPECT_EQ(allow, (std::vector<std::string>{"api.github.com", "uploads.github.com"}));
  EXPECT_EQ(r->network.allow[0].origin.key, "network.allow");
  EXPECT_EQ(r->network.allow[1].origin.key, "credentials.on");
  EXPECT_TRUE(AnyCredentialEnabled(*r));
  r->credentials.at("on").enabled = false;
  EXPECT_FALSE(AnyCredentialEnabled(*r));
}

TEST(Loader, ValuesMayUseIntegersForSizesAndDurations) {
  Result<Policy> r = LoadText(
      "[limits]\nmemory = 4194304\ntimeout = 90\ncpu = 2\n"
      "[approvals]\ntimeout = 5\n");
  ASSERT_TRUE(r.ok()) << ErrorOf(r);
  EXPECT_EQ(r->limits.memory_bytes, 4194304u);
  EXPECT_EQ(r->limits.timeout_ms, 90000u);
  EXPECT_DOUBLE_EQ(*r->limits.cpu_cores, 2.0);
  EXPECT_EQ(r->approvals.timeout_ms, 5000u);
}

TEST(Loader, AnEmptyProfileSaysItProbablyLacksExtends) {
  for (const char* text : {"", "# only a comment\n\n"}) {
    ExpectError(LoadText(text), {"t.toml: the profile defines nothing (the file is empty or holds "
                                 "only comments); it probably lacks extends = \"default\""});
  }
}

// The policy of the default profile with these flags.
Result<Policy> WithFlags(const std::function<void(RunFlags&)>& set) {
  MemFs fs;
  RunFlags f;
  set(f);
  return Load(fs, f);
}

TEST(Loader, SizesWithoutAUnitBelowAMiBAreRefused) {
  const char* means = "5 without a unit means 5 bytes, too little to be meant; write 5M for MiB "
                      "or 5G for GiB (or 5B if you do mean bytes)";
  ExpectError(LoadText("[limits]\nmemory = 5\n"), {"t.toml:2: limits.memory: ", means});
  ExpectError(LoadText("[limits]\nmemory = \"5\"\n"), {"t.toml:2: limits.memory: ", means});
  ExpectError(LoadText("[limits]\ntmp_size = 5\n"), {"limits.tmp_size: ", means});
  ExpectError(LoadText("[limits]\nfile_size = \"5\"\n"), {"limits.file_size: ", means});
  ExpectError(WithFlags([](RunFlags& f) { f.memory = "5"; }), {"command line: --memory: ", means});
  // A unit says the figure is meant; a bare number of a MiB or more is taken as bytes.
  for (const char* ok : {"\"512k\"", "\"100B\"", "1048576", "\"1048576\""}) {
    Result<Policy> r = LoadText(std::string("[limits]\nfile_size = ") + ok + "\n");
    EXPECT_TRUE(r.ok()) << ok << ": " << ErrorOf(r);
  }
}

TEST(Loader, AllowPatternsForEveryHostNeedAllowNetAnything) {
  for (const char* p : {"*", "*.*", "*.com", "*.com.", "*:443", "0.0.0.0/0", "::/0", "[::]/0",
                        "0.0.0.0/0:443"}) {
    ExpectError(WithFlags([&](RunFlags& f) { f.allow_net = {p}; }),
                {"command line: --allow-net: ", "would allow every", "--allow-net-anything"});
    EXPECT_TRUE(WithFlags([&](RunFlags& f) {
                  f.allow_net = {p};
                  f.allow_net_anything = true;
                }).ok())
        << p;
  }
  ExpectError(LoadText("[network]\nallow = [\"*.org\"]\n"),
              {"t.toml:2: network.allow: '*.org' would allow every host under the top-level "
               "domain '.org'"});
  for (const char* p : {"*.example.com", "example.com", "10.0.0.0/8", "*.co.uk", "[::1]:3000"}) {
    EXPECT_TRUE(WithFlags([&](RunFlags& f) { f.allow_net = {p}; }).ok()) << p;
  }
  EXPECT_TRUE(WithFlags([](RunFlags& f) { f.deny_net = {"*"}; }).ok());
  // A secret never goes to every host, whatever the run allows.
  ExpectError(WithFlags([](RunFlags& f) {
                f.credential_env = {"TOKEN=*.com"};
                f.allow_net_anything = true;
              }),
              {"command line: --credential-env: '*.com' would send the secret to every host "
               "under the top-level domain '.com'; name the hosts that need it"});
}

// ---------------------------------------------------------------------------------------------
// extends and merge

TEST(Loader, ExtendsMergesListsScalarsAndTables) {
  MemFs fs;
  fs.AddProfile("base", R"(description = "base"
[workspace]
access = "read"
[filesystem]
read = ["/usr"]
nested_repo_depth = 2
[env]
pass = ["PATH"]
set = { A = "1", B = "1" }
[limits]
memory = "1G"
pids = 10
[credentials.gh]
from = "env:GH_TOKEN"
hosts = ["api.github.com"]
)");
  fs.AddProfile("child", R"(extends = "base"
[workspace]
access = "write"
[filesystem]
read = ["/opt"]
[env]
set = { B = "2" }
[limits]
memory = "2G"
[credentials.gh]
hosts = ["uploads.github.com"]
enabled = true
)");
  RunFlags flags;
  flags.profile = "child";
  Result<Policy> r = Load(fs, flags);
  ASSERT_TRUE(r.ok()) << ErrorOf(r);
  EXPECT_EQ(r->profile, ProfilePath("child"));
  EXPECT_EQ(r->description, "base");  // the child has none: the parent's stays
  EXPECT_EQ(r->workspace_access, Access::kWrite);
  EXPECT_EQ(r->workspace_origin.source, ProfilePath("child"));
  ASSERT_EQ(r->paths.size(), 2u);  // lists append, parent first
  EXPECT_EQ(r->paths[0].path, "/usr");
  EXPECT_EQ(r->paths[1].path, "/opt");
  EXPECT_EQ(r->nested_repo_depth, 2);
  ASSERT_EQ(r->env.size(), 4u);  // PATH, A=1, B=1, B=2 (a later rule wins when building)
  EXPECT_EQ(r->env[3].name, "B");
  EXPECT_EQ(r->env[3].value, "2");
  EXPECT_EQ(r->limits.memory_bytes, 2ull << 30);   // scalars override
  EXPECT_EQ(r->limits.pids, 10u);                  // untouched ones stay
  const Credential& gh = r->credentials.at("gh");  // tables merge field by field
  EXPECT_EQ(gh.from.value, "GH_TOKEN");
  EXPECT_EQ(gh.hosts, (std::vector<std::string>{"api.github.com", "uploads.github.com"}));
  EXPECT_TRUE(gh.enabled);
  EXPECT_EQ(gh.origin.source, ProfilePath("base"));
  ASSERT_EQ(r->sources.size(), 2u);
  EXPECT_EQ(r->sources[0].name, ProfilePath("base"));
  EXPECT_EQ(r->sources[1].name, ProfilePath("child"));
  EXPECT_NE(r->sources[0].sha256, r->sources[1].sha256);
  EXPECT_EQ(r->sources[0].sha256.size(), 64u);
}

TEST(Loader, ExtendsAListAppliesEachParentOnceInOrder) {
  MemFs fs;
  fs.AddProfile("root", "[filesystem]\nread = [\"/root-dir\"]\n");
  fs.AddProfile("a", "extends = \"root\"\n[filesystem]\nread = [\"/a\"]\n");
  fs.AddProfile("b", "extends = \"root\"\n[filesystem]\nread = [\"/b\"]\n");
  fs.AddProfile("top", "extends = [\"a\", \"b\"]\n[filesystem]\nread = [\"/top\"]\n");
  RunFlags flags;
  flags.profile = "top";
  Result<Policy> r = Load(fs, flags);
  ASSERT_TRUE(r.ok()) << ErrorOf(r);
  std::vector<std::string> paths;
  for (const PathRule& p : r->paths) paths.push_back(p.path);
  EXPECT_EQ(paths, (std::vector<std::string>{"/root-dir", "/a", "/b", "/top"}));
  EXPECT_EQ(r->sources.size(), 4u);
}

TEST(Loader, UserProfileShadowsBuiltinAndBuiltinPrefixNamesTheBuiltin) {
  MemFs fs;
  fs.AddProfile("default", R"(extends = "builtin:default"
[filesystem]
read = ["/srv/tools"]
)");
  Result<Policy> r = Load(fs);  // --profile default
  ASSERT_TRUE(r.ok()) << ErrorOf(r);
  EXPECT_EQ(r->profile, ProfilePath("default"));
  ASSERT_EQ(r->sources.size(), 2u);
  EXPECT_EQ(r->sources[0].name, "default");
  EXPECT_EQ(r->sources[0].origin, "builtin");
  EXPECT_EQ(r->sources[1].origin, "file");
  EXPECT_NE(FindPath(*r, "/usr"), nullptr);
  EXPECT_NE(FindPath(*r, "/srv/tools"), nullptr);
  EXPECT_EQ(FindPath(*r, "/usr")->origin.source, "builtin:default");

  // Built-in agent profiles extend "default", which now resolves to the user's file.
  RunFlags flags;
  flags.profile = "claude-code";
  Result<Policy> agent = Load(fs, flags);
  ASSERT_TRUE(agent.ok()) << ErrorOf(agent);
  EXPECT_NE(FindPath(*agent, "/srv/tools"), nullptr);

  // builtin:NAME on the command line skips the user's file.
  flags.profile = "builtin:default";
  Result<Policy> plain = Load(fs, flags);
  ASSERT_TRUE(plain.ok()) << ErrorOf(plain);
  EXPECT_EQ(plain->profile, "default");
  EXPECT_EQ(FindPath(*plain, "/srv/tools"), nullptr);
}

TEST(Loader, ProfileFileFromTheCommandLine) {
  MemFs fs;
  fs.Add("/home/u/proj/sub/my.toml", "[filesystem]\nread = [\"/srv\"]\n");
  fs.Add("/abs/other.toml", "extends = \"~/p/base.toml\"\n");
  fs.Add("/home/u/p/base.toml", "[filesystem]\nread = [\"/base\"]\n");
  RunFlags flags;
  flags.profile = "sub/my.toml";  // relative to cwd
  Result<Policy> r = Load(fs, flags);
  ASSERT_TRUE(r.ok()) << ErrorOf(r);
  EXPECT_EQ(r->profile, "/home/u/proj/sub/my.toml");
  EXPECT_EQ(r->sources[0].origin, "file");
  EXPECT_NE(FindPath(*r, "/srv"), nullptr);

  flags.profile = "/abs/other.toml";
  r = Load(fs, flags);
  ASSERT_TRUE(r.ok()) << ErrorOf(r);
  EXPECT_NE(FindPath(*r, "/base"), nullptr);

  flags.profile = "missing.toml";
  ExpectError(Load(fs, flags),
              {"command line", "--profile", "not found", "/home/u/proj/missing.toml"});
}

TEST(Loader, WithoutConfigDirOnlyBuiltinsAreUsed) {
  MemFs fs;
  fs.AddProfile("default", "this would not parse");
  Context ctx = testing::TestContext();
  ctx.config_dir.clear();
  Result<Policy> r = Load(fs, RunFlags(), ctx);
  ASSERT_TRUE(r.ok()) << ErrorOf(r);
  EXPECT_EQ(r->sources[0].origin, "builtin");
}

TEST(Loader, ExtendsCycleIsAnError) {
  MemFs fs;
  fs.AddProfile("a", "extends = \"b\"\n");
  fs.AddProfile("b", "\n\nextends = [\"c\"]\n");
  fs.AddProfile("c", "extends = \"a\"\n");
  RunFlags flags;
  flags.profile = "a";
  ExpectError(Load(fs, flags), {ProfilePath("c").c_str(), ":1: extends: extends cycle",
                                "a.toml -> ", "b.toml -> ", "c.toml -> "});
}

TEST(Loader, SelfExtendingUserProfileGetsTheBuiltinHint) {
  MemFs fs;
  fs.AddProfile("default", "extends = \"default\"\n");
  ExpectError(Load(fs), {"extends cycle", "builtin:default"});
}

TEST(Loader, ExtendsDepthIsLimited) {
  MemFs fs;
  for (int i = 0; i < 9; ++i) {
    fs.AddProfile("p" + std::to_string(i), "extends = \"p" + std::to_string(i + 1) + "\"\n");
  }
  fs.AddProfile("p9", "description = \"last\"\n");
  RunFlags flags;
  flags.profile = "p1";  // p1 .. p9: 9 profiles
  ExpectError(Load(fs, flags), {"deeper than 8"});
  flags.profile = "p2";  // p2 .. p9: 8 profiles
  Result<Policy> ok = Load(fs, flags);
  EXPECT_TRUE(ok.ok()) << ErrorOf(ok);
}

TEST(Loader, UnknownProfileSuggestsBuiltins) {
  MemFs fs;
  RunFlags flags;
  flags.profile = "claude_code";
  ExpectError(Load(fs, flags), {"--profile", "unknown profile 'claude_code'",
                                "did you mean 'claude-code'", "built-in profiles"});
  flags.profile = "builtin:nope";
  ExpectError(Load(fs, flags), {"unknown profile 'nope'"});
  fs.AddProfile("t", "extends = \"nope\"\n");
  flags.profile = "t";
  ExpectError(Load(fs, flags), {ProfilePath("t").c_str(), ":1: extends", "unknown profile"});
}

TEST(Loader, ExtendsRelativeFilePathIsAnError) {
  ExpectError(LoadText("extends = \"base.toml\"\n"),
              {":1: extends", "relative profile path 'base.toml'"});
  ExpectError(LoadText("extends = \"../x/base.toml\"\n"), {"relative profile path"});
}

TEST(Loader, ReadErrorsOtherThanNotFoundFailClosed) {
  MemFs fs;
  fs.AddUnreadable(ProfilePath("default"));
  Result<Policy> r = Load(fs);
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(), HasSubstr(ProfilePath("default")));

  MemFs ws;
  ws.AddUnreadable(std::string(testing::kWorkspace) + "/.ward.toml");
  Result<Policy> w = Load(ws);
  ASSERT_FALSE(w.ok());
  EXPECT_THAT(w.status().message(), HasSubstr(".ward.toml"));
}

TEST(Loader, InvalidContextIsAnError) {
  MemFs fs;
  Context ctx = testing::TestContext();
  ctx.home = "relative/home";
  ExpectError(Load(fs, RunFlags(), ctx), {"HOME must be an absolute path"});
  ctx = testing::TestContext();
  ctx.workspace = "";
  ExpectError(Load(fs, RunFlags(), ctx), {"workspace must be an absolute path"});
}

// ---------------------------------------------------------------------------------------------
// Validation errors: file, line and key in every message

TEST(Validation, InvalidToml) {
  Result<Policy> r = LoadText("[filesystem]\nread = [\"/usr\"\n");
  ExpectError(r, {ProfilePath("t").c_str(), "invalid TOML"});
  EXPECT_THAT(ErrorOf(r), ::testing::ContainsRegex("t\\.toml:[23]: invalid TOML"));
  ExpectError(LoadText("a = 1\na = 2\n"), {"t.toml:2: invalid TOML"});
  ExpectError(LoadText(std::string("x = \"\xff\xfe\"\n")), {"invalid TOML"});
}

TEST(Validation, UnknownKeysWithSuggestions) {
  ExpectError(LoadText("\n[filesytem]\n"),
              {"t.toml:2: filesytem: unknown key", "did you mean 'filesystem'"});
  ExpectError(LoadText("[filesystem]\n\nraed = []\n"),
              {"t.toml:3: filesystem.raed: unknown key", "did you mean 'read'",
               "known keys of [filesystem]"});
  ExpectError(LoadText("[limits]\nmemroy = \"1G\"\n"),
              {"t.toml:2: limits.memroy", "did you mean 'memory'"});
  ExpectError(LoadText("[credentials.x]\nfrom = \"env:X\"\nhost = [\"a\"]\n"),
              {"t.toml:3: credentials.x.host", "did you mean 'hosts'"});
  // Far from every key: no suggestion, but the list of known keys.
  Result<Policy> r = LoadText("zzzzzzzzzzzz = 1\n");
  ExpectError(r, {"t.toml:1: zzzzzzzzzzzz: unknown key", "known keys: description"});
  EXPECT_THAT(ErrorOf(r), ::testing::Not(HasSubstr("did you mean")));
}

TEST(Validation, WrongTypes) {
  ExpectError(LoadText("description = 3\n"),
              {"t.toml:1: description", "expected a string", "got an integer"});
  ExpectError(LoadText("[filesystem]\nread = \"/usr\"\n"),
              {"t.toml:2: filesystem.read", "expected an array of strings", "got a string"});
  ExpectError(LoadText("[filesystem]\nread = [\n  \"/usr\",\n  7,\n]\n"),
              {"t.toml:4: filesystem.read", "expected a string, got an integer"});
  ExpectError(LoadText("filesystem = 1\n"), {"t.toml:1: filesystem", "expected a table"});
  ExpectError(LoadText("[filesystem]\nnested_repo_depth = \"3\"\n"),
              {"t.toml:2: filesystem.nested_repo_depth", "expected an integer"});
  ExpectError(LoadText("[limits]\npids = \"10\"\n"), {"t.toml:2: limits.pids", "integer"});
  ExpectError(LoadText("[limits]\ncpu = true\n"), {"t.toml:2: limits.cpu", "got a boolean"});
  ExpectError(LoadText("[limits]\nmemory = 1.5\n"),
              {"t.toml:2: limits.memory", "got a floating-point"});
  ExpectError(LoadText("[approvals]\nenabled = \"yes\"\n"),
              {"t.toml:2: approvals.enabled", "expected a boolean"});
  ExpectError(LoadText("[env]\nset = [\"A=1\"]\n"), {"t.toml:2: env.set", "expected a table"});
  ExpectError(LoadText("[env]\nset = { A = 1 }\n"), {"t.toml:2: env.set.A", "expected a string"});
  ExpectError(LoadText("extends = 5\n"), {"t.toml:1: extends", "profile name"});
  ExpectError(LoadText("[credentials]\nx = \"env:X\"\n"),
              {"t.toml:2: credentials.x", "expected a table"});
  ExpectError(LoadText("[workspace]\naccess = 2020-01-01\n"), {"got a date"});
}

TEST(Validation, EmptyStrings) {
  ExpectError(LoadText("[filesystem]\nread = [\"\"]\n"), {"t.toml:2: filesystem.read", "empty"});
  ExpectError(LoadText("[network]\nallow = [\"\"]\n"), {"t.toml:2: network.allow", "empty"});
  ExpectError(LoadText("[env]\npass = [\"\"]\n"), {"t.toml:2: env.pass", "empty"});
  ExpectError(LoadText("extends = \"\"\n"), {"t.toml:1: extends", "empty"});
  ExpectError(LoadText("[limits]\nmemory = \"\"\n"), {"t.toml:2: limits.memory", "empty"});
}

TEST(Validation, RelativeAndMalformedPaths) {
  ExpectError(
      LoadText("[filesystem]\nread = [\"/usr\", \"usr/lib\"]\n"),
      {"t.toml:2: filesystem.read", "relative path 'usr/lib'", "absolute or start with ~/"});
  ExpectError(LoadText("[filesystem]\nwrite = [\"./x\"]\n"),
              {"t.toml:2: filesystem.write", "relative path"});
  ExpectError(LoadText("[filesystem]\ndeny = [\"secrets\"]\n"),
              {"t.toml:2: filesystem.deny", "relative path"});
  ExpectError(LoadText("[filesystem]\nread = [\"~root/.ssh\"]\n"), {"~user is not supported"});
  ExpectError(LoadText("[filesystem]\nread = [\"/usr/*\"]\n"),
              {"filesystem.read", "glob characters are only allowed in deny rules"});
  ExpectError(LoadText("[filesystem]\nread = [\"/\"]\n"), {"filesystem.read", "whole root"});
  ExpectError(LoadText("[filesystem]\nwrite = [\"/usr/..\"]\n"), {"whole root"});
  ExpectError(LoadText("[filesystem]\nread = [\"/proc/1\"]\n"),
              {"t.toml:2: filesystem.read", "/proc and /dev are the sandbox's own"});
  ExpectError(LoadText("[filesystem]\nwrite = [\"/dev/kvm\"]\n"), {"/proc and /dev"});
  ExpectError(LoadText("[filesystem]\ndeny = [\"/etc/*/key\"]\n"),
              {"filesystem.deny", "only allowed in the last path component"});
  ExpectError(LoadText("[filesystem]\ndeny = [\"/\"]\n"), {"filesystem.deny", "root"});
  ExpectError(LoadText("[filesystem]\nread = [\"/a\\u0000b\"]\n"), {"NUL"});
  ExpectError(LoadText("[credentials.x]\nfrom = \"file:token\"\nhosts = [\"a\"]\n"),
              {"t.toml:2: credentials.x.from", "relative path"});
}

TEST(Validation, ProtectedPathsMustBeRelativeAndStayInside) {
  ExpectError(LoadText("[filesystem]\nprotected = [\"/etc\"]\n"),
              {"t.toml:2: filesystem.protected", "relative to every writable root"});
  ExpectError(LoadText("[filesystem]\nprotected = [\"~/.bashrc\"]\n"),
              {"filesystem.protected", "not absolute"});
  ExpectError(LoadText("[filesystem]\nprotected = [\"../x\"]\n"), {"'..' is not allowed"});
  ExpectError(LoadText("[filesystem]\nprotected = [\"a/../../x\"]\n"), {"'..' is not allowed"});
  ExpectError(LoadText("[filesystem]\nprotected = [\".\"]\n"), {"names no path"});
  ExpectError(LoadText("[filesystem]\nprotected = [\".git/*\"]\n"), {"globs are not allowed"});
  ExpectError(LoadText("[filesystem]\nnested_repo_depth = -1\n"),
              {"filesystem.nested_repo_depth", "between 0 and"});
  ExpectError(LoadText("[filesystem]\nnested_repo_depth = 1000\n"), {"between 0 and"});
}

TEST(Validation, WorkspaceAccessValues) {
  ExpectError(LoadText("[workspace]\naccess = \"rw\"\n"),
              {"t.toml:2: workspace.access", "\"write\", \"read\" or \"none\""});
  ExpectError(LoadText("[workspace]\naccess = \"wirte\"\n"), {"did you mean 'write'"});
  Result<Policy> none = LoadText("[workspace]\naccess = \"none\"\n");
  ASSERT_TRUE(none.ok()) << ErrorOf(none);
  EXPECT_FALSE(none->workspace_access.has_value());
}

TEST(Validation, BadSizesDurationsAndLimits) {
  ExpectError(LoadText("[limits]\nmemory = \"8X\"\n"), {"t.toml:2: limits.memory", "invalid size"});
  ExpectError(LoadText("[limits]\nmemory = \"-1G\"\n"), {"limits.memory", "negative"});
  ExpectError(LoadText("[limits]\nmemory = -5\n"), {"limits.memory", "positive"});
  ExpectError(LoadText("[limits]\nmemory = \"0\"\n"), {"limits.memory", "larger than zero"});
  ExpectError(LoadText("[limits]\ntmp_size = \"99999999999T\"\n"),
              {"limits.tmp_size", "too large"});
  ExpectError(LoadText("[limits]\ntimeout = \"soon\"\n"),
              {"t.toml:2: limits.timeout", "invalid duration"});
  ExpectError(LoadText("[limits]\ntimeout = 0\n"), {"limits.timeout", "positive"});
  ExpectError(LoadText("[limits]\npids = 0\n"), {"limits.pids", "positive"});
  ExpectError(LoadText("[limits]\ncpu = 0.0\n"), {"limits.cpu", "number of cores"});
  ExpectError(LoadText("[limits]\ncpu = nan\n"), {"limits.cpu", "number of cores"});
  ExpectError(LoadText("[limits]\ncpu = inf\n"), {"limits.cpu"});
  ExpectError(LoadText("[approvals]\ntimeout = \"1y\"\n"), {"approvals.timeout"});
}

TEST(Validation, UnknownLayers) {
  ExpectError(LoadText("[sandbox]\nallow_degraded = [\"landlok\"]\n"),
              {"t.toml:2: sandbox.allow_degraded", "unknown layer 'landlok'",
               "did you mean 'landlock'", "landlock, seccomp, limits"});
  ExpectError(LoadText("[sandbox]\nallow_degraded = [\"namespaces\"]\n"), {"unknown layer"});
}

TEST(Validation, EnvironmentNames) {
  ExpectError(LoadText("[env]\npass = [\"*\"]\n"),
              {"t.toml:2: env.pass", "whole environment is not supported"});
  ExpectError(LoadText("[env]\npass = [\"A-B\"]\n"), {"env.pass", "invalid variable name"});
  ExpectError(LoadText("[env]\npass = [\"1A\"]\n"), {"invalid variable name"});
  ExpectError(LoadText("[env]\npass = [\"A*B\"]\n"), {"invalid variable name"});
  ExpectError(LoadText("[env]\nset = { \"A B\" = \"x\" }\n"), {"env.set.A B", "invalid variable"});
  ExpectError(LoadText("[env]\nset = { HOME = \"/tmp\" }\n"),
              {"t.toml:2: env.set.HOME", "HOME cannot be set"});
}

TEST(Validation, HostPatterns) {
  ExpectError(LoadText("[network]\nallow = [\"https://example.com\"]\n"),
              {"t.toml:2: network.allow", "is a URL"});
  ExpectError(LoadText("[network]\nallow = [\"exa mple.com\"]\n"), {"whitespace"});
  ExpectError(LoadText("[network]\ndeny = [\"a\\nb\"]\n"), {"network.deny", "control"});
}

TEST(Validation, Credentials) {
  ExpectError(LoadText("\n[credentials.x]\nhosts = [\"a.com\"]\n"),
              {"t.toml:2: credentials.x", "has no 'from'"});
  ExpectError(LoadText("\n[credentials.x]\nfrom = \"env:X\"\n"),
              {"t.toml:2: credentials.x", "has no hosts"});
  ExpectError(LoadText("[credentials.x]\nfrom = \"env:X\"\nhosts = []\n"), {"has no hosts"});
  ExpectError(LoadText("[credentials.x]\nfrom = \"vault:X\"\nhosts = [\"a\"]\n"),
              {"t.toml:2: credentials.x.from", "env:NAME"});
  ExpectError(LoadText("[credentials.x]\nfrom = \"env:\"\nhosts = [\"a\"]\n"),
              {"invalid variable name"});
  ExpectError(LoadText("[credentials.x]\nfrom = \"command:  \"\nhosts = [\"a\"]\n"),
              {"empty command"});
  ExpectError(LoadText("[credentials.x]\nfrom = \"env:X\"\nhosts = [\"a\"]\n"
                       "inject = { header = \"Authorization\", value = \"Bearer token\" }\n"),
              {"t.toml:4: credentials.x.inject.value", "must contain {secret}"});
  ExpectError(LoadText("[credentials.x]\nfrom = \"env:X\"\nhosts = [\"a\"]\n"
                       "inject = { header = \"Authorization\" }\n"),
              {"credentials.x.inject", "needs value"});
  ExpectError(LoadText("[credentials.x]\nfrom = \"env:X\"\nhosts = [\"a\"]\n"
                       "inject = { query = \"k\", value = \"nope\" }\n"),
              {"must contain {secret}"});
  ExpectError(LoadText("[credentials.x]\nfrom = \"env:X\"\nhosts = [\"a\"]\n"
                       "inject = { header = \"A\", basic = \"u\", value = \"{secret}\" }\n"),
              {"t.toml:4: credentials.x.inject", "exactly one of"});
  ExpectError(LoadText("[credentials.x]\nfrom = \"env:X\"\nhosts = [\"a\"]\n"
                       "inject = { header = \"Bad Header\", value = \"{secret}\" }\n"),
              {"invalid header name"});
  ExpectError(LoadText("[credentials.x]\nfrom = \"env:X\"\nhosts = [\"a\"]\n"
                       "inject = { header = \"A\", value = \"{secret}\\r\\nX: y\" }\n"),
              {"control character"});
  ExpectError(LoadText("[credentials.x]\nfrom = \"env:X\"\nhosts = [\"a\"]\n"
                       "inject = { basic = \"a:b\" }\n"),
              {"cannot contain ':'"});
  ExpectError(LoadText("[credentials.x]\nfrom = \"env:X\"\nhosts = [\"a\"]\n"
                       "inject = { bearer = true }\n"),
              {"credentials.x.inject.bearer", "unknown key"});
  ExpectError(LoadText("[credentials.x]\nfrom = \"env:X\"\nhosts = [\"a\"]\n"
                       "route_env = { URL = \"{secret}\" }\n"),
              {"t.toml:4: credentials.x.route_env.URL", "must not contain {secret}"});
  ExpectError(LoadText("[credentials.x]\nfrom = \"env:X\"\nhosts = [\"a\"]\n"
                       "route_env = { URL = \"{route_url}\" }\n"),
              {"credentials.x", "has no route"});
  ExpectError(LoadText("[credentials.x]\nfrom = \"env:X\"\nhosts = [\"a\"]\nroute = \"a/b\"\n"),
              {"credentials.x.route", "invalid route name"});
  ExpectError(LoadText("[credentials.\"a b\"]\nfrom = \"env:X\"\nhosts = [\"a\"]\n"),
              {"invalid credential name"});
}

TEST(Validation, EnabledCredentialsConflicts) {
  const char* two = R"(
[credentials.a]
from = "env:A_KEY"
hosts = ["a.com"]
route = "r"
enabled = true
[credentials.b]
from = "env:B_KEY"
hosts = ["b.com"]
route = "r"
enabled = true
)";
  ExpectError(LoadText(two), {"route 'r' is also used by credential"});
  const char* same_var = R"(
[credentials.a]
from = "env:A_KEY"
hosts = ["a.com"]
route = "a"
route_env = { BASE_URL = "{route_url}" }
enabled = true
[credentials.b]
from = "env:B_KEY"
hosts = ["b.com"]
route = "b"
route_env = { BASE_URL = "{route_url}" }
enabled = true
)";
  ExpectError(LoadText(same_var), {"'BASE_URL' is also set by credential"});
  // Passing the secret's variable while the credential is enabled would leak the real value.
  ExpectError(LoadText(R"([env]
pass = ["PATH", "A_KEY"]
[credentials.a]
from = "env:A_KEY"
hosts = ["a.com"]
enabled = true
)"),
              {"t.toml:2: env.pass", "'A_KEY' belongs to credential 'a'"});
  // A disabled credential does not reserve its variables.
  Result<Policy> off = LoadText(R"([env]
pass = ["A_KEY"]
[credentials.a]
from = "env:A_KEY"
hosts = ["a.com"]
)");
  EXPECT_TRUE(off.ok()) << ErrorOf(off);
}

TEST(Validation, HostileInputNeverCrashes) {
  // Deep nesting, huge arrays and odd bytes: each is an error or a policy, never a crash.
  std::string deep = "x = " + std::string(5000, '[') + std::string(5000, ']') + "\n";
  EXPECT_FALSE(LoadText(deep).ok());
  std::string many = "[filesystem]\nread = [";
  for (int i = 0; i < 20000; ++i) many += "\"/p" + std::to_string(i) + "\",";
  many += "]\n";
  Result<Policy> r = LoadText(many);
  ASSERT_TRUE(r.ok()) << ErrorOf(r);
  EXPECT_EQ(r->paths.size(), 20000u);
  EXPECT_FALSE(LoadText(std::string("\0\0\0", 3)).ok());
  EXPECT_FALSE(LoadText("[[filesystem]]\nread = []\n").ok());
  EXPECT_FALSE(LoadText("[filesystem.read]\n").ok());
  std::string long_key(100000, 'k');
  Result<Policy> lk = LoadText(long_key + " = 1\n");
  ASSERT_FALSE(lk.ok());
  EXPECT_LT(ErrorOf(lk).size(), 1000u);  // keys are shortened in messages
  Result<Policy> ctl = LoadText("\"a\\nb\\u001b[31m\" = 1\n");
  ASSERT_FALSE(ctl.ok());
  EXPECT_EQ(ErrorOf(ctl).find('\n'), std::string::npos);
  EXPECT_EQ(ErrorOf(ctl).find('\x1b'), std::string::npos);
}

// ---------------------------------------------------------------------------------------------
// Command-line flags

TEST(Flags, PathsEnvNetworkAndLayers) {
  MemFs fs;
  RunFlags f;
  f.read = {"data", "/srv/ref", "~/notes"};
  f.write = {"../out"};
  f.deny = {"secret.txt", "/etc/*.key"};
  f.env = {"FOO", "BAR=baz=qux", "EMPTY=", "XDG_*"};
  f.allow_net = {"example.com"};
  f.deny_net = {"bad.example.com"};
  f.allow_degraded = {"landlock,seccomp", "limits"};
  f.approvals = true;
  f.no_audit = true;
  Result<Policy> r = Load(fs, f);
  ASSERT_TRUE(r.ok()) << ErrorOf(r);
  const PathRule* data = FindPath(*r, "/home/u/proj/data");
  ASSERT_NE(data, nullptr);
  EXPECT_FALSE(data->optional);  // CLI paths are required
  EXPECT_EQ(data->origin.source, "command line");
  EXPECT_EQ(data->origin.key, "--read");
  EXPECT_NE(FindPath(*r, "/home/u/notes"), nullptr);
  const PathRule* out = FindPath(*r, "/home/u/out");
  ASSERT_NE(out, nullptr);
  EXPECT_EQ(out->access, Access::kWrite);
  EXPECT_TRUE(HasDeny(*r, "/home/u/proj/secret.txt"));
  EXPECT_TRUE(HasDeny(*r, "/etc/*.key"));
  const EnvRule& bar =
      *std::find_if(r->env.begin(), r->env.end(), [](const EnvRule& e) { return e.name == "BAR"; });
  EXPECT_EQ(bar.value, "baz=qux");
  EXPECT_EQ(bar.origin.key, "--env");
  EXPECT_EQ(r->network.allow.back().pattern, "example.com");
  EXPECT_EQ(r->network.deny.back().pattern, "bad.example.com");
  EXPECT_EQ(r->allow_degraded,
            (std::set<Layer>{Layer::kLandlock, Layer::kSeccomp, Layer::kLimits}));
  EXPECT_EQ(r->degraded_origins.at(Layer::kSeccomp).key, "--allow-degraded");
  EXPECT_TRUE(r->approvals.enabled);
  EXPECT_FALSE(r->audit);
}

// --cpu takes a plain decimal number, all of it or nothing.
TEST(Flags, CpuTakesOnlyAPlainDecimalNumber) {
  for (const auto& [text, cores] : std::vector<std::pair<std::string, double>>{
           {"2", 2}, {"1.5", 1.5}, {".5", 0.5}, {"2.", 2}, {"1e1", 10}, {"25E-1", 2.5}}) {
    MemFs fs;
    RunFlags f;
    f.cpu = text;
    Result<Policy> r = Load(fs, f);
    ASSERT_TRUE(r.ok()) << text << ": " << ErrorOf(r);
    EXPECT_DOUBLE_EQ(*r->limits.cpu_cores, cores) << text;
  }
  for (const char* bad : {"", ".", "1.5x", " 2", "2 ", "+2", "0x10", "1e", "1e+", "inf", "1,5",
                          "1.2.3", "0", "0.0"}) {
    MemFs fs;
    RunFlags f;
    f.cpu = bad;
    Result<Policy> r = Load(fs, f);
    EXPECT_FALSE(r.ok()) << "'" << bad << "' was accepted";
    if (!r.ok()) {
      EXPECT_NE(ErrorOf(r).find("--cpu"), std::string::npos) << ErrorOf(r);
    }
  }
}

TEST(Flags, LimitsOverrideTheProfile) {
  MemFs fs;
  fs.AddProfile("t", "[limits]\nmemory = \"1G\"\npids = 5\n");
  RunFlags f;
  f.profile = "t";
  f.memory = "16G";
  f.pids = "2048";
  f.cpu = "1.5";
  f.timeout = "1h30m";
  f.tmp_size = "512M";
  f.file_size = "1G";
  Result<Policy> r = Load(fs, f);
  ASSERT_TRUE(r.ok()) << ErrorOf(r);
  EXPECT_EQ(r->limits.memory_bytes, 16ull << 30);
  EXPECT_EQ(r->limits.origins.at("memory").key, "--memory");
  EXPECT_EQ(r->limits.pids, 2048u);
  EXPECT_DOUBLE_EQ(*r->limits.cpu_cores, 1.5);
  EXPECT_EQ(r->limits.timeout_ms, 5400000u);
  EXPECT_EQ(r->limits.tmp_size_bytes, 512ull << 20);
  EXPECT_EQ(r->limits.file_size_bytes, 1ull << 30);
}

TEST(Flags, Errors) {
  MemFs fs;
  auto with = [&](auto set) {
    RunFlags f;
    set(f);
    return Load(fs, f);
  };
  ExpectError(with([](RunFlags& f) { f.read = {""}; }), {"command line: --read", "empty path"});
  ExpectError(with([](RunFlags& f) { f.write = {"/"}; }), {"--write", "whole root"});
  ExpectError(with([](RunFlags& f) { f.read = {"/a/*"}; }), {"--read", "glob"});
  ExpectError(with([](RunFlags& f) { f.deny = {"/a/*/b"}; }), {"--deny", "last path component"});
  ExpectError(with([](RunFlags& f) { f.env = {"=x"}; }), {"--env", "invalid variable name"});
  ExpectError(with([](RunFlags& f) { f.env = {""}; }), {"--env", "empty variable name"});
  ExpectError(with([](RunFlags& f) { f.env = {"*"}; }), {"--env", "whole environment"});
  ExpectError(with([](RunFlags& f) { f.env = {"HOME=/x"}; }), {"--env", "HOME cannot be set"});
  ExpectError(with([](RunFlags& f) { f.allow_net = {""}; }), {"--allow-net", "empty"});
  ExpectError(with([](RunFlags& f) { f.deny_net = {"http://x"}; }), {"--deny-net", "URL"});
  ExpectError(with([](RunFlags& f) { f.allow_degraded = {"landlock,"}; }),
              {"--allow-degraded", "unknown layer ''"});
  ExpectError(with([](RunFlags& f) { f.allow_degraded = {"all"}; }), {"unknown layer 'all'"});
  ExpectError(with([](RunFlags& f) { f.memory = "lots"; }), {"--memory", "invalid size"});
  ExpectError(with([](RunFlags& f) { f.memory = "0"; }), {"--memory", "larger than zero"});
  ExpectError(with([](RunFlags& f) { f.pids = "-1"; }), {"--pids"});
  ExpectError(with([](RunFlags& f) { f.pids = "12abc"; }), {"--pids"});
  ExpectError(with([](RunFlags& f) { f.pids = "0"; }), {"--pids"});
  ExpectError(with([](RunFlags& f) { f.cpu = "nan"; }), {"--cpu"});
  ExpectError(with([](RunFlags& f) { f.cpu = "-2"; }), {"--cpu"});
  ExpectError(with([](RunFlags& f) { f.cpu = "99999"; }), {"--cpu"});
  ExpectError(with([](RunFlags& f) { f.timeout = "0s"; }), {"--timeout", "longer than zero"});
  ExpectError(with([](RunFlags& f) { f.timeout = "forever"; }), {"--timeout", "invalid duration"});
  ExpectError(with([](RunFlags& f) { f.tmp_size = "1.5"; }), {"--tmp-size", "fraction"});
  ExpectError(with([](RunFlags& f) { f.profile = ""; }), {"--profile", "empty"});
  ExpectError(with([](RunFlags& f) { f.profile = "bad name"; }),
              {"--profile", "invalid profile name"});
}

// limits.proxy_connections: the per-sandbox cap on connections to the egress proxy.
TEST(Limits, ProxyConnectionsKeyFlagAndDefault) {
  Result<Policy> r = LoadText("description = \"minimal\"\n");
  ASSERT_TRUE(r.ok()) << ErrorOf(r);
  EXPECT_FALSE(r->limits.proxy_connections.has_value());  // the proxy's default then applies
  EXPECT_EQ(kDefaultProxyConnections, 128u);

  r = LoadText("[limits]\nproxy_connections = 32\n");
  ASSERT_TRUE(r.ok()) << ErrorOf(r);
  EXPECT_EQ(r->limits.proxy_connections, 32u);
  EXPECT_EQ(r->limits.origins.at("proxy_connections").key, "limits.proxy_connections");
  EXPECT_EQ(r->limits.origins.at("proxy_connections").line, 2);

  ExpectError(LoadText("[limits]\nproxy_connections = 0\n"),
              {"t.toml:2: limits.proxy_connections", "between 1 and 16384"});
  ExpectError(LoadText("[limits]\nproxy_connections = -5\n"), {"limits.proxy_connections"});
  ExpectError(LoadText("[limits]\nproxy_connections = 100000\n"), {"between 1 and 16384"});
  ExpectError(LoadText("[limits]\nproxy_connections = \"64\"\n"),
              {"limits.proxy_connections", "integer"});
  ExpectError(LoadText("[limits]\nproxy_conections = 64\n"),
              {"limits.proxy_conections", "did you mean 'proxy_connections'"});

  MemFs fs;
  fs.AddProfile("t", "[limits]\nproxy_connections = 16\n");
  RunFlags f;
  f.profile = "t";
  f.proxy_connections = "512";
  r = Load(fs, f);
  ASSERT_TRUE(r.ok()) << ErrorOf(r);
  EXPECT_EQ(r->limits.proxy_connections, 512u);
  EXPECT_EQ(r->limits.origins.at("proxy_connections").key, "--proxy-connections");
  for (const char* bad : {"0", "-1", "12abc", "", "99999"}) {
    f.proxy_connections = bad;
    ExpectError(Load(fs, f), {"--proxy-connections", "between 1 and 16384"});
  }
}

TEST(Flags, CredentialMustBeDefinedByTheProfile) {
  MemFs fs;
  RunFlags f;
  f.profile = "claude-code";
  f.credentials = {"antropic"};
  ExpectError(Load(fs, f), {"command line: --credential", "no credential named 'antropic'",
                            "did you mean 'anthropic'", "defined: anthropic, claude-oauth"});
  f.profile = "default";
  f.credentials = {"anthropic"};
  ExpectError(Load(fs, f), {"no credential named 'anthropic'", "defined: none"});
  f.profile = "claude-code";
  f.credentials = {"anthropic"};
  Result<Policy> r = Load(fs, f);
  ASSERT_TRUE(r.ok()) << ErrorOf(r);
  EXPECT_TRUE(r->credentials.at("anthropic").enabled);
  EXPECT_FALSE(r->credentials.at("claude-oauth").enabled);
  // Both would point ANTHROPIC_BASE_URL at different routes.
  f.credentials = {"anthropic", "claude-oauth"};
  ExpectError(Load(fs, f), {"'ANTHROPIC_BASE_URL' is also set by credential"});
  // Enabling a credential while passing its variable by name would leak the real key.
  f.credentials = {"anthropic"};
  f.env = {"ANTHROPIC_API_KEY"};
  ExpectError(Load(fs, f), {"--env", "belongs to credential 'anthropic'"});
}

TEST(Flags, CredentialEnvShortForm) {
  MemFs fs;
  RunFlags f;
  f.credential_env = {"GITHUB_TOKEN=api.github.com,uploads.github.com"};
  Result<Policy> r = Load(fs, f);
  ASSERT_TRUE(r.ok()) << ErrorOf(r);
  const Credential& c = r->credentials.at("GITHUB_TOKEN");
  EXPECT_TRUE(c.enabled);
  EXPECT_EQ(c.from.kind, CredentialSource::Kind::kEnv);
  EXPECT_EQ(c.from.value, "GITHUB_TOKEN");
  EXPECT_EQ(c.env, "GITHUB_TOKEN");
  EXPECT_EQ(c.hosts, (std::vector<std::string>{"api.github.com", "uploads.github.com"}));
  EXPECT_EQ(c.inject.template_, "Bearer {secret}");
  EXPECT_EQ(c.origin.key, "--credential-env");

  for (const char* bad : {"GITHUB_TOKEN", "=api.github.com", "GITHUB_TOKEN=", "GITHUB_TOKEN=a,,b",
                          "BAD-NAME=a", "T=https://a"}) {
    f.credential_env = {bad};
    EXPECT_FALSE(Load(fs, f).ok()) << bad;
  }
  f.profile = "codex";
  f.credential_env = {"openai=api.openai.com"};
  ExpectError(Load(fs, f), {"already defined", "--credential openai"});
}

TEST(Flags, ExplicitNameRuleForTheSameVariableFromTheCommandLine) {
  MemFs fs;
  RunFlags f;
  f.credential_env = {"TOKEN=a.example.com"};
  f.env = {"TOKEN"};
  ExpectError(Load(fs, f), {"--env", "belongs to credential 'TOKEN'"});
}

TEST(Loader, NetworkTransparentIsOnUnlessAProfileTurnsItOff) {
  Result<Policy> r = LoadText("[network]\nallow = [\"a.test\"]\n");
  ASSERT_TRUE(r.ok()) << ErrorOf(r);
  EXPECT_TRUE(r->network.transparent);
  r = LoadText("[network]\nallow = [\"a.test\"]\ntransparent = false\n");
  ASSERT_TRUE(r.ok()) << ErrorOf(r);
  EXPECT_FALSE(r->network.transparent);
  EXPECT_EQ(r->network.transparent_origin.line, 3);
  EXPECT_EQ(r->network.transparent_origin.key, "network.transparent");
  r = LoadText("[network]\ntransparent = \"no\"\n");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("network.transparent"), std::string::npos)
      << r.status().message();
  EXPECT_NE(r.status().message().find("boolean"), std::string::npos) << r.status().message();
}

TEST(Loader, NetworkRulesAreReadInOrderAndTheirHostsAllowed) {
  RunFlags flags;
  flags.allow_net = {"GET,head registry.test/pkgs/*", "plain.test"};
  Result<Policy> r = LoadText(R"([network]
allow = ["api.test"]
[[network.rules]]
host = "api.test"
methods = ["GET", "HEAD"]
paths = ["/repos/acme/*", "/user"]
action = "allow"
[[network.rules]]
host = "push.test"
paths = ["*/git-receive-pack"]
action = "deny"
)",
                              flags);
  ASSERT_TRUE(r.ok()) << ErrorOf(r);
  const auto& rules = r->network.rules;
  ASSERT_EQ(rules.size(), 3u);
  // The command line's first: it is what this run asked for.
  EXPECT_EQ(rules[0].host, "registry.test");
  EXPECT_EQ(rules[0].methods, (std::vector<std::string>{"GET", "HEAD"}));
  EXPECT_EQ(rules[0].paths, std::vector<std::string>{"/pkgs/*"});
  EXPECT_EQ(rules[0].origin.key, "--allow-net");
  EXPECT_EQ(rules[1].host, "api.test");
  EXPECT_EQ(rules[1].paths.size(), 2u);
  EXPECT_EQ(rules[1].origin.line, 3);
  EXPECT_EQ(rules[2].action, RequestRule::Action::kDeny);
  // Allow rules' hosts are reachable by name; a deny rule's host is not made so.
  std::vector<std::string> allow;
  for (const auto& a : r->network.allow) allow.push_back(a.pattern);
  EXPECT_NE(std::find(allow.begin(), allow.end(), "registry.test"), allow.end());
  EXPECT_NE(std::find(allow.begin(), allow.end(), "plain.test"), allow.end());
  EXPECT_EQ(std::find(allow.begin(), allow.end(), "push.test"), allow.end());
}

TEST(Loader, BadNetworkRulesNameTheirLine) {
  for (const auto& [text, want] : std::vector<std::pair<std::string, std::string>>{
           {"[[network.rules]]\nmethods = [\"GET\"]\n", "needs a host"},
           {"[[network.rules]]\nhost = \"a.test\"\naction = \"maybe\"\n", "not an action"},
           {"[[network.rules]]\nhost = \"a.test\"\nmethods = [\"G T\"]\n", "not an HTTP method"},
           {"[[network.rules]]\nhost = \"a.test\"\npaths = [\"repos\"]\n", "must start with /"},
           {"[[network.rules]]\nhost = \"10.0.0.0/8\"\n", "names one host"},
           {"[[network.rules]]\nhost = \"*\"\n", "--allow-net-anything"},
           {"[[network.rules]]\nhost = \"a.test\"\nverb = \"GET\"\n", "unknown key"},
           {"[network]\nrules = \"GET a.test\"\n", "array of tables"}}) {
    Result<Policy> r = LoadText(text);
    ASSERT_FALSE(r.ok()) << text;
    EXPECT_NE(r.status().message().find(want), std::string::npos) << r.status().message();
    EXPECT_NE(r.status().message().find("network.rules"), std::string::npos)
        << r.status().message();
  }
  RunFlags flags;
  flags.allow_net = {"GET "};
  EXPECT_FALSE(LoadText("", flags).ok());
}

}  // namespace
}  // namespace ward::policy
