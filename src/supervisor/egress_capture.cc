#include "supervisor/egress_capture.h"

#include <algorithm>

#include "net/synthetic_names.h"

namespace ward::supervisor {

std::string PlanTransparentCapture(const policy::Policy& policy, const net::EgressRules& rules,
                                   enforce::LaunchPlan* plan) {
  enforce::NetSpec& net = plan->net;
  net.capture_port = 0;
  if (!net.enabled) return "no egress";
  if (!policy.network.transparent) {
    return "network.transparent = false (" + policy.network.transparent_origin.ToString() + ")";
  }
  const net::EgressRules::NamePorts ports = rules.AllowedNamePorts();
  if (ports.empty()) return "no name is allowed";
  net.capture_port = kCapturePort;
  const net::IpNet& v4 = net::SyntheticNames::V4Range();
  const net::IpNet& v6 = net::SyntheticNames::V6Range();
  std::copy_n(v4.address().bytes().begin(), 4, net.capture_v4.begin());
  net.capture_v4_len = static_cast<uint8_t>(v4.prefix_len());
  net.capture_v6 = v6.address().bytes();
  net.capture_v6_len = static_cast<uint8_t>(v6.prefix_len());
  std::vector<uint16_t>& connect = plan->landlock.connect_tcp;
  for (uint16_t p : ports.ports) {
    if (std::find(connect.begin(), connect.end(), p) == connect.end()) connect.push_back(p);
  }
  plan->landlock.connect_any = ports.any;
  return "";
}

}  // namespace ward::supervisor
