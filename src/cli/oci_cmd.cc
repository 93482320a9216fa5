// `ward oci`: the runc command line that container engines drive (containerd's shim, conmon,
// dockerd through containerd), docs/kubernetes.md. Errors go to stderr and, with --log, to that
// file in the engine's format (--log-format text|json), as runc writes them.
//
// In progress (issue 38): `create`, `start`, `state`, `kill`, `delete`, `ps`, `exec`, `update`,
// `events --stats`, `features` and `check` are there; `pause` and `resume` are refused with
// their reason; what is not there yet is listed in docs/kubernetes.md, and until it is the
// command stays out of `ward --help`.
#include <signal.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <nlohmann/json.hpp>

#include "audit/record.h"
#include "cli/commands.h"
#include "common/untrusted_file.h"
#include "oci/annotations.h"
#include "oci/bundle.h"
#include "oci/config.h"
#include "oci/container_cgroup.h"
#include "oci/exec.h"
#include "oci/lifecycle.h"
#include "oci/rlimits.h"
#include "oci/run_flags.h"
#include "oci/state.h"
#include "policy/user_config.h"

namespace ward::cli {
namespace {

struct OciGlobals {
  std::string root;
  std::string log;
  std::string log_format = "text";
  bool debug = false;           // accepted; errors go to --log either way
  bool systemd_cgroup = false;  // linux.cgroupsPath is "slice:prefix:name"; ward writes the cgroups
  std::string config = policy::kNodeConfigPath;  // the node's defaults ([oci])
};

// The node's configuration: its [oci] defaults. A missing file means the built-in defaults; one
// that is there must be a small regular file of root or the caller, and parse.
Result<policy::UserConfig> NodeConfig(const OciGlobals& g) {
  UntrustedFileRules rules;
  rules.max_bytes = 64 * 1024;
  rules.owners = {0, geteuid()};
  Result<std::string> text = ReadUntrustedFile(g.config, rules);
  if (!text.ok()) {
    if (text.status().code() == Code::kNotFound) return policy::UserConfig();
    return std::move(text).take_status().With(g.config);
  }
  return policy::ParseUserConfig(*text, g.config);
}

// runc's default state directory is /run/runc; ward's is /run/ward-oci as root, else under
// XDG_RUNTIME_DIR.
std::string StateRoot(const OciGlobals& g) {
  if (!g.root.empty()) return g.root;
  if (geteuid() == 0) return "/run/ward-oci";
  const char* xdg = getenv("XDG_RUNTIME_DIR");
  return xdg != nullptr && *xdg == '/' ? std::string(xdg) + "/ward-oci" : "";
}

// A line of --log as the engine reads it: text or JSON, with its level.
void Log(const OciGlobals& g, const char* level, const std::string& message) {
  if (g.log.empty()) return;
  std::ofstream log(g.log, std::ios::app);
  if (g.log_format == "json") {
    log << nlohmann::json{{"level", level}, {"msg", message}, {"time", audit::FormatTimestamp(std::chrono::system_clock::now())}}.dump()
        << "\n";
  } else {
    log << "time=\"" << audit::FormatTimestamp(std::chrono::system_clock::now()) << "\" level=" << level << " msg=\"" << message << "\"\n";
  }
}

// An error: on stderr, and in --log.
int Fail(const OciGlobals& g, const std::string& message) {
  std::fprintf(stderr, "ward oci: %s\n", message.c_str());
  Log(g, "error", message);
  return 1;
}

Result<std::string> RequireRoot(const OciGlobals& g) {
  std::string root = StateRoot(g);
  if (root.empty() || root[0] != '/') {
    return InvalidArgument("no state directory: give --root DIR (an absolute path), or set "
                           "XDG_RUNTIME_DIR");
  }
  return root;
}

int State(const OciGlobals& g, const std::string& id) {
  Result<std::string> root = RequireRoot(g);
  if (!root.ok()) return Fail(g, root.status().ToString());
  Result<oci::ContainerState> s = oci::LoadState(*root, id);
  if (!s.ok()) return Fail(g, s.status().ToString());
  std::printf("%s\n", oci::StateJson(*s).dump(2).c_str());
  return 0;
}

// A stopped container's state goes; a live one only with --force, after its init is killed
// (by pidfd, checked to be the same process by its start time).
int Delete(const OciGlobals& g, const std::string& id, bool force) {
  Result<std::string> root = RequireRoot(g);
  if (!root.ok()) return Fail(g, root.status().ToString());
  Result<oci::ContainerState> s = oci::LoadState(*root, id);
  if (!s.ok()) {
    // runc: deleting what does not exist is an error, except with --force.
    return force && s.status().code() == Code::kNotFound ? 0 : Fail(g, s.status().ToString());
  }
  const std::string status = oci::ContainerStatus(*s);
  if (status == "created" || status == "running") {
    if (!force) {
      return Fail(g, "container " + id + " is " + status + ": stop it first, or delete --force");
    }
    if (Status killed = oci::KillInit(*s, SIGKILL); !killed.ok()) {
      return Fail(g, killed.ToString());
    }
  }
  if (Status removed = oci::RemoveState(*root, id); !removed.ok()) {
    return Fail(g, removed.ToString());
  }
  return 0;
}

struct CreateArgs {
  std::string bundle = ".";
  std::string pid_file;
  std::string console_socket;
  bool no_pivot = false, no_new_keyring = false;
  int preserve_fds = 0;
};

int Create(const OciGlobals& g, const CreateArgs& a, const std::string& id) {
  if (a.preserve_fds != 0) return Fail(g, "--preserve-fds: ward oci passes no extra descriptors");
  Result<std::string> root = RequireRoot(g);
  if (!root.ok()) return Fail(g, root.status().ToString());
  Result<policy::UserConfig> node = NodeConfig(g);
  if (!node.ok()) return Fail(g, node.status().ToString());
  oci::CreateOptions o;
  o.root = *root;
  o.id = id;
  o.bundle = a.bundle;
  o.pid_file = a.pid_file;
  o.console_socket = a.console_socket;
  o.systemd_cgroup = g.systemd_cgroup;
  o.node = node->oci;
  o.ward_version = WARD_VERSION;
  Result<std::vector<std::string>> warnings = oci::Create(o);
  if (!warnings.ok()) return Fail(g, warnings.status().ToString());
  for (const std::string& w : *warnings) Log(g, "warning", w);
  return 0;
}

int Start(const OciGlobals& g, const std::string& id) {
  Result<std::string> root = RequireRoot(g);
  if (!root.ok()) return Fail(g, root.status().ToString());
  Status started = oci::Start(*root, id);
  return started.ok() ? 0 : Fail(g, started.ToString());
}

// runc: a container that is neither created nor running cannot be signalled.
int Kill(const OciGlobals& g, const std::string& id, const std::string& signal) {
  Result<std::string> root = RequireRoot(g);
  if (!root.ok()) return Fail(g, root.status().ToString());
  Result<int> sig = oci::ParseSignal(signal);
  if (!sig.ok()) return Fail(g, sig.status().ToString());
  Result<oci::ContainerState> s = oci::LoadState(*root, id);
  if (!s.ok()) return Fail(g, s.status().ToString());
  const std::string status = oci::ContainerStatus(*s);
  if (status != "created" && status != "running") {
    return Fail(g, "container " + id + " is " + status + ": there is nothing to signal");
  }
  Status killed = oci::KillInit(*s, *sig);
  return killed.ok() ? 0 : Fail(g, killed.ToString());
}

// `ps`: the container's host pids; with --format json a JSON array (what the engines read),
// else `ps -f` of them.
int Ps(const OciGlobals& g, const std::string& id, const std::string& format) {
  Result<std::string> root = RequireRoot(g);
  if (!root.ok()) return Fail(g, root.status().ToString());
  Result<std::vector<pid_t>> pids = oci::ContainerPids(*root, id);
  if (!pids.ok()) return Fail(g, pids.status().ToString());
  if (format == "json") {
    std::printf("%s\n", nlohmann::json(*pids).dump().c_str());
    return 0;
  }
  std::printf("PID\n");
  for (pid_t p : *pids) std::printf("%d\n", p);
  return 0;
}

struct ExecArgs {
  std::string process_file;
  bool detach = false, tty = false, no_new_privs = false, ignore_paused = false;
  std::string console_socket, pid_file, cwd, user, process_label, apparmor, cgroup;
  std::vector<std::string> env, caps, additional_gids;
  int preserve_fds = 0;
  std::vector<std::string> rest;  // ID [ARGS...]
};

// The exec's process: the engine's --process file, or the arguments after the id with --env,
// --cwd and --user (each defaulting to the container's: the exec server's environment, its
// working directory, the engine's user).
Result<oci::Process> ExecProcess(const ExecArgs& a) {
  if (!a.process_file.empty()) {
    if (a.rest.size() > 1) {
      return InvalidArgument("exec: give the command in --process or after the id, not both");
    }
    UntrustedFileRules rules;
    rules.max_bytes = oci::kMaxConfigBytes;
    rules.owners = {0, geteuid()};
    WARD_ASSIGN_OR_RETURN(std::string text, ReadUntrustedFile(a.process_file, rules));
    Result<oci::Process> p = oci::ParseProcess(text);
    if (!p.ok()) return std::move(p).take_status().With("--process " + a.process_file);
    p->terminal = p->terminal || a.tty;
    return p;
  }
  if (a.rest.size() < 2) return InvalidArgument("exec: no command: give it after the id, or --process FILE");
  oci::Process p;
  p.args.assign(a.rest.begin() + 1, a.rest.end());
  p.env = a.env;
  p.cwd = a.cwd;
  p.terminal = a.tty;
  p.uid = geteuid();
  p.gid = getegid();
  if (!a.user.empty()) {
    unsigned uid = 0, gid = getegid();
    char extra = 0;
    const int n = std::sscanf(a.user.c_str(), "%u:%u%c", &uid, &gid, &extra);
    if (n < 1 || n > 2) return InvalidArgument("--user " + a.user + ": give UID or UID:GID");
    p.uid = uid;
    p.gid = gid;
  }
  return p;
}

// What an exec asks that ward does not give: refused with the reason, before anything runs.
Status CheckExecFlags(const ExecArgs& a) {
  if (a.preserve_fds != 0) return InvalidArgument("--preserve-fds: ward oci passes no extra descriptors");
  if (!a.caps.empty()) {
    return InvalidArgument("--cap: a container's processes under ward hold no capabilities");
  }
  if (!a.additional_gids.empty()) {
    return InvalidArgument("--additional-gids: ward oci runs execs with the engine's groups only");
  }
  return Ok();
}

int Exec(const OciGlobals& g, const ExecArgs& a) {
  if (Status flags = CheckExecFlags(a); !flags.ok()) return Fail(g, flags.ToString());
  if (a.rest.empty()) return Fail(g, "exec: which container? give its id");
  Result<std::string> root = RequireRoot(g);
  if (!root.ok()) return Fail(g, root.status().ToString());
  Result<oci::Process> process = ExecProcess(a);
  if (!process.ok()) return Fail(g, process.status().ToString());
  if (!a.process_label.empty() || !a.apparmor.empty()) {
    Log(g, "warning", "exec: --process-label and --apparmor are not applied: ward's own layers confine the exec");
  }
  oci::ExecOptions o;
  o.root = *root;
  o.id = a.rest[0];
  o.process = std::move(process).value();
  o.detach = a.detach;
  o.pid_file = a.pid_file;
  o.console_socket = a.console_socket;
  Result<int> status = oci::Exec(o);
  if (!status.ok()) return Fail(g, status.status().ToString());
  if (a.detach) return 0;
  std::fflush(nullptr);
  oci::ExitAs(*status);
}

void AddExecCommand(CLI::App* oci, const std::shared_ptr<OciGlobals>& g, int* exit_code) {
  auto a = std::make_shared<ExecArgs>();
  CLI::App* exec = oci->add_subcommand("exec", "Run one more process in a running container");
  exec->add_option("-p,--process", a->process_file, "The process, as OCI process JSON");
  exec->add_flag("-d,--detach", a->detach, "Return once it runs; the pid file names its process");
  exec->add_option("--pid-file", a->pid_file, "Write the pid the engine waits for here");
  exec->add_option("--cwd", a->cwd, "Working directory inside (default: the container's)");
  exec->add_option("-e,--env", a->env, "NAME=VALUE, set over the container's environment")
      ->allow_extra_args(false);
  exec->add_option("-u,--user", a->user, "UID[:GID]: only the engine's own");
  exec->add_flag("-t,--tty", a->tty, "A terminal for the exec (its master to --console-socket)");
  exec->add_option("--console-socket", a->console_socket, "Where the terminal's master goes");
  exec->add_option("--preserve-fds", a->preserve_fds, "Only 0: no extra descriptors");
  exec->add_option("-c,--cap", a->caps, "Refused: no capabilities inside")
      ->allow_extra_args(false);
  exec->add_option("-g,--additional-gids", a->additional_gids, "Refused: the engine's groups only")
      ->allow_extra_args(false);
  exec->add_flag("--no-new-privs", a->no_new_privs, "Accepted: always so under ward");
  exec->add_flag("--ignore-paused", a->ignore_paused, "Accepted: ward does not pause");
  exec->add_option("--process-label", a->process_label, "Accepted, not applied");
  exec->add_option("--apparmor", a->apparmor, "Accepted, not applied");
  exec->add_option("--cgroup", a->cgroup, "Accepted: execs run in the container's cgroup");
  // `ID COMMAND [ARGS...]`: everything from the id on is the exec's, options of the command too.
  exec->prefix_command();
  exec->callback([g, a, exec, exit_code] {
    a->rest = exec->remaining();
    *exit_code = Exec(*g, *a);
  });
}

// `update --resources FILE ID` ("-" for stdin, as containerd's shim gives it): the limits of a
// running container, written to the cgroup ward made for it.
int Update(const OciGlobals& g, const std::string& file, const std::string& id) {
  Result<std::string> root = RequireRoot(g);
  if (!root.ok()) return Fail(g, root.status().ToString());
  if (file.empty()) return Fail(g, "update: give the new limits with --resources FILE (or - for stdin)");
  std::string text;
  if (file == "-") {
    char buf[4096];
    ssize_t n;
    while ((n = read(0, buf, sizeof buf)) > 0 && text.size() <= oci::kMaxConfigBytes) {
      text.append(buf, static_cast<size_t>(n));
    }
  } else {
    UntrustedFileRules rules;
    rules.max_bytes = oci::kMaxConfigBytes;
    rules.owners = {0, geteuid()};
    Result<std::string> read = ReadUntrustedFile(file, rules);
    if (!read.ok()) return Fail(g, read.status().ToString());
    text = std::move(read).value();
  }
  Result<oci::Resources> resources = oci::ParseResources(text);
  if (!resources.ok()) return Fail(g, resources.status().ToString());
  Result<oci::ContainerState> s = oci::LoadState(*root, id);
  if (!s.ok()) return Fail(g, s.status().ToString());
  Result<oci::ContainerCgroup> cg = oci::FindContainerCgroup(*s);
  if (!cg.ok()) return Fail(g, cg.status().ToString());
  Status updated = oci::UpdateResources(*cg, *resources, id);
  return updated.ok() ? 0 : Fail(g, updated.ToString());
}

// `events --stats ID`: one snapshot of the container's use, as runc prints it. The stream of
// events (without --stats) is not given.
int Events(const OciGlobals& g, bool stats, const std::string& id) {
  if (!stats) return Fail(g, "events: ward oci gives one snapshot (--stats), not a stream");
  Result<std::string> root = RequireRoot(g);
  if (!root.ok()) return Fail(g, root.status().ToString());
  Result<oci::ContainerState> s = oci::LoadState(*root, id);
  if (!s.ok()) return Fail(g, s.status().ToString());
  Result<oci::ContainerCgroup> cg = oci::FindContainerCgroup(*s);
  if (!cg.ok()) return Fail(g, cg.status().ToString());
  Result<std::vector<pid_t>> pids = oci::ContainerPids(*root, id);
  if (!pids.ok()) return Fail(g, pids.status().ToString());
  std::printf("%s\n", oci::StatsSnapshot(*s, *cg, *pids).dump().c_str());
  return 0;
}

void AddResourceCommands(CLI::App* oci, const std::shared_ptr<OciGlobals>& g, int* exit_code) {
  auto id = std::make_shared<std::string>();
  auto resources = std::make_shared<std::string>();
  CLI::App* update = oci->add_subcommand("update", "Change a running container's limits");
  update->add_option("-r,--resources", *resources, "linux.resources as JSON (- for stdin)");
  update->add_option("id", *id, "Container id")->required();
  update->callback([g, id, resources, exit_code] { *exit_code = Update(*g, *resources, *id); });

  auto stats = std::make_shared<bool>(false);
  auto interval = std::make_shared<std::string>();
  CLI::App* events = oci->add_subcommand("events", "One snapshot of the container's use");
  events->add_flag("--stats", *stats, "Print one snapshot and exit");
  events->add_option("--interval", *interval, "Accepted; ward gives one snapshot");
  events->add_option("id", *id, "Container id")->required();
  events->callback([g, id, stats, exit_code] { *exit_code = Events(*g, *stats, *id); });
}

// What ward oci does not do (yet): an error the engines show as it is.
int NotSupported(const OciGlobals& g, const std::string& what) {
  return Fail(g, what + " is not supported by ward oci");
}

// `ward oci check --bundle DIR`: what create will refuse, said before anything is made.
int Check(const OciGlobals& g, const std::string& bundle) {
  Result<oci::Bundle> b = oci::LoadBundle(bundle);
  if (!b.ok()) return Fail(g, b.status().ToString());
  Result<std::vector<oci::PlannedRlimit>> rlimits = oci::PlanRlimitsHere(b->config.process.rlimits);
  if (!rlimits.ok()) return Fail(g, rlimits.status().ToString());
  nlohmann::json limits = nlohmann::json::array();
  for (const oci::PlannedRlimit& r : *rlimits) {
    limits.push_back({{"type", r.name}, {"soft", r.soft}, {"hard", r.hard}, {"clamped", r.clamped}});
    if (r.clamped) Log(g, "warning", oci::DescribeClamp(r));
  }
  Result<policy::UserConfig> node = NodeConfig(g);
  if (!node.ok()) return Fail(g, node.status().ToString());
  const oci::ContainerChoices choices = oci::ChoicesFor(*b, node->oci);
  const policy::RunFlags& f = choices.flags;
  auto opt = [](const std::optional<std::string>& v) { return v ? nlohmann::json(*v) : nullptr; };
  nlohmann::json j = {{"bundle", b->dir},
                      {"rlimits", limits},
                      {"rootfs", b->rootfs},
                      {"args", b->config.process.args},
                      {"profile", f.profile},
                      {"allow_net", f.allow_net},
                      {"deny_net", f.deny_net},
                      {"credentials", f.credentials},
                      {"approver", choices.approver},
                      {"audit_dir", choices.audit_dir},
                      {"limits", {{"memory", opt(f.memory)}, {"pids", opt(f.pids)}, {"cpu", opt(f.cpu)}}}};
  std::printf("%s\n", j.dump(2).c_str());
  return 0;
}

// `ward oci features`: what this runtime takes (the runtime-spec's features document).
int Features() {
  nlohmann::json j = {
      {"ociVersionMin", "1.0.0"},
      {"ociVersionMax", oci::kOciVersion},
      {"hooks", nlohmann::json::array()},
      {"mountOptions", {"bind", "rbind", "ro", "rw", "nosuid", "nodev", "noexec"}},
      {"linux",
       {{"namespaces", {"pid", "network", "mount", "ipc", "uts", "user", "cgroup"}},
        {"capabilities", nlohmann::json::array()},
        {"seccomp",
         {{"enabled", true},
          {"actions", oci::SeccompActions()},
          {"operators", oci::SeccompOperators()}}},
        {"cgroup", {{"v1", true}, {"v2", true}, {"systemd", true}, {"systemdUser", false}}}}},
      {"annotations", {{"run.ward/annotations", oci::KnownAnnotations()}}}};
  std::printf("%s\n", j.dump(2).c_str());
  return 0;
}

}  // namespace

void AddOciCommand(CLI::App& app, int* exit_code) {
  auto g = std::make_shared<OciGlobals>();
  CLI::App* oci = app.add_subcommand("oci", "The runc command line, for container engines");
  oci->group("");  // in progress: not listed until create and start are there
  oci->require_subcommand(1);
  // runc's first lines: the engines read the runtime's name, version and the spec it speaks.
  oci->set_version_flag("--version", [] {
    return std::string("ward-oci version ") + WARD_VERSION + "\nspec: " + oci::kOciVersion;
  });
  oci->add_option("--root", g->root, "State directory (default /run/ward-oci as root)");
  oci->add_option("--log", g->log, "Also write errors to FILE");
  oci->add_option("--log-format", g->log_format, "text or json")
      ->check(CLI::IsMember({"text", "json"}));
  oci->add_option("--config", g->config, "The node's configuration (default /etc/ward/config.toml)")
      ->group("");
  oci->add_flag("--debug", g->debug, "Accepted for the engines");
  oci->add_flag("--systemd-cgroup", g->systemd_cgroup,
                "linux.cgroupsPath is slice:prefix:name; ward makes the scope's cgroup itself");

  auto id = std::make_shared<std::string>();
  CLI::App* state = oci->add_subcommand("state", "The container's OCI state as JSON");
  state->add_option("id", *id, "Container id")->required();
  state->callback([g, id, exit_code] { *exit_code = State(*g, *id); });

  auto force = std::make_shared<bool>(false);
  CLI::App* del = oci->add_subcommand("delete", "Remove a stopped container's state");
  del->add_flag("-f,--force", *force, "Kill a live container first");
  del->add_option("id", *id, "Container id")->required();
  del->callback([g, id, force, exit_code] { *exit_code = Delete(*g, *id, *force); });

  auto create = std::make_shared<CreateArgs>();
  CLI::App* cr = oci->add_subcommand("create", "Create a container, its init waiting for start");
  cr->add_option("-b,--bundle", create->bundle, "The bundle directory (default: .)");
  cr->add_option("--pid-file", create->pid_file, "Write the init's pid here");
  cr->add_option("--console-socket", create->console_socket, "Where the terminal's master goes (process.terminal)");
  cr->add_flag("--no-pivot", create->no_pivot, "Accepted; ward's root is its own tmpfs");
  cr->add_flag("--no-new-keyring", create->no_new_keyring, "Accepted; ward keeps no keyring");
  cr->add_option("--preserve-fds", create->preserve_fds, "Only 0: no extra descriptors");
  cr->add_option("id", *id, "Container id")->required();
  cr->callback([g, create, id, exit_code] { *exit_code = Create(*g, *create, *id); });

  CLI::App* start = oci->add_subcommand("start", "Let a created container's process run");
  start->add_option("id", *id, "Container id")->required();
  start->callback([g, id, exit_code] { *exit_code = Start(*g, *id); });

  auto signal = std::make_shared<std::string>("TERM");
  auto all = std::make_shared<bool>(false);
  CLI::App* kill = oci->add_subcommand("kill", "Signal the container (default TERM)");
  kill->add_flag("-a,--all", *all, "Accepted: a signal to init reaches the whole container");
  kill->add_option("id", *id, "Container id")->required();
  kill->add_option("signal", *signal, "TERM, SIGKILL, 9, ...");
  kill->callback([g, id, signal, exit_code] { *exit_code = Kill(*g, *id, *signal); });

  auto format = std::make_shared<std::string>("table");
  CLI::App* ps = oci->add_subcommand("ps", "The container's processes (host pids)");
  ps->add_option("-f,--format", *format, "table or json")->check(CLI::IsMember({"table", "json"}));
  ps->add_option("id", *id, "Container id")->required();
  ps->callback([g, id, format, exit_code] { *exit_code = Ps(*g, *id, *format); });

  AddExecCommand(oci, g, exit_code);
  AddResourceCommands(oci, g, exit_code);

  // What the engines may call and ward refuses with its reason: freezing a container (pause,
  // resume).
  for (const char* name : {"pause", "resume"}) {
    CLI::App* sub = oci->add_subcommand(name, std::string("Not supported: ") + name);
    sub->allow_extras();
    sub->callback([g, name, exit_code] { *exit_code = NotSupported(*g, std::string("ward oci ") + name); });
  }

  auto bundle = std::make_shared<std::string>(".");
  CLI::App* check = oci->add_subcommand("check", "Read and check a bundle without creating it");
  check->add_option("-b,--bundle", *bundle, "The bundle directory (default: .)");
  check->callback([g, bundle, exit_code] { *exit_code = Check(*g, *bundle); });

  oci->add_subcommand("features", "What this runtime supports, as JSON")
      ->callback([exit_code] { *exit_code = Features(); });
}

}  // namespace ward::cli
