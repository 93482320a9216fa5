#include "api/sandbox_spec.h"

#include <fcntl.h>

#include <algorithm>
#include <cctype>

#include "api/params.h"
#include "common/unique_fd.h"
#include "enforce/beneath.h"
#include "policy/decide.h"
#include "policy/paths.h"

namespace ward::api {

namespace {

constexpr const char* kLimitKeys[] = {"memory", "pids", "cpu", "timeout", "tmp_size", "file_size"};

std::optional<std::string>* LimitField(policy::RunFlags& f, const std::string& key) {
  if (key == "memory") return &f.memory;
  if (key == "pids") return &f.pids;
  if (key == "cpu") return &f.cpu;
  if (key == "timeout") return &f.timeout;
  if (key == "tmp_size") return &f.tmp_size;
  if (key == "file_size") return &f.file_size;
  return nullptr;
}

const std::optional<std::string>* LimitField(const policy::RunFlags& f, const std::string& key) {
  return LimitField(const_cast<policy::RunFlags&>(f), key);
}

// Relative paths are relative to the workspace; "~" forms are left to the loader.
std::string AnchorPath(const std::string& path, const std::string& workspace) {
  if (path.empty() || path[0] == '/' || path == "~" || path.rfind("~/", 0) == 0) return path;
  return policy::JoinPath(workspace, path);
}

// Absolute and normalised, with "~" expanded to `home`; nullopt for "~user".
std::optional<std::string> AbsolutePath(const std::string& path, const std::string& workspace,
                                        const std::string& home) {
  if (path.empty()) return std::nullopt;
  std::string p;
  if (path == "~") {
    p = home;
  } else if (path.rfind("~/", 0) == 0) {
    p = home + path.substr(1);
  } else if (path[0] == '~') {
    return std::nullopt;
  } else if (path[0] == '/') {
    p = path;
  } else {
    p = policy::JoinPath(workspace, path);
  }
  if (p.empty() || p[0] != '/') return std::nullopt;
  return policy::NormalizePath(p);
}

bool HasDotDot(const std::string& path) {
  std::vector<std::string> comps = policy::PathComponents(path);
  return std::find(comps.begin(), comps.end(), "..") != comps.end();
}

Expected<UniqueFd> OpenWorkspace(const std::string& workspace) {
  UniqueFd fd(open(workspace.c_str(), O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!fd) return FromErrno("workspace " + workspace, errno);
  return fd;
}

// Opens `abs` (absolute, normalised, at or below `workspace`) from the workspace's directory
// `ws_fd`, following no symlink (enforce/beneath.h); an error names `field` and `given`.
Expected<Done> CheckBeneath(const std::string& field, const std::string& given,
                            const std::string& workspace, int ws_fd, const std::string& abs) {
  std::optional<std::string> rel = enforce::RelativeBeneath(workspace, abs);
  if (!rel) return DeniedError(field + ": \"" + given + "\" is outside the workspace");
  Result<UniqueFd> fd = enforce::OpenBeneath(ws_fd, workspace, *rel);
  if (fd.ok()) return Done{};
  const Status& st = fd.status();
  if (st.err() != 0) return FromErrno(field + ": \"" + given + "\": " + st.message(), st.err());
  return DeniedError(field + ": \"" + given + "\": " + st.message());
}

// One `read` or `write` path of an exec's policy, absolute, as `ward run` gets it: in the
// workspace (resolved there later, see NarrowFlags) or, outside it, one of the sandbox's own
// entries (`own`). Lexical.
Expected<std::string> ExecPolicyPath(const std::string& field, const std::string& given,
                                     const SandboxSpec& spec, const std::string& home,
                                     const std::vector<std::string>& own) {
  const std::string& ws = spec.workspace;
  if (HasDotDot(given)) {
    return DeniedError(field + ": \"" + given +
                       "\": \"..\" is not allowed in an exec's paths (name the path inside the "
                       "workspace directly)");
  }
  auto abs = AbsolutePath(given, ws, home);
  if (!abs) return InvalidError(field + ": bad path \"" + given + "\"");
  if (!policy::PathIsWithin(*abs, ws)) {
    for (const std::string& o : own) {
      if (AbsolutePath(o, ws, home) == abs) return *abs;
    }
    return DeniedError(field + ": \"" + given + "\" is outside the workspace " + ws +
                       ": an exec's paths are in the workspace, or one of the sandbox's own "
                       "entries (an exec may only narrow)");
  }
  return *abs;
}

bool ParseLimits(Params& p, policy::RunFlags& flags) {
  auto limits = p.Object("limits");
  if (!limits) return p.ok();
  Params lp(*limits, "limits");
  for (const char* key : kLimitKeys) {
    if (auto v = lp.Scalar(key)) *LimitField(flags, key) = *v;
  }
  if (!lp.Finish()) {
    p.Fail(lp.error().message);
    return false;
  }
  return true;
}

// What an exec's policy is narrowed against: the sandbox's spec and effective policy, and its
// workspace's directory (-1 when no path needs it).
struct NarrowContext {
  const SandboxSpec& spec;
  const policy::Policy& effective;
  int ws_fd;
};

// The exec's `key` paths ("policy.write" or "policy.read"), absolute: each one `allowed` in the
// sandbox already, else refused with "is not `what` in this sandbox". `own`: the sandbox's own
// paths of that kind, which a relative path may name.
Expected<std::vector<std::string>> NarrowPaths(const NarrowContext& c, const char* key,
                                               const std::vector<std::string>& paths,
                                               const std::vector<std::string>& own,
                                               bool (*allowed)(const policy::PathDecision&),
                                               const char* what) {
  std::vector<std::string> out;
  for (const auto& p : paths) {
    auto abs = ExecPolicyPath(key, p, c.spec, c.effective.home, own);
    if (!abs.ok()) return abs.error();
    if (!allowed(policy::DecidePath(c.effective, *abs))) {
      return DeniedError(std::string(key) + ": \"" + p + "\" is not " + what +
                         " in this sandbox (an exec may only narrow)");
    }
    // A sandboxed command of this sandbox could have planted a symlink there, to make
    // `ward run` bind its target.
    if (policy::PathIsWithin(*abs, c.spec.workspace)) {
      WARD_API_TRY(CheckBeneath(key, p, c.spec.workspace, c.ws_fd, *abs));
    }
    out.push_back(*abs);
  }
  return out;
}

bool WritableHostFile(const policy::PathDecision& d) {
  return d.visibility == policy::PathDecision::Visibility::kWrite && !d.is_protected &&
         d.host_file;
}

bool VisibleHostFile(const policy::PathDecision& d) {
  return d.visibility != policy::PathDecision::Visibility::kHidden && d.host_file;
}

// The exec's `write` paths: each writable in the sandbox already.
Expected<std::vector<std::string>> NarrowWrite(const NarrowContext& c,
                                               const std::vector<std::string>& write) {
  return NarrowPaths(c, "policy.write", write, c.spec.flags.write, WritableHostFile, "writable");
}

// The exec's `read` paths: each visible in the sandbox already.
Expected<std::vector<std::string>> NarrowRead(const NarrowContext& c,
                                              const std::vector<std::string>& read) {
  std::vector<std::string> own = c.spec.flags.read;
  own.insert(own.end(), c.spec.flags.write.begin(), c.spec.flags.write.end());
  return NarrowPaths(c, "policy.read", read, own, VisibleHostFile, "visible");
}

// The exec's allow_net: some of the sandbox's allow rules.
Expected<Done> NarrowAllowNet(const policy::Policy& effective,
                              const std::vector<std::string>& allow_net, policy::RunFlags* f) {
  std::vector<std::string> allowed;
  for (const auto& r : effective.network.allow) allowed.push_back(r.pattern);
  for (const auto& h : allow_net) {
    if (std::find(allowed.begin(), allowed.end(), h) == allowed.end()) {
      return DeniedError("policy.allow_net: \"" + h +
                         "\" is not allowed in this sandbox (an exec may only narrow)");
    }
  }
  // The profile's own allow rules cannot be removed by flags; deny the ones not kept.
  f->allow_net.clear();
  for (const auto& h : allowed) {
    if (std::find(allow_net.begin(), allow_net.end(), h) == allow_net.end()) {
      f->deny_net.push_back(h);
    }
  }
  return Done{};
}

// Whether `text`, an exec's value of the limit `k`, is larger than the sandbox's `L`.
Expected<bool> WiderLimit(const policy::Limits& L, const std::string& k, const std::string& text) {
  if (k == "memory" || k == "tmp_size" || k == "file_size") {
    Result<uint64_t> n = policy::ParseSize(text);
    if (!n.ok()) return InvalidError("policy.limits." + k + ": " + n.status().message());
    const auto& cur =
        k == "memory" ? L.memory_bytes : (k == "tmp_size" ? L.tmp_size_bytes : L.file_size_bytes);
    return cur && *n > *cur;
  }
  if (k == "timeout") {
    Result<uint64_t> n = policy::ParseDurationMs(text);
    if (!n.ok()) return InvalidError("policy.limits.timeout: " + n.status().message());
    return L.timeout_ms && *n > *L.timeout_ms;
  }
  if (k == "pids") {
    char* end = nullptr;
    unsigned long long n = std::strtoull(text.c_str(), &end, 10);
    if (text.empty() || *end != '\0' || n == 0) {
      return InvalidError("policy.limits.pids must be a positive integer");
    }
    return L.pids && n > *L.pids;
  }
  if (k == "cpu") {
    char* end = nullptr;
    double n = std::strtod(text.c_str(), &end);
    if (text.empty() || *end != '\0' || !(n > 0)) {
      return InvalidError("policy.limits.cpu must be a positive number");
    }
    return L.cpu_cores && n > *L.cpu_cores;
  }
  return false;
}

// Limits: each at most the sandbox's own.
Expected<Done> NarrowLimits(const policy::Limits& L, const policy::RunFlags& limits_in,
                            policy::RunFlags* f) {
  for (const char* key : kLimitKeys) {
    const auto* v = LimitField(limits_in, key);
    if (!v || !*v) continue;
    const std::string& text = **v;
    WARD_API_ASSIGN_OR_RETURN(bool wider, WiderLimit(L, key, text));
    if (wider) {
      return DeniedError("policy.limits." + std::string(key) +
                         ": larger than the sandbox's (an exec may only narrow)");
    }
    *LimitField(*f, key) = text;
  }
  return Done{};
}

}  // namespace

bool ValidLabelKey(const std::string& key) {
  if (key.empty() || key.size() > 64) return false;
  return std::all_of(key.begin(), key.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '.' || c == '-';
  });
}

bool ValidEnvName(const std::string& name) {
  if (name.empty() || name.size() > 256) return false;
  if (!(std::isalpha(static_cast<unsigned char>(name[0])) || name[0] == '_')) return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
  });
}

Expected<SandboxSpec> ParseSandboxSpec(const nlohmann::json& params) {
  Params p(params);
  SandboxSpec s;
  p.Require("workspace");
  if (auto ws = p.String("workspace", 4096)) s.workspace = *ws;
  if (!p.ok()) return p.error();
  if (s.workspace.empty() || s.workspace[0] != '/') {
    return InvalidError("params.workspace must be an absolute path");
  }
  s.workspace = policy::NormalizePath(s.workspace);
  if (auto v = p.String("profile", 4096)) s.flags.profile = *v;
  if (s.flags.profile.empty()) return InvalidError("params.profile must not be empty");
  for (auto& w : p.StringList("write")) s.flags.write.push_back(AnchorPath(w, s.workspace));
  for (auto& r : p.StringList("read")) s.flags.read.push_back(AnchorPath(r, s.workspace));
  for (auto& d : p.StringList("deny")) s.flags.deny.push_back(AnchorPath(d, s.workspace));
  s.flags.allow_net = p.StringList("allow_net");
  s.flags.deny_net = p.StringList("deny_net");
  s.flags.credentials = p.StringList("credentials");
  s.flags.credential_env = p.StringList("credential_env");
  s.flags.allow_degraded = p.StringList("allow_degraded");
  for (const auto& [name, value] : p.StringMap("env", /*allow_null=*/true)) {
    if (!ValidEnvName(name))
      return InvalidError("params.env: invalid variable name \"" + name + "\"");
    s.flags.env.push_back(value ? name + "=" + *value : name);
  }
  if (auto ask = p.Bool("ask")) {
    if (*ask) s.flags.approvals = true;
  }
  if (auto mode = p.String("workspace_mode", 16)) {
    if (*mode != "direct" && *mode != "overlay" && *mode != "copy") {
      return InvalidError("params.workspace_mode: \"" + *mode +
                          "\" is not one of direct, overlay (review mode), copy");
    }
    s.workspace_mode = *mode;
  }
  ParseLimits(p, s.flags);
  if (auto v = p.Int("ttl_s", 0, int64_t{1} << 40)) s.ttl_s = *v;
  if (auto v = p.Int("idle_s", 0, int64_t{1} << 40)) s.idle_s = *v;
  auto labels = p.StringMap("labels");
  if (!p.Finish()) return p.error();
  if (labels.size() > 32) return InvalidError("params.labels: at most 32 labels");
  for (const auto& [k, v] : labels) {
    if (!ValidLabelKey(k)) return InvalidError("params.labels: invalid key \"" + k + "\"");
    if (k == "sandbox" || k == "exec") {
      return InvalidError("params.labels: \"" + k + "\" is set by the daemon");
    }
    if (v->size() > 256) return InvalidError("params.labels: value of \"" + k + "\" is too long");
    s.labels[k] = *v;
  }
  return s;
}

nlohmann::json SandboxSpecToJson(const SandboxSpec& s) {
  nlohmann::json j = {{"workspace", s.workspace}, {"profile", s.flags.profile}};
  auto list = [&](const char* key, const std::vector<std::string>& v) {
    if (!v.empty()) j[key] = v;
  };
  list("write", s.flags.write);
  list("read", s.flags.read);
  list("deny", s.flags.deny);
  list("allow_net", s.flags.allow_net);
  list("deny_net", s.flags.deny_net);
  list("credentials", s.flags.credentials);
  list("credential_env", s.flags.credential_env);
  list("allow_degraded", s.flags.allow_degraded);
  if (!s.flags.env.empty()) {
    nlohmann::json env = nlohmann::json::object();
    for (const auto& e : s.flags.env) {
      size_t eq = e.find('=');
      if (eq == std::string::npos) {
        env[e] = nullptr;
      } else {
        env[e.substr(0, eq)] = e.substr(eq + 1);
      }
    }
    j["env"] = env;
  }
  if (s.flags.approvals.value_or(false)) j["ask"] = true;
  if (s.workspace_mode != "direct") j["workspace_mode"] = s.workspace_mode;
  nlohmann::json limits = nlohmann::json::object();
  for (const char* key : kLimitKeys) {
    if (const auto* v = LimitField(s.flags, key); v && *v) limits[key] = **v;
  }
  if (!limits.empty()) j["limits"] = limits;
  if (s.ttl_s) j["ttl_s"] = s.ttl_s;
  if (s.idle_s) j["idle_s"] = s.idle_s;
  if (!s.labels.empty()) j["labels"] = s.labels;
  return j;
}

std::vector<std::string> RunFlagsToArgs(const policy::RunFlags& f, const std::string& workdir) {
  std::vector<std::string> a;
  a.push_back("--profile=" + f.profile);
  if (!workdir.empty()) a.push_back("--workdir=" + workdir);
  auto each = [&](const char* opt, const std::vector<std::string>& v) {
    for (const auto& x : v) a.push_back(std::string(opt) + "=" + x);
  };
  each("--write", f.write);
  each("--read", f.read);
  each("--deny", f.deny);
  each("--env", f.env);
  each("--allow-net", f.allow_net);
  each("--deny-net", f.deny_net);
  each("--credential", f.credentials);
  each("--credential-env", f.credential_env);
  if (!f.allow_degraded.empty()) {
    std::string joined;
    for (const auto& l : f.allow_degraded) joined += (joined.empty() ? "" : ",") + l;
    a.push_back("--allow-degraded=" + joined);
  }
  auto opt = [&](const char* name, const std::optional<std::string>& v) {
    if (v) a.push_back(std::string(name) + "=" + *v);
  };
  opt("--memory", f.memory);
  opt("--pids", f.pids);
  opt("--cpu", f.cpu);
  opt("--timeout", f.timeout);
  opt("--tmp-size", f.tmp_size);
  opt("--file-size", f.file_size);
  if (f.approvals.value_or(false)) a.push_back("--ask");
  if (f.no_audit) a.push_back("--no-audit");
  if (f.workspace_anyway) a.push_back("--workspace-anyway");
  return a;
}

Expected<policy::RunFlags> NarrowFlags(const SandboxSpec& spec, const policy::Policy& effective,
                                       const nlohmann::json& exec_policy) {
  policy::RunFlags f = spec.flags;
  Params p(exec_policy, "policy");
  if (auto prof = p.String("profile", 4096)) {
    if (*prof != spec.flags.profile) {
      return DeniedError("policy.profile: an exec cannot change the sandbox's profile");
    }
  }
  bool has_write = p.Has("write"), has_read = p.Has("read"), has_net = p.Has("allow_net");
  auto write = p.StringList("write");
  auto read = p.StringList("read");
  auto deny = p.StringList("deny");
  auto deny_net = p.StringList("deny_net");
  auto allow_net = p.StringList("allow_net");
  policy::RunFlags limits_in;
  ParseLimits(p, limits_in);
  if (!p.Finish()) return p.error();

  UniqueFd ws_fd;
  if ((has_write && !write.empty()) || (has_read && !read.empty())) {
    WARD_API_ASSIGN_OR_RETURN(ws_fd, OpenWorkspace(spec.workspace));
  }
  const NarrowContext c{spec, effective, ws_fd.get()};
  if (has_write) {
    WARD_API_ASSIGN_OR_RETURN(f.write, NarrowWrite(c, write));
  }
  if (has_read) {
    WARD_API_ASSIGN_OR_RETURN(f.read, NarrowRead(c, read));
  }
  for (const auto& d : deny) {
    auto abs = AbsolutePath(d, spec.workspace, effective.home);
    if (!abs) return InvalidError("policy.deny: bad path \"" + d + "\"");
    f.deny.push_back(*abs);
  }
  for (const auto& h : deny_net) f.deny_net.push_back(h);
  if (has_net) WARD_API_TRY(NarrowAllowNet(effective, allow_net, &f));
  WARD_API_TRY(NarrowLimits(effective.limits, limits_in, &f));
  return f;
}

Expected<Done> CheckWorkspacePaths(const policy::RunFlags& flags, const std::string& workspace,
                                   const std::string& home) {
  UniqueFd ws_fd;
  for (const auto& [list, field] : {std::pair{&flags.write, "write"}, {&flags.read, "read"}}) {
    for (const std::string& p : *list) {
      auto abs = AbsolutePath(p, workspace, home);
      if (!abs || !policy::PathIsWithin(*abs, workspace)) continue;
      if (!ws_fd) {
        auto fd = OpenWorkspace(workspace);
        if (!fd.ok()) return fd.error();
        ws_fd = std::move(fd).value();
      }
      auto checked = CheckBeneath(field, p, workspace, ws_fd.get(), *abs);
      // A missing path is left to `ward run`, which names it (the exec is then denied).
      if (!checked.ok() && checked.error().kind != ErrorKind::kNotFound) return checked.error();
    }
  }
  return Done{};
}

Expected<std::string> ResolveCwd(const std::string& workspace, const std::string& cwd) {
  if (cwd.empty()) return std::string();
  std::string abs = cwd[0] == '/' ? policy::NormalizePath(cwd)
                                  : policy::NormalizePath(policy::JoinPath(workspace, cwd));
  // Lexical check first: JoinPath + Normalize folds "..", so escapes show up here.
  if (cwd[0] != '/' && policy::ClimbsOut(cwd)) {
    return DeniedError("cwd \"" + cwd + "\" leaves the workspace");
  }
  if (!policy::PathIsWithin(abs, workspace)) {
    return DeniedError("cwd \"" + cwd + "\" is outside the workspace");
  }
  if (abs == workspace) return std::string();
  return abs;
}

RunInvocation BuildRunInvocation(const policy::RunFlags& flags, const std::string& workspace,
                                 const std::vector<std::string>& labels, int json_status_fd,
                                 const ExecCommand& command, const std::string& session_id,
                                 const ExecReview& review) {
  RunInvocation inv;
  inv.args.push_back("run");
  for (auto& a : RunFlagsToArgs(flags, workspace)) inv.args.push_back(std::move(a));
  for (const auto& l : labels) inv.args.push_back("--label=" + l);
  inv.args.push_back("--json-status=" + std::to_string(json_status_fd));
  if (!session_id.empty()) inv.args.push_back("--session-id=" + session_id);
  if (!review.session.empty()) {
    inv.args.push_back("--workspace=" + review.mode);
    inv.args.push_back("--review-session=" + review.session);
  }
  inv.args.push_back("--");
  if (!command.cwd.empty()) {
    // `ward run` starts in the workspace; a subdirectory is entered inside the sandbox.
    inv.args.insert(inv.args.end(), {"/bin/sh", "-c", "cd -- \"$1\" && shift && exec \"$@\"",
                                     "ward-cwd", command.cwd});
  }
  inv.args.insert(inv.args.end(), command.argv.begin(), command.argv.end());
  return inv;
}

RunInvocation BuildLiveInvocation(const policy::RunFlags& flags, const std::string& workspace,
                                  const std::vector<std::string>& labels,
                                  const std::string& session_id) {
  RunInvocation inv;
  inv.args.push_back("run");
  for (auto& a : RunFlagsToArgs(flags, workspace)) inv.args.push_back(std::move(a));
  for (const auto& l : labels) inv.args.push_back("--label=" + l);
  if (!session_id.empty()) inv.args.push_back("--session-id=" + session_id);
  return inv;
}

}  // namespace ward::api
