// `ward learn [run options] [--save FILE [--force]] -- COMMAND`: runs COMMAND once under the
// policy those options give (nothing more is granted), then proposes the profile and the flags
// that would allow every denial ward saw, each rule commented with what needed it. It widens
// nothing itself and writes nothing but FILE; a denial refused on purpose (deny list, protected
// path, credential leak) is named with its rule, never proposed. The run is this binary's own
// `ward run --json-status`, so every run option means what it means there.
#include <CLI/CLI.hpp>

#include <nlohmann/json.hpp>

#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "api/sandbox_spec.h"
#include "audit/sessions.h"
#include "cli/commands.h"
#include "cli/run_options.h"
#include "common/status.h"
#include "common/unique_fd.h"
#include "policy/learn.h"
#include "policy/paths.h"

namespace ward::cli {
namespace {

struct LearnOptions {
  RunOptions run;
  std::vector<std::string> command;
  std::string save;    // --save FILE ("" = print only)
  bool force = false;  // --force: FILE may be replaced
};

// Where --save writes: its directory opened before the run, with the caller's authority and
// before anything ran, so nothing the run changes on the way to it (a directory swapped for a
// symlink in the workspace) moves the file elsewhere.
struct SaveTarget {
  std::string path;  // as given
  std::string name;  // its last component
  UniqueFd dir;
};

constexpr const char* kSymlinkRefused =
    "a symbolic link; ward learn writes only a file of its own name";

void Say(const std::string& line) { std::fprintf(stderr, "ward learn: %s\n", line.c_str()); }

std::string Quoted(const std::string& s) { return audit::SanitizeForTerminal(s); }

Result<SaveTarget> OpenSaveTarget(const LearnOptions& o) {
  SaveTarget t;
  t.path = o.save;
  std::string dir = ".";
  size_t slash = o.save.rfind('/');
  if (slash != std::string::npos) {
    dir = slash == 0 ? "/" : o.save.substr(0, slash);
    t.name = o.save.substr(slash + 1);
  } else {
    t.name = o.save;
  }
  if (t.name.empty() || t.name == "." || t.name == "..") {
    return InvalidArgument("--save " + o.save + ": name a file, not a directory");
  }
  int fd = open(dir.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) {
    return ErrnoError("--save " + o.save + ": its directory " + dir +
                          (errno == ENOENT ? " does not exist (mkdir -p it first)" : ""),
                      errno);
  }
  t.dir = UniqueFd(fd);
  struct stat st;
  if (fstatat(t.dir.get(), t.name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) return t;
  if (S_ISLNK(st.st_mode)) {
    return Error(Code::kPermissionDenied, "--save " + o.save + ": " + kSymlinkRefused);
  }
  if (!o.force) {
    return Error(Code::kFailedPrecondition,
                 "--save " + o.save + ": the file exists; add --force to replace it");
  }
  return t;
}

// The profile the proposal extends, as `extends` accepts it: a name as given, a file by its
// absolute path (a relative path in a profile is an error).
std::string BaseProfile(const RunOptions& o, const policy::Policy& pol) {
  const std::string& p = o.flags.profile;
  bool is_file = p.find('/') != std::string::npos ||
                 (p.size() > 5 && p.compare(p.size() - 5, 5, ".toml") == 0);
  if (!is_file || p.rfind("builtin:", 0) == 0) return p;
  return pol.profile;  // the loader's absolute path of the file
}

// The file --save would write is the profile this run extends (it is then rewritten in place).
bool SameFile(const SaveTarget& t, const std::string& base) {
  if (base.empty() || base[0] != '/') return false;
  struct stat a, b;
  if (fstatat(t.dir.get(), t.name.c_str(), &a, 0) != 0 || stat(base.c_str(), &b) != 0) return false;
  return a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

// A file of the caller's (the profile named with -p).
Result<std::string> ReadOwnFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return ErrnoError("reading " + path, errno);
  std::stringstream ss;
  ss << in.rdbuf();
  if (in.bad()) return ErrnoError("reading " + path, errno);
  return ss.str();
}

// The arguments of the `ward run` that does the learning run.
std::vector<std::string> RunArgs(const LearnOptions& o, int status_fd) {
  std::vector<std::string> a = {"ward", "run"};
  for (std::string& f : RunOptionsToArgs(o.run)) a.push_back(std::move(f));
  if (o.run.flags.proxy_connections) {
    a.push_back("--proxy-connections=" + *o.run.flags.proxy_connections);
  }
  if (!o.run.approver.empty()) a.push_back("--approver=" + o.run.approver);
  if (!o.run.approver_secret_env.empty()) {
    a.push_back("--approver-secret-env=" + o.run.approver_secret_env);
  }
  if (!o.run.approver_secret_file.empty()) {
    a.push_back("--approver-secret-file=" + o.run.approver_secret_file);
  }
  if (o.run.raw_terminal) a.push_back("--raw-terminal");
  a.push_back("--quiet");  // no end-of-run summary: learn says it all once, below
  a.push_back("--json-status=" + std::to_string(status_fd));
  a.push_back("--");
  a.insert(a.end(), o.command.begin(), o.command.end());
  return a;
}

struct LearningRun {
  int exit_code = 125;
  std::string status;  // --json-status's JSON ("" when none came)
};

volatile sig_atomic_t g_run_pid = 0;  // the learning run, while learn waits for it

void ForwardToRun(int sig) {
  if (g_run_pid > 0) kill(g_run_pid, sig);
}

// Runs `ward run ... -- COMMAND` with the command's stdio where learn's is; interrupts reach
// both through the terminal, and learn waits for the run's own end to report it.
Result<LearningRun> RunOnce(const LearnOptions& o) {
  int p[2];
  if (pipe2(p, O_CLOEXEC) != 0) return Errno("pipe2");
  UniqueFd rd(p[0]), wr(p[1]);
  std::vector<std::string> args = RunArgs(o, wr.get());
  std::vector<char*> argv;
  for (std::string& s : args) argv.push_back(s.data());
  argv.push_back(nullptr);
  pid_t pid = fork();
  if (pid < 0) return Errno("fork");
  if (pid == 0) {
    fcntl(p[1], F_SETFD, 0);  // the status descriptor, and only it, crosses the exec
    execv("/proc/self/exe", argv.data());
    std::fprintf(stderr, "ward learn: cannot run ward itself: %s\n", std::strerror(errno));
    _exit(125);
  }
  wr.reset();
  // A terminal's interrupt reaches the run itself (same process group), which ends the command
  // and reports; learn waits for that. A signal sent to learn alone is passed on to the run.
  g_run_pid = pid;
  struct sigaction ignore = {}, forward = {}, old_int = {}, old_quit = {}, old_term = {},
                   old_hup = {};
  ignore.sa_handler = SIG_IGN;
  forward.sa_handler = ForwardToRun;
  sigaction(SIGINT, &ignore, &old_int);
  sigaction(SIGQUIT, &ignore, &old_quit);
  sigaction(SIGTERM, &forward, &old_term);
  sigaction(SIGHUP, &forward, &old_hup);
  LearningRun run;
  char buf[65536];
  for (;;) {
    ssize_t n = read(rd.get(), buf, sizeof buf);
    if (n > 0) {
      run.status.append(buf, n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    break;
  }
  int wstatus = 0;
  while (waitpid(pid, &wstatus, 0) < 0 && errno == EINTR) {
  }
  sigaction(SIGINT, &old_int, nullptr);
  sigaction(SIGQUIT, &old_quit, nullptr);
  sigaction(SIGTERM, &old_term, nullptr);
  sigaction(SIGHUP, &old_hup, nullptr);
  g_run_pid = 0;
  run.exit_code = WIFEXITED(wstatus) ? WEXITSTATUS(wstatus) : 128 + WTERMSIG(wstatus);
  return run;
}

std::vector<policy::LearnDenial> DenialsOf(const nlohmann::json& status) {
  std::vector<policy::LearnDenial> out;
  auto it = status.find("denials");
  if (it == status.end() || !it->is_array()) return out;
  for (const nlohmann::json& d : *it) {
    if (!d.is_object()) continue;
    policy::LearnDenial x;
    auto str = [&](const char* key) {
      auto f = d.find(key);
      return f != d.end() && f->is_string() ? f->get<std::string>() : std::string();
    };
    x.kind = str("kind");
    x.target = str("target");
    x.rule = str("rule");
    x.allow_with = str("allow_with");
    auto c = d.find("count");
    x.count = c != d.end() && c->is_number_unsigned() ? c->get<uint64_t>() : 1;
    auto op = d.find("on_purpose");
    // Anything but an explicit false counts as on purpose: a malformed entry is not proposed.
    x.on_purpose = op == d.end() || !op->is_boolean() || op->get<bool>();
    out.push_back(std::move(x));
  }
  return out;
}

// The lines after the run: what was refused on purpose, what ward cannot propose, and the
// proposal itself (profile and flags).
void Report(const policy::LearnProposal& p, const policy::LearnInput& in, int exit_code,
            bool saving) {
  for (const policy::LearnLeftOut& l : p.on_purpose) {
    Say("needed, refused on purpose (not proposed): " + Quoted(l.denial.kind) + " " +
        Quoted(l.denial.target) + ": " + Quoted(l.why));
  }
  for (const policy::LearnLeftOut& l : p.not_proposable) {
    Say("refused, nothing to propose: " + Quoted(l.denial.kind) + " " + Quoted(l.denial.target) +
        ": " + Quoted(l.why));
  }
  if (p.empty()) {
    if (in.denials.empty() && exit_code != 0) {
      Say("nothing to propose: ward saw no denial, and the command exited with status " +
          std::to_string(exit_code) +
          " (its own failure, or a refusal ward cannot see: docs/profiles.md, \"ward learn\")");
    } else {
      Say("nothing to propose: the run needed nothing its policy does not allow (exit status " +
          std::to_string(exit_code) + ")");
    }
    return;
  }
  Say(std::string("proposed profile") + (saving ? "" : " (save it with --save FILE)") + ":");
  std::fputs(policy::ProposalProfileText(p, in).c_str(), stderr);
  Say("the same as flags:");
  std::fprintf(stderr, "  %s\n", Quoted(policy::ProposalFlags(p, in)).c_str());
}

Status Save(const SaveTarget& t, const std::string& text, bool force) {
  int flags = O_WRONLY | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | (force ? O_TRUNC : O_EXCL);
  int fd = openat(t.dir.get(), t.name.c_str(), flags, 0644);
  if (fd < 0) {
    if (errno == EEXIST) {
      return Error(Code::kFailedPrecondition,
                   t.path + " appeared during the run; not replaced (add --force to replace it)");
    }
    if (errno == ELOOP) {
      return Error(Code::kPermissionDenied,
                   "--save " + t.path + ": " + kSymlinkRefused + " (it appeared during the run)");
    }
    return ErrnoError("writing " + t.path, errno);
  }
  UniqueFd f(fd);
  struct stat st;
  if (fstat(f.get(), &st) != 0 || !S_ISREG(st.st_mode)) {
    return Error(Code::kPermissionDenied, t.path + " is not a regular file; not written");
  }
  const char* p = text.data();
  size_t n = text.size();
  while (n > 0) {
    ssize_t w = write(f.get(), p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return ErrnoError("writing " + t.path, errno);
    p += w;
    n -= w;
  }
  return Ok();
}

// Whether FILE lies where the sandbox could write (the workspace): a profile there could be
// rewritten by the next run before the run after it reads it.
bool InWorkspace(const std::string& path, const policy::Policy& pol) {
  char dir[PATH_MAX];
  std::string d = path.find('/') == std::string::npos ? "." : path.substr(0, path.rfind('/'));
  if (d.empty()) d = "/";
  if (realpath(d.c_str(), dir) == nullptr) return false;
  char ws[PATH_MAX];
  if (realpath(pol.workspace.c_str(), ws) == nullptr) return false;
  return pol.workspace_access == policy::Access::kWrite && policy::PathIsWithin(dir, ws);
}

int LearnCommand(const LearnOptions& o) {
  if (o.command.empty()) {
    std::fprintf(stderr,
                 "ward: no command given (usage: ward learn [OPTIONS] -- COMMAND [ARGS...])\n");
    return kExitUsage;
  }
  if (o.force && o.save.empty()) {
    std::fprintf(stderr, "ward: --force only applies to --save FILE\n");
    return kExitUsage;
  }
  Result<policy::Policy> pol = LoadEffectivePolicy(o.run);
  if (!pol.ok()) {
    std::fprintf(stderr, "ward: %s\n", pol.status().ToString().c_str());
    return kExitUsage;
  }
  policy::LearnInput in;
  in.base_profile = BaseProfile(o.run, *pol);
  in.command = o.command;
  in.home = pol->home;
  char cwd[PATH_MAX];
  if (getcwd(cwd, sizeof cwd) != nullptr) in.cwd = cwd;
  for (const policy::DenyRule& d : pol->deny) in.deny_paths.push_back(d.path);
  std::optional<SaveTarget> target;
  bool save_in_workspace = false;
  if (!o.save.empty()) {
    Result<SaveTarget> t = OpenSaveTarget(o);
    if (!t.ok()) {
      std::fprintf(stderr, "ward: %s\n", t.status().ToString().c_str());
      return kExitUsage;
    }
    if (SameFile(*t, in.base_profile)) {
      // FILE is the profile this run extends (-p FILE, --force): rewritten in place, its rules
      // kept ahead of the new ones, when it is one ward learn can rewrite.
      Result<std::string> text = ReadOwnFile(in.base_profile);
      Result<policy::LearnedProfile> learned =
          text.ok() ? policy::ParseLearnedProfile(*text, in.base_profile)
                    : Result<policy::LearnedProfile>(text.status());
      if (!learned.ok()) {
        std::fprintf(stderr, "ward: --save %s: %s\n", o.save.c_str(),
                     learned.status().ToString().c_str());
        return kExitUsage;
      }
      in.base_profile = learned->extends;
      in.previous = std::move(learned->rules);
    }
    target = std::move(t).value();
    save_in_workspace = InWorkspace(o.save, *pol);  // before the run can change the way there
  }
  Result<LearningRun> run = RunOnce(o);
  if (!run.ok()) {
    std::fprintf(stderr, "ward: learn: %s\n", run.status().ToString().c_str());
    return kExitUsage;
  }
  nlohmann::json status = nlohmann::json::parse(run->status, nullptr, /*allow_exceptions=*/false);
  if (!status.is_object()) {
    Say("the run reported no outcome (exit status " + std::to_string(run->exit_code) +
        "); nothing to propose");
    return run->exit_code;
  }
  if (status.value("status", "") == "refused") {
    Say("the run was refused before the command started (above); nothing to propose");
    return run->exit_code;
  }
  in.denials = DenialsOf(status);
  policy::LearnProposal proposal = policy::ProposeFromDenials(in);
  Report(proposal, in, run->exit_code, target.has_value());
  if (target) {
    if (proposal.empty()) {
      Say("nothing written to " + Quoted(o.save));
    } else {
      Status saved = Save(*target, policy::ProposalProfileText(proposal, in), o.force);
      if (!saved.ok()) {
        std::fprintf(stderr, "ward: %s\n", saved.ToString().c_str());
        return kExitUsage;
      }
      Say("saved to " + Quoted(o.save) + "; next: ward learn -p " +
          Quoted(policy::ShellQuote(o.save)) + " -- ...");
      if (save_in_workspace) {
        Say("note: " + Quoted(o.save) +
            " is in the workspace, which sandboxed commands can write: read it before each "
            "use, or keep it outside (~/.config/ward/profiles/NAME.toml, then -p NAME)");
      }
    }
  }
  return run->exit_code;
}

}  // namespace

void AddLearnCommand(CLI::App& app, int* exit_code) {
  auto opts = std::make_shared<LearnOptions>();
  CLI::App* sub = app.add_subcommand(
      "learn",
      "Run COMMAND once, then propose the profile (and flags) that allow what it was denied");
  AddRunOptions(sub, &opts->run);
  AddTerminalOptions(sub, &opts->run);
  sub->add_option("--save", opts->save,
                  "Write the proposed profile to FILE (refused when it exists, unless --force)");
  sub->add_flag("--force", opts->force, "With --save: replace FILE when it exists");
  sub->add_option("command", opts->command, "COMMAND [ARGS...] (after --)");
  sub->positionals_at_end();
  sub->callback([opts, exit_code] { *exit_code = LearnCommand(*opts); });
}

}  // namespace ward::cli
