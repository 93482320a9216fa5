// ward's policy for one container, from its annotations (`run.ward/...`): how a Kubernetes pod or
// an engine's `--annotation` chooses the profile, the egress allow and deny lists, the
// credentials (whose sources are on the node), the approver, where the audit trail goes and
// the ports a pod's network may connect to.
// Annotations of other prefixes are the engine's and are left alone; an unknown `run.ward/` key
// is refused, so that a misspelt rule never runs as no rule.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "common/status.h"

namespace ward::oci {

inline constexpr const char* kAnnotationPrefix = "run.ward/";

struct WardAnnotations {
  std::string profile;                   // run.ward/profile ("" = the node's default)
  std::vector<std::string> allow_net;    // run.ward/allow-net: HOST[:PORT], comma-separated
  std::vector<std::string> deny_net;     // run.ward/deny-net
  std::vector<std::string> credentials;  // run.ward/credentials: names defined on the node
  std::string approver;                  // run.ward/approver: a webhook URL
  std::string audit_dir;                 // run.ward/audit-dir: absolute
  // run.ward/allow-socket-bind: host sockets the container may have bound in (by path), e.g.
  // the Docker socket; any other bind of a socket is refused.
  std::vector<std::string> socket_binds;
  // run.ward/expose: TCP ports ("8080, 9090" or "8080/tcp") that connections from the pod's
  // network reach on the container's loopback (a Service, the kubelet's probes); in order,
  // each once.
  std::vector<uint16_t> expose;
};

// The keys ward knows, for error messages and `ward oci features`.
const std::vector<std::string>& KnownAnnotations();

Result<WardAnnotations> ParseAnnotations(const std::map<std::string, std::string>& annotations);

}  // namespace ward::oci
