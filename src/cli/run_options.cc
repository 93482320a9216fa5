#include "cli/run_options.h"

#include <fcntl.h>
#include <limits.h>
#include <sys/stat.h>
#include <pwd.h>
#include <stdlib.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstring>
#include <fstream>
#include <optional>
#include <sstream>

#include "api/sandbox_spec.h"
#include "common/unique_fd.h"
#include "common/untrusted_file.h"
#include "policy/paths.h"
#include "policy/workspace_choice.h"

namespace ward::cli {
namespace {

// The run options that change what `ward why` answers: where a path is visible, which host is
// reachable.
constexpr const char* kWhyOptions[] = {"--profile", "--write",     "--read",
                                       "--deny",    "--workdir",   "--allow-net",
                                       "--deny-net", "--workspace-anyway", "--allow-net-anything"};
// The run options that change nothing `ward explain` describes.
constexpr const char* kNotExplained[] = {"--approver-secret-env", "--approver-secret-file"};

void GroupRunOptions(CLI::App* app, RunOptionHelp help) {
  if (help == RunOptionHelp::kOwn) return;
  const std::string group = help == RunOptionHelp::kWhy
                                ? "Run options (the answer is for a run given these)"
                                : "Run options (what `ward run` would be given)";
  for (CLI::Option* opt : app->get_options()) {
    const std::string name = "--" + (opt->get_lnames().empty() ? "" : opt->get_lnames().front());
    if (name == "--help") continue;
    bool shown = true;
    if (help == RunOptionHelp::kWhy) {
      shown = std::find(std::begin(kWhyOptions), std::end(kWhyOptions), name) !=
              std::end(kWhyOptions);
    } else {
      shown = std::find(std::begin(kNotExplained), std::end(kNotExplained), name) ==
              std::end(kNotExplained);
    }
    opt->group(shown ? group : "");  // "": accepted, not shown
  }
}

}  // namespace

void AddRunOptions(CLI::App* app, RunOptions* o, RunOptionHelp help) {
  auto& f = o->flags;
  app->add_option("-p,--profile", f.profile, "Profile NAME or FILE (default: default)");
  app->add_option("-w,--write", f.write, "Make PATH visible read-write (repeatable)")
      ->expected(1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll)
      ->allow_extra_args(false);
  app->add_option("-r,--read", f.read, "Make PATH visible read-only (repeatable)")
      ->expected(1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll)
      ->allow_extra_args(false);
  app->add_option("--deny", f.deny, "Never show PATH, even inside a visible tree (repeatable)")
      ->expected(1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll)
      ->allow_extra_args(false);
  app->add_option("-e,--env", f.env, "Pass NAME from the environment, or set NAME=VALUE")
      ->expected(1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll)
      ->allow_extra_args(false);
  app->add_option("-C,--workdir", o->workdir,
                  "The workspace and working directory (default: the current directory)");
  app->add_option("-n,--allow-net", f.allow_net, "Allow egress to HOST[:PORT] (repeatable)")
      ->expected(1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll)
      ->allow_extra_args(false);
  app->add_option("--deny-net", f.deny_net, "Deny egress to HOST (repeatable; deny wins)")
      ->expected(1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll)
      ->allow_extra_args(false);
  app->add_option("--allow-degraded", f.allow_degraded,
                  "Accept running without LAYER (landlock, seccomp, limits)")
      ->delimiter(',');
  app->add_option("--credential", f.credentials, "Enable the profile's credential NAME")
      ->expected(1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll)
      ->allow_extra_args(false);
  app->add_option("--credential-env", f.credential_env,
                  "VAR=HOST[,HOST...]: phantom inside, real $VAR injected for those hosts")
      ->expected(1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll)
      ->allow_extra_args(false);
  app->add_option("--memory", f.memory, "Memory limit (e.g. 2G)");
  app->add_option("--pids", f.pids, "Maximum number of processes");
  app->add_option("--cpu", f.cpu, "CPU limit in cores (fractional)");
  app->add_option("--timeout", f.timeout, "Wall-clock limit (e.g. 30s, 10m)");
  app->add_option("--tmp-size", f.tmp_size, "Size of the private /tmp and HOME");
  app->add_option("--file-size", f.file_size, "Largest file the command may write");
  app->add_option("--proxy-connections", f.proxy_connections,
                  "Concurrent connections to the egress proxy (default 128)");
  app->add_flag(
      "--ask", [o](int64_t) { o->flags.approvals = true; },
      "Ask for approval when the command opens a path the policy does not allow");
  app->add_option("--approver", o->approver,
                  "URL of a webhook approver (https://... or unix:/path); signed requests");
  app->add_option("--approver-secret-env", o->approver_secret_env,
                  "VAR: the environment variable holding the approver's HMAC secret");
  app->add_option("--approver-secret-file", o->approver_secret_file,
                  "FILE: a file (ours, mode 0600) holding the approver's HMAC secret");
  app->add_flag("--no-audit", f.no_audit, "Run without writing an audit trail (explicit)");
  app->add_flag("--workspace-anyway", f.workspace_anyway,
                "Accept a workspace ward refuses (/, a system directory, /tmp, /home or your "
                "HOME itself); recorded in the audit trail");
  app->add_flag("--allow-net-anything", f.allow_net_anything,
                "Accept -n patterns that allow every host (*, *.com, 0.0.0.0/0, ::/0)");
  GroupRunOptions(app, help);
}

void AddCreateOption(CLI::App* app, RunOptions* o) {
  app->add_flag("--create", o->create_missing,
                "Make a missing -w directory (only under your HOME or the workspace)");
}

void AddTerminalOptions(CLI::App* app, RunOptions* o) {
  app->add_flag("--raw-terminal", o->raw_terminal,
                "Relay the command's terminal output unfiltered (report requests, clipboard "
                "writes and the like reach your terminal; see docs/terminal.md)");
}

std::vector<std::string> RunOptionsToArgs(const RunOptions& o) {
  std::vector<std::string> args = api::RunFlagsToArgs(o.flags, o.workdir);
  if (!o.approver.empty()) args.push_back("--approver=" + o.approver);
  if (!o.approver_secret_env.empty()) {
    args.push_back("--approver-secret-env=" + o.approver_secret_env);
  }
  if (!o.approver_secret_file.empty()) {
    std::string file = o.approver_secret_file;
    if (file[0] != '/') {
      char cwd[PATH_MAX];
      if (getcwd(cwd, sizeof cwd) != nullptr) file = std::string(cwd) + "/" + file;
    }
    args.push_back("--approver-secret-file=" + file);
  }
  return args;
}

std::vector<std::pair<std::string, std::string>> CallerEnvironment() {
  std::vector<std::pair<std::string, std::string>> env;
  for (char** e = environ; e && *e; ++e) {
    const char* eq = std::strchr(*e, '=');
    if (!eq) continue;
    env.emplace_back(std::string(*e, eq - *e), std::string(eq + 1));
  }
  return env;
}

std::string CallerHome() {
  const char* h = getenv("HOME");
  if (h && *h == '/') return h;
  struct passwd* pw = getpwuid(getuid());
  return pw && pw->pw_dir ? pw->pw_dir : "/";
}

namespace {

// The canonical form of a path, or the path itself when it does not resolve.
std::string Canonical(const std::string& path) {
  char buf[PATH_MAX];
  return realpath(path.c_str(), buf) ? std::string(buf) : path;
}

std::string ShellWord(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

// The workspace's .ward.toml: the sandbox writes the workspace, so whatever is there is read
// as untrusted (common/untrusted_file.h). A refusal says what it is and how to get rid of it.
Result<std::string> ReadWorkspaceFile(const std::string& path) {
  UntrustedFileRules rules;
  rules.max_bytes = policy::kWorkspaceFileMaxBytes;
  rules.owners = {getuid()};
  if (getuid() != 0) rules.owners.push_back(0);
  Result<std::string> text = ReadUntrustedFile(path, rules);
  if (text.ok() || text.status().code() == Code::kNotFound) return text;
  const Status& st = text.status();
  std::string rm = "remove it (rm -r -- " + ShellWord(path) + ")";
  std::string fix;
  switch (st.code()) {
    case Code::kResourceExhausted:
      fix = "shorten it, or " + rm;
      break;
    case Code::kPermissionDenied:
      fix = st.err() != 0 ? "make it readable, or " + rm
                          : "if you trust what it says, make it yours (cp -- " + ShellWord(path) +
                                " " + ShellWord(path + ".mine") + " && mv -- " +
                                ShellWord(path + ".mine") + " " + ShellWord(path) + "), or " + rm;
      break;
    default:
      fix = rm;
      break;
  }
  return Status(st.code(),
                st.ToString() + ": ward reads a workspace file only when it is a regular file " +
                    "owned by you or root, at most " +
                    std::to_string(policy::kWorkspaceFileMaxBytes / 1024) + " KiB; " + fix);
}

// The workspace's verdict (policy/workspace_choice.h): an error naming why and what to do when
// it is refused; else why --workspace-anyway had to accept it ("" when nothing was refused).
Result<std::string> CheckWorkspaceChoice(const RunOptions& opts, const policy::Context& ctx) {
  std::optional<policy::WorkspaceRefusal> refused =
      policy::RefuseWorkspace(ctx.workspace, Canonical(ctx.home), Canonical);
  if (!refused) return std::string();
  if (!refused->overridable) {
    return Error(Code::kPermissionDenied, refused->why + "; " + refused->advice);
  }
  if (!opts.flags.workspace_anyway) {
    const std::string how = opts.workspace_anyway_hint.empty()
                                ? "add --workspace-anyway if this is deliberate (the audit "
                                  "trail records it)"
                                : opts.workspace_anyway_hint;
    return Error(Code::kPermissionDenied, refused->why + "; " + refused->advice + ", or " + how);
  }
  return refused->why;
}

// Profiles are the caller's own files (named on the command line or in their config dir).
Result<std::string> ReadHostFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    if (errno == ENOENT || errno == ENOTDIR) return NotFound(path + ": no such file");
    return ErrnoError("reading " + path, errno);
  }
  std::stringstream ss;
  ss << in.rdbuf();
  if (in.bad()) return ErrnoError("reading " + path, errno);
  return ss.str();
}

// Whether `path` (canonical) lies in the caller's HOME or the workspace.
bool InHomeOrWorkspace(const std::string& path, const policy::Policy& pol) {
  return policy::PathIsWithin(path, Canonical(pol.home)) ||
         policy::PathIsWithin(path, pol.workspace);
}

// The longest prefix of `path` that exists, and the components below it.
std::pair<std::string, std::vector<std::string>> SplitAtExisting(const std::string& path) {
  std::vector<std::string> missing;
  std::string head = path;
  struct stat st;
  while (head != "/" && lstat(head.c_str(), &st) != 0) {
    size_t slash = head.find_last_of('/');
    missing.insert(missing.begin(), head.substr(slash + 1));
    head = slash == 0 ? "/" : head.substr(0, slash);
  }
  return {head, missing};
}

// --create: makes the directories of a missing -w path below its existing part, which must be
// in the caller's HOME or the workspace. Each step is made and opened beneath the one before
// it, never following a symlink, so that nothing put in the way (the workspace is the
// sandbox's to write) takes the creation elsewhere.
Status CreateWritableDir(const std::string& path, const policy::Policy& pol) {
  auto [head, missing] = SplitAtExisting(path);
  const std::string base = Canonical(head);
  if (!InHomeOrWorkspace(base, pol)) {
    return Error(Code::kPermissionDenied,
                 "-w " + path + ": no such directory, and --create makes directories only under "
                                "your HOME or the workspace; create it yourself (mkdir -p " +
                     ShellWord(path) + ") if you mean it");
  }
  UniqueFd dir(open(base.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (!dir) return ErrnoError("--create: opening " + base, errno);
  char shown[PATH_MAX];
  ssize_t n = readlink(("/proc/self/fd/" + std::to_string(dir.get())).c_str(), shown,
                       sizeof shown - 1);
  if (n < 0 || std::string(shown, static_cast<size_t>(n)) != base) {
    return Error(Code::kFailedPrecondition,
                 "--create: " + base + " changed while ward looked at it; nothing was made");
  }
  for (const std::string& name : missing) {
    if (mkdirat(dir.get(), name.c_str(), 0777) != 0 && errno != EEXIST) {
      return ErrnoError("--create: mkdir " + path, errno);
    }
    UniqueFd next(openat(dir.get(), name.c_str(), O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (!next) return ErrnoError("--create: " + path, errno);
    dir = std::move(next);
  }
  std::fprintf(stderr, "ward: made %s (--create)\n", path.c_str());
  return Ok();
}

// A -w or -r path of the command line that does not exist: made (-w with --create), or
// refused with the fix. Paths from profiles are optional and skipped when absent.
Status PrepareCommandLinePaths(const RunOptions& opts, const policy::Policy& pol) {
  for (const policy::PathRule& r : pol.paths) {
    if (r.optional || r.origin.source != "command line") continue;
    struct stat st;
    if (stat(r.path.c_str(), &st) == 0 || errno != ENOENT) continue;  // others: the plan says
    const bool write = r.access == policy::Access::kWrite;
    if (write && opts.create_missing) {
      WARD_TRY(CreateWritableDir(r.path, pol));
      continue;
    }
    std::string fix = "create it (mkdir -p " + ShellWord(r.path) + ")";
    if (write && InHomeOrWorkspace(Canonical(SplitAtExisting(r.path).first), pol)) {
      fix += " or add --create to have ward make it";
    }
    return NotFound(std::string(write ? "-w " : "-r ") + r.path +
                    ": no such file or directory; " + fix);
  }
  return Ok();
}

}  // namespace

Result<policy::Policy> LoadEffectivePolicy(const RunOptions& opts) {
  policy::Context ctx;
  ctx.home = CallerHome();
  char buf[PATH_MAX];
  if (getcwd(buf, sizeof buf) == nullptr) return Errno("getcwd");
  ctx.cwd = buf;
  std::string ws = opts.workdir.empty() ? ctx.cwd : opts.workdir;
  if (ws[0] != '/') ws = ctx.cwd + "/" + ws;
  if (realpath(ws.c_str(), buf) == nullptr) return ErrnoError("workspace " + ws, errno);
  ctx.workspace = buf;
  // The workspace first: a refused one is not read at all (nor its .ward.toml), and its reason
  // is the first thing said (before, say, the audit directory that lies in a HOME).
  WARD_ASSIGN_OR_RETURN(std::string anyway, CheckWorkspaceChoice(opts, ctx));
  ctx.config_dir = UserConfigDir();
  const std::string workspace_file = policy::WorkspaceFilePath(ctx.workspace);
  Result<policy::Policy> pol = policy::LoadPolicy(opts.flags, ctx, [&](const std::string& path) {
    return path == workspace_file ? ReadWorkspaceFile(path) : ReadHostFile(path);
  });
  if (!pol.ok()) return pol;
  WARD_TRY(PrepareCommandLinePaths(opts, *pol));
  pol->workspace_anyway = anyway;
  return pol;
}

std::string UserConfigDir() {
  const char* xdg = getenv("XDG_CONFIG_HOME");
  return (xdg && *xdg == '/') ? std::string(xdg) + "/ward" : CallerHome() + "/.config/ward";
}

}  // namespace ward::cli
