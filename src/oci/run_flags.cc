#include "oci/run_flags.h"

#include <cstdio>

namespace ward::oci {
namespace {

// quota/period as cores, the way --cpu takes them ("0.5", "2").
std::string Cores(uint64_t quota_us, uint64_t period_us) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g", static_cast<double>(quota_us) / static_cast<double>(period_us));
  return buf;
}

}  // namespace

ContainerChoices ChoicesFor(const Bundle& bundle, const policy::OciDefaults& node) {
  ContainerChoices c;
  const WardAnnotations& w = bundle.ward;
  c.approver = w.approver.empty() ? node.approver : w.approver;
  c.audit_dir = w.audit_dir.empty() ? node.audit_dir : w.audit_dir;
  policy::RunFlags& f = c.flags;
  f.profile = w.profile.empty() ? node.profile : w.profile;
  f.allow_net = w.allow_net;
  f.deny_net = w.deny_net;
  f.credentials = w.credentials;
  if (!c.approver.empty()) f.approvals = true;
  const Resources& r = bundle.config.resources;
  if (r.memory_limit) f.memory = std::to_string(*r.memory_limit);
  if (r.pids_limit) f.pids = std::to_string(*r.pids_limit);
  if (r.cpu_quota_us && r.cpu_period_us) f.cpu = Cores(*r.cpu_quota_us, *r.cpu_period_us);
  return c;
}

}  // namespace ward::oci
