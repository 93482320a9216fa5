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

policy::RunFlags RunFlagsFor(const Bundle& bundle, const std::string& node_profile) {
  policy::RunFlags f;
  f.profile = bundle.ward.profile.empty() ? node_profile : bundle.ward.profile;
  f.allow_net = bundle.ward.allow_net;
  f.deny_net = bundle.ward.deny_net;
  f.credentials = bundle.ward.credentials;
  f.approvals = bundle.ward.approver.empty() ? std::nullopt : std::optional<bool>(true);
  const Resources& r = bundle.config.resources;
  if (r.memory_limit) f.memory = std::to_string(*r.memory_limit);
  if (r.pids_limit) f.pids = std::to_string(*r.pids_limit);
  if (r.cpu_quota_us && r.cpu_period_us) f.cpu = Cores(*r.cpu_quota_us, *r.cpu_period_us);
  return f;
}

}  // namespace ward::oci
