// `ward oci`: the runc command line that container engines drive (containerd's shim, conmon,
// dockerd through containerd), docs/kubernetes.md. Errors go to stderr and, with --log, to that
// file in the engine's format (--log-format text|json), as runc writes them.
//
// In progress (issue 38): the bundle is read and checked (`ward oci check --bundle DIR`), and the
// state directory serves `state`, `delete` and `features`; `create`, `start`, `exec`, `kill` and
// `ps` are not there yet, so the command stays out of `ward --help`.
#include <signal.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "common/untrusted_file.h"
#include "oci/annotations.h"
#include "oci/bundle.h"
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
  bool systemd_cgroup = false;  // accepted; ward makes and removes the container's cgroups itself
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

std::string NowRfc3339() {
  const std::time_t t = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm tm = {};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

// A line of --log as the engine reads it: text or JSON, with its level.
void Log(const OciGlobals& g, const char* level, const std::string& message) {
  if (g.log.empty()) return;
  std::ofstream log(g.log, std::ios::app);
  if (g.log_format == "json") {
    log << nlohmann::json{{"level", level}, {"msg", message}, {"time", NowRfc3339()}}.dump()
        << "\n";
  } else {
    log << "time=\"" << NowRfc3339() << "\" level=" << level << " msg=\"" << message << "\"\n";
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
        {"seccomp", {{"enabled", true}}}}},
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
  oci->add_option("--root", g->root, "State directory (default /run/ward-oci as root)");
  oci->add_option("--log", g->log, "Also write errors to FILE");
  oci->add_option("--log-format", g->log_format, "text or json")
      ->check(CLI::IsMember({"text", "json"}));
  oci->add_option("--config", g->config, "The node's configuration (default /etc/ward/config.toml)")
      ->group("");
  oci->add_flag("--systemd-cgroup", g->systemd_cgroup,
                "Accepted for the engines; ward makes and removes the container's cgroups itself");

  auto id = std::make_shared<std::string>();
  CLI::App* state = oci->add_subcommand("state", "The container's OCI state as JSON");
  state->add_option("id", *id, "Container id")->required();
  state->callback([g, id, exit_code] { *exit_code = State(*g, *id); });

  auto force = std::make_shared<bool>(false);
  CLI::App* del = oci->add_subcommand("delete", "Remove a stopped container's state");
  del->add_flag("-f,--force", *force, "Kill a live container first");
  del->add_option("id", *id, "Container id")->required();
  del->callback([g, id, force, exit_code] { *exit_code = Delete(*g, *id, *force); });

  auto bundle = std::make_shared<std::string>(".");
  CLI::App* check = oci->add_subcommand("check", "Read and check a bundle without creating it");
  check->add_option("-b,--bundle", *bundle, "The bundle directory (default: .)");
  check->callback([g, bundle, exit_code] { *exit_code = Check(*g, *bundle); });

  oci->add_subcommand("features", "What this runtime supports, as JSON")
      ->callback([exit_code] { *exit_code = Features(); });
}

}  // namespace ward::cli
