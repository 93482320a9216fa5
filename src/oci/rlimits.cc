#include "oci/rlimits.h"

#include <linux/capability.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <utility>

#include "common/linux.h"

namespace ward::oci {
namespace {

constexpr std::pair<const char*, int> kResources[] = {
    {"RLIMIT_AS", RLIMIT_AS},           {"RLIMIT_CORE", RLIMIT_CORE},
    {"RLIMIT_CPU", RLIMIT_CPU},         {"RLIMIT_DATA", RLIMIT_DATA},
    {"RLIMIT_FSIZE", RLIMIT_FSIZE},     {"RLIMIT_LOCKS", RLIMIT_LOCKS},
    {"RLIMIT_MEMLOCK", RLIMIT_MEMLOCK}, {"RLIMIT_MSGQUEUE", RLIMIT_MSGQUEUE},
    {"RLIMIT_NICE", RLIMIT_NICE},       {"RLIMIT_NOFILE", RLIMIT_NOFILE},
    {"RLIMIT_NPROC", RLIMIT_NPROC},     {"RLIMIT_RSS", RLIMIT_RSS},
    {"RLIMIT_RTPRIO", RLIMIT_RTPRIO},   {"RLIMIT_RTTIME", RLIMIT_RTTIME},
    {"RLIMIT_SIGPENDING", RLIMIT_SIGPENDING}, {"RLIMIT_STACK", RLIMIT_STACK},
};

std::string Limit(uint64_t v) { return v == RLIM_INFINITY ? "unlimited" : std::to_string(v); }

}  // namespace

Result<std::vector<PlannedRlimit>> PlanRlimits(const std::vector<Rlimit>& asked,
                                               const std::function<bool(int, rlimit*)>& current,
                                               bool can_raise) {
  std::vector<PlannedRlimit> out;
  for (const Rlimit& a : asked) {
    auto known = std::find_if(std::begin(kResources), std::end(kResources),
                              [&](const auto& r) { return a.type == r.first; });
    if (known == std::end(kResources)) {
      return InvalidArgument("config.json: process.rlimits: " + a.type +
                             " is not a resource limit this kernel has");
    }
    PlannedRlimit p;
    p.resource = known->second;
    p.name = a.type;
    p.asked_soft = a.soft;
    p.asked_hard = a.hard;
    p.soft = a.soft;
    p.hard = a.hard;
    rlimit now = {};
    if (!can_raise && current(p.resource, &now) && now.rlim_max != RLIM_INFINITY &&
        (a.hard == RLIM_INFINITY || a.hard > now.rlim_max)) {
      p.hard = now.rlim_max;
      p.soft = std::min<rlim_t>(p.soft, p.hard);
      p.clamped = true;
    }
    out.push_back(std::move(p));
  }
  return out;
}

Result<std::vector<PlannedRlimit>> PlanRlimitsHere(const std::vector<Rlimit>& asked) {
  sys::CapHeader hdr;
  sys::CapData data[2] = {};
  const bool can_raise = ::syscall(SYS_capget, &hdr, data) == 0 &&
                         (data[CAP_SYS_RESOURCE / 32].permitted & (1u << (CAP_SYS_RESOURCE % 32)));
  return PlanRlimits(
      asked, [](int resource, rlimit* l) { return getrlimit(resource, l) == 0; }, can_raise);
}

std::string DescribeClamp(const PlannedRlimit& r) {
  return r.name + " " + Limit(r.asked_soft) + ":" + Limit(r.asked_hard) + " clamped to " +
         Limit(r.soft) + ":" + Limit(r.hard) +
         " (the hard limit ward may set here: raising it needs CAP_SYS_RESOURCE)";
}

}  // namespace ward::oci
