// `ward why [run options] PATH|HOST[:PORT]...`: which rule decides what the sandbox sees at a
// path, or whether it may reach a host, naming the rule's file and line.
// Exit status: 0 when every target is visible/allowed, 1 when any is hidden/denied, 125 on error.
#include <limits.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/host_paths.h"
#include "cli/run_options.h"
#include "enforce/plan.h"
#include "net/egress_rules.h"
#include "net/idna.h"
#include "policy/decide.h"
#include "policy/policy_json.h"

namespace ward::cli {
namespace {

struct WhyOptions {
  RunOptions run;
  bool json = false;
  std::vector<std::string> targets;
};

bool LooksLikePath(const std::string& t) {
  return !t.empty() &&
         (t[0] == '/' || t[0] == '.' || t[0] == '~' || t.find('/') != std::string::npos);
}

std::string CanonicalPath(const std::string& raw, const std::string& home) {
  std::string p = raw;
  if (p == "~" || p.rfind("~/", 0) == 0) p = home + p.substr(1);
  if (p[0] != '/') {
    char cwd[PATH_MAX];
    if (getcwd(cwd, sizeof cwd)) p = std::string(cwd) + "/" + p;
  }
  p = enforce::NormalizePath(p);
  // Resolve symlinks of the longest existing prefix, as the sandbox's mounts would.
  std::string rest;
  std::string head = p;
  char buf[PATH_MAX];
  while (head != "/" && realpath(head.c_str(), buf) == nullptr) {
    size_t slash = head.find_last_of('/');
    rest = head.substr(slash) + rest;
    head = slash == 0 ? "/" : head.substr(0, slash);
  }
  std::string base = head == "/" ? "" : (realpath(head.c_str(), buf) ? std::string(buf) : head);
  return enforce::NormalizePath(base + rest);
}

// The flag that would allow a denied host: "-n HOST" (with the port when it is not one the bare
// name allows); "" when the host is allowed, or denied by a rule (a deny rule wins over every
// -n, and is there on purpose) or not a valid name.
std::string AllowWith(const net::EgressRules::Decision& d, const std::string& host,
                      uint16_t port) {
  if (d.allowed || !d.rule.empty() || !net::ParseHost(host).ok()) return "";
  const bool v6 = host.find(':') != std::string::npos;
  const std::string shown = v6 ? "[" + host + "]" : host;
  if (port == 80 || port == 443) return "-n " + (v6 ? shown + ":" + std::to_string(port) : host);
  return "-n " + shown + ":" + std::to_string(port);
}

int RunWhy(const WhyOptions& opts) {
  Result<policy::Policy> pol = LoadEffectivePolicy(opts.run);
  if (!pol.ok()) {
    std::fprintf(stderr, "ward: %s\n", pol.status().ToString().c_str());
    return 125;
  }
  Result<net::EgressRules> egress = net::EgressRules::Compile(pol->network);
  if (!egress.ok()) {
    std::fprintf(stderr, "ward: %s\n", egress.status().ToString().c_str());
    return 125;
  }
  bool all_ok = true;
  nlohmann::json out = nlohmann::json::array();
  for (const std::string& t : opts.targets) {
    if (LooksLikePath(t)) {
      std::string path = CanonicalPath(t, pol->home);
      policy::PathDecision d = policy::DecidePath(*pol, path, NestedRepoRootsOnHost(*pol, path),
                                                     /*infer_nested_repos=*/false);
      bool visible = d.visibility != policy::PathDecision::Visibility::kHidden;
      all_ok = all_ok && visible;
      nlohmann::json j = {{"target", t},
                          {"path", path},
                          {"visibility", policy::VisibilityName(d.visibility)},
                          {"host_file", d.host_file},
                          {"protected", d.is_protected},
                          {"host_executed", d.host_executed},
                          {"masked", d.masked},
                          {"via", d.via},
                          {"reason", d.reason}};
      if (d.rule) j["rule"] = policy::OriginToJson(*d.rule);
      out.push_back(j);
      if (!opts.json) {
        std::printf("%s: %s%s%s\n  via: %s\n  why: %s\n", path.c_str(),
                    policy::VisibilityName(d.visibility), d.is_protected ? " (protected)" : "",
                    visible && !d.host_file ? " (private to the sandbox, not the host's file)" : "",
                    d.via.c_str(), d.reason.c_str());
      }
    } else {
      std::string host = t;
      uint16_t port = 443;
      size_t colon = t.rfind(':');
      if (colon != std::string::npos && t.find(']') == std::string::npos
              ? t.find(':') == colon
              : (colon != std::string::npos && colon > t.find(']'))) {
        host = t.substr(0, colon);
        port = static_cast<uint16_t>(std::atoi(t.c_str() + colon + 1));
      }
      if (!host.empty() && host.front() == '[' && host.back() == ']') {
        host = host.substr(1, host.size() - 2);
      }
      net::EgressRules::Decision d = egress->CheckName(host, port);
      all_ok = all_ok && d.allowed;
      const std::string allow_with = AllowWith(d, host, port);
      nlohmann::json j = {{"target", t},          {"host", host},   {"port", port},
                          {"allowed", d.allowed}, {"rule", d.rule}, {"reason", d.reason}};
      if (!d.rule.empty()) j["origin"] = policy::OriginToJson(d.origin);
      if (!allow_with.empty()) j["allow_with"] = allow_with;
      out.push_back(j);
      if (!opts.json) {
        std::printf("%s:%u: %s\n  why: %s\n", host.c_str(), port, d.allowed ? "allowed" : "denied",
                    d.reason.c_str());
        if (!allow_with.empty()) std::printf("  allow with: %s\n", allow_with.c_str());
      }
    }
  }
  if (opts.json) std::printf("%s\n", out.dump(2).c_str());
  return all_ok ? 0 : 1;
}

}  // namespace

void AddWhyCommand(CLI::App& app, int* exit_code) {
  auto opts = std::make_shared<WhyOptions>();
  CLI::App* sub = app.add_subcommand(
      "why", "Say which rule decides a PATH (what the sandbox sees there) or a HOST[:PORT]");
  AddRunOptions(sub, &opts->run, RunOptionHelp::kWhy);
  sub->add_flag("--json", opts->json, "Machine-readable output");
  sub->add_option("target", opts->targets, "PATH or HOST[:PORT] (repeatable)")->required();
  sub->callback([opts, exit_code] { *exit_code = RunWhy(*opts); });
}

}  // namespace ward::cli
