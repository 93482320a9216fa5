#include "supervisor/explain.h"

#include <sys/stat.h>

#include <set>
#include <sstream>

#include "common/json.h"
#include "enforce/landlock_coverage.h"
#include "enforce/limits.h"
#include "enforce/plan.h"
#include "enforce/seccomp.h"
#include "net/egress_rules.h"
#include "policy/host_executed.h"
#include "policy/policy_json.h"
#include "supervisor/egress_capture.h"
#include "supervisor/run_credentials.h"

namespace ward::supervisor {
namespace {

// "on: ..." with the channels, or "off".
std::string ApprovalsText(const ExplainInput& in, const policy::Policy& p) {
  if (!p.approvals.enabled) return "off";
  std::string channels;
  for (const std::string& c : in.approval_channels) channels += (channels.empty() ? "" : ", ") + c;
  return "on: opens outside the policy are trapped and asked through the broker outside the "
         "sandbox (channels: " +
         (channels.empty() ? std::string("socket") : channels) + "; timeout " +
         std::to_string(p.approvals.timeout_ms) + " ms denies)";
}

using nlohmann::json;

const char* MountKindName(enforce::MountOp::Kind k) {
  switch (k) {
    case enforce::MountOp::Kind::kTmpfs:
      return "tmpfs";
    case enforce::MountOp::Kind::kBind:
      return "bind";
    case enforce::MountOp::Kind::kSymlink:
      return "symlink";
    case enforce::MountOp::Kind::kDev:
      return "dev";
    case enforce::MountOp::Kind::kProc:
      return "proc";
    case enforce::MountOp::Kind::kFile:
      return "file";
  }
  return "?";
}

// Existing protected paths below the writable roots (the sandbox makes these read-only
// mounts; absent ones are refused by the creation guard).
int CountExistingProtected(const enforce::LaunchPlan& plan) {
  int n = 0;
  for (const auto& root : plan.mount.protect.roots) {
    for (const auto& rel : plan.mount.protect.relpaths) {
      struct stat st;
      if (lstat((root + "/" + rel).c_str(), &st) == 0) ++n;
    }
  }
  return n;
}

// The landlock layer's line: what the ABI enforces, then each right this kernel lacks and the
// layer that covers it (landlock_coverage.h).
std::string LandlockDetail(const enforce::LaunchPlan& plan, const enforce::PlanNotes& notes) {
  std::string d = "ABI " + std::to_string(plan.landlock.abi) +
                  ": filesystem rights mirror the "
                  "mount view";
  if (plan.landlock.abi >= 4) {
    d += plan.landlock.connect_tcp.empty() ? "; no TCP connect or bind"
                                           : "; TCP connect only to the ports of the proxy "
                                             "and the DNS stub, no bind";
  }
  if (plan.landlock.abi >= 6) d += "; abstract unix sockets and signals scoped to the sandbox";
  std::string gaps;
  for (const enforce::LandlockGap& g : notes.landlock_gaps) {
    gaps += (gaps.empty() ? "" : ", ") + enforce::LandlockGapShort(g);
  }
  if (!gaps.empty()) d += "; this kernel lacks " + gaps;
  return d;
}

// What the sandbox sees of the host through its binds, by access.
struct BoundPaths {
  std::vector<std::string> readable;
  std::vector<std::string> writable;
};

json MountsJson(const enforce::LaunchPlan& plan, BoundPaths* bound) {
  return JsonArray(plan.mount.ops.size(), [&](size_t i) -> json {
    const enforce::MountOp& op = plan.mount.ops[i];
    json m = JsonObject()("kind", MountKindName(op.kind))("target", op.target)("why", op.why);
    if (op.kind == enforce::MountOp::Kind::kBind) {
      m["access"] = op.writable ? "write" : "read";
      (op.writable ? bound->writable : bound->readable).push_back(op.target);
    } else if (op.kind == enforce::MountOp::Kind::kSymlink) {
      m["to"] = op.source;
    } else if (op.kind == enforce::MountOp::Kind::kTmpfs) {
      m["access"] = "write (private, discarded)";
      if (op.size) m["size_bytes"] = op.size;
    }
    return m;
  });
}

// The plan: the workspace, its mounts and masks, the protected paths, what was skipped or
// degraded.
json PlanJson(const enforce::LaunchPlan& plan, const enforce::PlanNotes& notes,
              int protected_existing, BoundPaths* bound) {
  json mounts = MountsJson(plan, bound);
  json masks = JsonArray(plan.mount.masks.size(), [&](size_t i) -> json {
    return JsonObject()("path", plan.mount.masks[i].target)("why", plan.mount.masks[i].why);
  });
  json protect = JsonObject()("roots", plan.mount.protect.roots)(
      "relpaths", plan.mount.protect.relpaths)("existing", protected_existing)(
      "nested_repo_depth", plan.mount.protect.nested_repo_depth);
  return JsonObject()("workspace", notes.workspace)("mounts", std::move(mounts))(
      "masks", std::move(masks))("protected", std::move(protect))("skipped", notes.skipped)(
      "degraded", notes.degraded);
}

void AddLayer(json* layers, const std::string& name, bool on, const std::string& detail) {
  layers->push_back(JsonObject()("layer", name)("applied", on)("detail", detail));
}

// The resource limits' layer (applied when every limit is enforced); `lines` gets each limit
// (not in a record).
void AddLimitsLayer(const ExplainInput& in, const enforce::LaunchPlan& plan, json* layers,
                    json* lines) {
  bool all_enforced = true;
  *lines = json::array();
  for (const auto& l : plan.limits.lines) {
    all_enforced = all_enforced && l.enforced;
    if (in.record_only) continue;
    lines->push_back({{"limit", l.limit},
                      {"value", l.value},
                      {"mechanism", l.mechanism},
                      {"enforced", l.enforced},
                      {"origin", l.origin}});
  }
  AddLayer(layers, "resource limits", all_enforced,
           enforce::LimitsSummary(plan.limits) + "; RLIMIT_CORE 0 (no core dumps)");
}

// The layers, each applied or not and what it does in this run; `limits` gets the resource
// limits' lines.
json LayersJson(const ExplainInput& in, const enforce::LaunchPlan& plan,
                const enforce::PlanNotes& notes, const enforce::SeccompSummary& sc, json* limits) {
  json layers = json::array();
  AddLayer(&layers, "user namespace", true,
           "uid " + std::to_string(plan.uid) + " and gid " + std::to_string(plan.gid) +
               " map to themselves; " +
               (plan.privileged ? "supplementary groups dropped"
                                : "setgroups denied (the kernel keeps supplementary groups of an "
                                  "unprivileged caller; they map to nobody)"));
  AddLayer(&layers, "mount namespace", true,
           "root built from nothing: " + std::to_string(plan.mount.ops.size()) + " mounts, " +
               std::to_string(plan.mount.masks.size()) + " masks, pivot_root; no /sys");
  AddLayer(&layers, "pid namespace", true, "ward-init is pid 1; everything dies with the command");
  AddLayer(&layers, "network namespace", true, "only lo; no route out");
  AddLayer(&layers, "ipc, uts, cgroup namespaces", true, "private; hostname \"ward\"");
  if (plan.landlock.enabled) {
    AddLayer(&layers, "landlock", true, LandlockDetail(plan, notes));
  } else {
    AddLayer(&layers, "landlock", false, "not applied (degraded)");
  }
  if (plan.seccomp_enabled) {
    AddLayer(&layers, "seccomp", true,
             std::to_string(sc.denied) + " syscalls denied, " + std::to_string(sc.notified) +
                 " trapped for the supervisor, " + std::to_string(sc.killed) +
                 " kill the process; foreign architectures killed");
  } else {
    AddLayer(&layers, "seccomp", false, "not applied (degraded)");
  }
  AddLayer(&layers, "capabilities", true,
           "none (bounding, ambient, effective, permitted, inheritable); "
           "securebits locked");
  AddLayer(&layers, "no_new_privs", true, "setuid and file capabilities have no effect");
  AddLayer(&layers, "terminal", true,
           "new session; a pty of the sandbox's own when a terminal is attached");
  if (in.raw_terminal) {
    AddLayer(&layers, "terminal output filter", false,
             "off (--raw-terminal): report requests, clipboard writes and every other sequence "
             "the command writes reach the terminal unchanged");
  } else {
    AddLayer(&layers, "terminal output filter", true,
             "report and answer-back requests, clipboard writes (OSC 52), device control "
             "strings, window operations and unlisted OSC commands are dropped; colours, cursor "
             "movement, screens, titles and hyperlinks pass (docs/terminal.md)");
  }
  AddLimitsLayer(in, plan, &layers, limits);
  return layers;
}

// The rules of the filesystem view, one per bind and mask, then what is denied by construction.
void AddViewRules(const enforce::LaunchPlan& plan, json* rules) {
  for (const auto& op : plan.mount.ops) {
    if (op.kind != enforce::MountOp::Kind::kBind) continue;
    json by = json::array({op.writable ? "mount: read-write bind" : "mount: read-only bind"});
    if (plan.landlock.enabled) {
      by.push_back(op.writable ? "landlock: all file rights" : "landlock: read and execute");
    }
    rules->push_back({{"rule", std::string(op.writable ? "write " : "read ") + op.target},
                      {"why", op.why},
                      {"enforced_by", by}});
  }
  for (const auto& m : plan.mount.masks) {
    rules->push_back(
        {{"rule", "deny " + m.target},
         {"why", m.why},
         {"enforced_by", json::array({"mount: covered by an empty read-only mount"})}});
  }
  rules->push_back({{"rule", "deny everything else"},
                    {"why", "deny by construction"},
                    {"enforced_by", json::array({"mount: not in the sandbox's view",
                                                 "landlock: no rule outside the view"})}});
}

// Each rule of the policy and the layers that enforce it.
json RulesJson(const policy::Policy& p, const enforce::LaunchPlan& plan,
               const net::EgressRules& egress) {
  json rules = json::array();
  AddViewRules(plan, &rules);
  if (!plan.mount.protect.relpaths.empty()) {
    rules.push_back(
        {{"rule", "protected paths below writable roots"},
         {"why", "filesystem.protected"},
         {"enforced_by",
          json::array({"mount: existing ones are read-only binds (their directories pinned)",
                       "seccomp user notification: the supervisor refuses to create absent "
                       "ones and performs every other creation itself"})}});
    rules.push_back(
        {{"rule", policy::HostExecutedRuleText()},
         {"why", "host-executed content"},
         {"enforced_by",
          json::array({"the check after the run: what the run made or changed is moved to "
                       "the quarantine (ward quarantine list)"})}});
  }
  // The proxy and the stub are there in every run; without a host they only refuse.
  const bool egress_allowed = !egress.empty() || p.approvals.enabled;
  const bool capture = plan.net.capture_port != 0;
  rules.push_back(
      {{"rule", egress_allowed && capture
                    ? "egress through the proxy, and by name to allowed hosts (transparent "
                      "capture: the DNS stub answers synthetic addresses the supervisor maps back)"
                : egress_allowed ? "egress through the proxy only"
                : plan.net.enabled
                    ? "no network (the proxy and the DNS stub refuse every host, and say why)"
                    : "no network"},
       {"why", capture ? "network.allow / network.deny / network.transparent"
                       : "network.allow / network.deny"},
       {"enforced_by",
        json::array({"network namespace: only lo",
                     capture ? "nftables in the sandbox's namespace: TCP to the synthetic ranges "
                               "redirected to the supervisor"
                             : "",
                     plan.landlock.abi >= 4 ? (plan.landlock.connect_any
                                                   ? "landlock: TCP bind ports (connect: any port, "
                                                     "a rule allows host:*)"
                                                   : "landlock: TCP ports")
                                            : "",
                     "seccomp: socket families unix, inet, inet6 only"})}});
  rules.push_back({{"rule", "environment from an allow list"},
                   {"why", "env.pass / env.set"},
                   {"enforced_by", json::array({"supervisor: builds the environment"})}});
  return rules;
}

// What the axes say of the run besides the plan's figures.
struct AxesInput {
  const ExplainInput& in;
  const enforce::KernelFeatures& f;
  const enforce::LaunchPlan& plan;
  const enforce::SeccompSummary& sc;
  const net::EgressRules& egress;
  const BoundPaths& bound;
  int protected_existing;
};

// The eight axes a sandbox is compared on, as this run has them.
json AxesJson(const AxesInput& a) {
  const policy::Policy& p = *a.in.policy;
  const enforce::SeccompSummary& sc = a.sc;
  std::vector<std::string> env_names;
  for (const auto& e : a.in.env) env_names.push_back(e.substr(0, e.find('=')));
  std::vector<std::string> creds;
  for (const auto& [name, c] : p.credentials) {
    if (c.enabled) creds.push_back(name);
  }
  std::vector<std::string> allowed_hosts;
  for (const auto& r : p.network.allow) allowed_hosts.push_back(r.pattern);
  json axes;
  axes["enforcement_layer"] = {
      {"summary", "Linux kernel: namespaces + mount view + landlock + seccomp + no capabilities"},
      {"kernel", a.f.kernel_release},
      {"landlock_abi", a.f.landlock_abi},
      {"outer_wall", a.f.outer_wall.empty() ? "none detected" : a.f.outer_wall}};
  axes["granularity"] = {{"summary", a.in.granularity}};
  axes["escape_resistance"] = {
      {"summary",
       "shared kernel; reduced syscall surface; nothing of the host mounted beyond "
       "the listed paths"},
      {"syscalls_denied", sc.denied},
      {"syscalls_trapped", sc.notified},
      {"syscalls_killed", sc.killed},
      {"syscalls_allowed", sc.allowed},
      {"mounts", a.plan.mount.ops.size() + a.plan.mount.masks.size()},
      {"host_unix_sockets_visible", "none (private /tmp, no /run)"},
      {"network", "own namespace with only lo"}};
  axes["authority_scope"] = {{"readable", a.bound.readable},
                             {"writable_roots", a.bound.writable},
                             {"private_scratch", json::array({"/tmp", p.home})},
                             {"protected_paths", a.plan.mount.protect.relpaths.size()},
                             {"protected_existing", a.protected_existing},
                             {"credentials_bound", creds},
                             {"env_passed", env_names}};
  axes["egress_and_mediation"] = {
      {"hosts_allowed", allowed_hosts},
      {"transparent", a.plan.net.capture_port != 0},
      {"request_rules", a.in.policy->network.rules.size()},
      {"broker", !a.egress.empty()     ? "the supervisor's egress proxy"
                 : p.approvals.enabled ? "the supervisor's egress proxy (every host asked)"
                                       : "none: no network at all"},
      {"approvals", ApprovalsText(a.in, p)}};
  axes["trust_direction"] = {
      {"summary",
       "protects the host, your files and secrets from the command; the command "
       "receives no secret (only phantoms, when credentials are bound)"}};
  axes["persistence"] = {{"survives", a.bound.writable},
                         {"discarded", json::array({"/tmp", p.home + " (private HOME)", "/dev/shm",
                                                    "processes (killed with the sandbox)"})},
                         {"audit", p.audit ? "the session's audit log (outside the sandbox's view)"
                                           : "none (--no-audit)"}};
  axes["boundary_mutability"] = {
      {"summary",
       "monotonic: fixed before the command starts; .ward.toml can only narrow; "
       "grants only through the approval broker outside the sandbox"},
      {"approvals", p.approvals.enabled}};
  return axes;
}

}  // namespace

json LandlockGapsJson(const std::vector<enforce::LandlockGap>& gaps) {
  return JsonArray(gaps.size(), [&](size_t i) -> json {
    const enforce::LandlockGap& g = gaps[i];
    return JsonObject()("right", g.feature->right)("abi", g.feature->abi)(
        "kernel", g.feature->kernel)("guarantee", g.feature->guarantee)(
        "decision", enforce::LandlockGapDecisionName(g.decision))("covered_by", g.covered_by)(
        "why", g.why);
  });
}

Result<json> Explain(const ExplainInput& in, const enforce::KernelFeatures& f) {
  enforce::PlanInput pi;
  pi.argv = in.argv.empty() ? std::vector<std::string>{"COMMAND"} : in.argv;
  pi.env = in.env;
  enforce::PlanNotes notes;
  WARD_ASSIGN_OR_RETURN(enforce::LaunchPlan plan, enforce::PlanLaunch(*in.policy, f, pi, &notes));
  WARD_ASSIGN_OR_RETURN(net::EgressRules egress, net::EgressRules::Compile(in.policy->network));
  PlanTransparentCapture(*in.policy, egress, &plan);
  return ExplainPlan(in, f, plan, notes);
}

Result<json> ExplainPlan(const ExplainInput& in, const enforce::KernelFeatures& f,
                         const enforce::LaunchPlan& plan, const enforce::PlanNotes& notes) {
  const policy::Policy& p = *in.policy;
  WARD_ASSIGN_OR_RETURN(net::EgressRules egress, net::EgressRules::Compile(p.network));
  enforce::SeccompSummary sc;
  if (plan.seccomp_enabled) sc = enforce::SummarizeSeccomp(plan.seccomp);

  json j;
  j["ward_version"] = in.version;
  j["command"] = in.argv;
  j["policy"] = policy::PolicyToJson(p);
  BoundPaths bound;
  const int protected_existing = CountExistingProtected(plan);
  j["plan"] = PlanJson(plan, notes, protected_existing, &bound);
  json limits;
  j["layers"] = LayersJson(in, plan, notes, sc, &limits);
  if (!in.record_only) j["limits"] = std::move(limits);
  j["landlock_gaps"] = LandlockGapsJson(notes.landlock_gaps);
  if (!in.record_only) {
    j["rules"] = RulesJson(p, plan, egress);
    j["credentials"] = EnabledCredentialsJson(p);
  }
  j["axes"] = AxesJson({in, f, plan, sc, egress, bound, protected_existing});
  if (!in.record_only) {
    j["seccomp"] = {{"denied", sc.denied_names}, {"trapped", sc.notified_names}};
  }
  return j;
}

std::string RenderExplain(const json& j) {
  std::ostringstream o;
  const json& p = j["policy"];
  o << "ward explain — profile \"" << p["profile"].get<std::string>() << "\"";
  for (const auto& s : p["sources"]) {
    o << "\n  source " << s["origin"].get<std::string>() << " " << s["name"].get<std::string>()
      << " sha256:" << s["sha256"].get<std::string>().substr(0, 16);
  }
  o << "\n  workspace " << j["plan"]["workspace"].get<std::string>() << " ("
    << p["workspace"]["access"].get<std::string>() << ")\n";
  if (p["workspace"].contains("anyway")) {
    o << "    accepted with --workspace-anyway: " << p["workspace"]["anyway"].get<std::string>()
      << "\n";
  }

  o << "\nLayers\n";
  for (const auto& l : j["layers"]) {
    o << "  " << (l["applied"].get<bool>() ? "[on]  " : "[off] ") << l["layer"].get<std::string>()
      << ": " << l["detail"].get<std::string>() << "\n";
  }
  o << "\nFilesystem view\n";
  for (const auto& m : j["plan"]["mounts"]) {
    std::string kind = m["kind"];
    o << "  " << m["target"].get<std::string>();
    if (kind == "symlink") {
      o << " -> " << m["to"].get<std::string>();
    } else if (m.contains("access")) {
      o << "  " << m["access"].get<std::string>();
    } else {
      o << "  " << kind;
    }
    o << "   [" << m["why"].get<std::string>() << "]\n";
  }
  for (const auto& m : j["plan"]["masks"]) {
    o << "  " << m["path"].get<std::string>() << "  hidden   [" << m["why"].get<std::string>()
      << "]\n";
  }
  const json& prot = j["plan"]["protected"];
  if (!prot["relpaths"].empty()) {
    o << "  protected below writable roots (read-only, not creatable): ";
    bool first = true;
    for (const auto& r : prot["relpaths"]) {
      o << (first ? "" : " ") << r.get<std::string>();
      first = false;
    }
    o << "\n  host-executed content a run makes elsewhere (new repositories' hooks and config, "
         "these names at any depth): moved to the quarantine after the run\n";
  }
  for (const auto& s : j["plan"]["skipped"]) o << "  skipped: " << s.get<std::string>() << "\n";
  for (const auto& s : j["plan"]["degraded"]) o << "  DEGRADED: " << s.get<std::string>() << "\n";

  o << "\nRules and the layers that enforce them\n";
  for (const auto& r : j["rules"]) {
    o << "  " << r["rule"].get<std::string>() << "   [" << r["why"].get<std::string>() << "]\n";
    for (const auto& b : r["enforced_by"]) {
      if (!b.get<std::string>().empty()) o << "      - " << b.get<std::string>() << "\n";
    }
  }

  const json& a = j["axes"];
  auto list = [](const json& arr) {
    std::string s;
    for (const auto& x : arr) s += (s.empty() ? "" : ", ") + x.get<std::string>();
    return s.empty() ? std::string("none") : s;
  };
  o << "\nThe eight axes\n";
  o << "  1. enforcement layer: " << a["enforcement_layer"]["summary"].get<std::string>()
    << " (kernel " << a["enforcement_layer"]["kernel"].get<std::string>() << ", Landlock ABI "
    << a["enforcement_layer"]["landlock_abi"].get<int>()
    << "); outer wall: " << a["enforcement_layer"]["outer_wall"].get<std::string>() << "\n";
  o << "  2. granularity: " << a["granularity"]["summary"].get<std::string>() << "\n";
  const json& e = a["escape_resistance"];
  o << "  3. escape resistance: " << e["summary"].get<std::string>() << "; syscalls "
    << e["syscalls_denied"].get<int>() << " denied, " << e["syscalls_trapped"].get<int>()
    << " trapped, " << e["syscalls_killed"].get<int>() << " killed, "
    << e["syscalls_allowed"].get<int>() << " allowed; " << e["mounts"].get<size_t>()
    << " mounts; host unix sockets: " << e["host_unix_sockets_visible"].get<std::string>() << "\n";
  const json& s = a["authority_scope"];
  o << "  4. authority scope: readable " << list(s["readable"]) << "; writable "
    << list(s["writable_roots"]) << "; private scratch " << list(s["private_scratch"]) << "; "
    << s["protected_paths"].get<size_t>() << " protected names ("
    << s["protected_existing"].get<int>() << " present); credentials "
    << list(s["credentials_bound"]) << "; env " << list(s["env_passed"]) << "\n";
  const json& g = a["egress_and_mediation"];
  o << "  5. egress and mediation: hosts " << list(g["hosts_allowed"]) << "; broker "
    << g["broker"].get<std::string>()
    << (g.value("transparent", false) ? " (proxy variables, and transparent by name)" : "")
    << (g.value("request_rules", 0) > 0
            ? "; " + std::to_string(g.value("request_rules", 0)) +
                  " method and path rules (their hosts' requests checked one by one)"
            : "")
    << "; approvals " << g["approvals"].get<std::string>()
    << "\n";
  if (j.contains("credentials")) {
    for (const auto& c : j["credentials"]) {
      o << "     credential " << c["name"].get<std::string>() << ": phantom in "
        << (c["env"].is_string() ? c["env"].get<std::string>() : std::string("(no variable)"))
        << ", real value (" << c["from"].get<std::string>() << ") only to " << list(c["hosts"]);
      if (c["route"].is_string()) o << ", route /" << c["route"].get<std::string>();
      o << "\n";
    }
  }
  o << "  6. trust direction: " << a["trust_direction"]["summary"].get<std::string>() << "\n";
  o << "  7. persistence: survives " << list(a["persistence"]["survives"]) << "; discarded "
    << list(a["persistence"]["discarded"]) << "; audit "
    << a["persistence"]["audit"].get<std::string>() << "\n";
  o << "  8. boundary mutability: " << a["boundary_mutability"]["summary"].get<std::string>()
    << "\n";
  return o.str();
}

}  // namespace ward::supervisor
