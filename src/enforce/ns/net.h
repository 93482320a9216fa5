// The sandbox's network namespace: only `lo` exists, brought up, and (when the plan has the
// egress proxy) the proxy's and DNS stub's listening sockets on 127.0.0.1, served from outside.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "common/status.h"
#include "common/unique_fd.h"
#include "enforce/control.h"
#include "enforce/spec.h"

namespace ward::enforce {

// Brings up `lo` in the calling thread's network namespace. Returns 0 or -errno; with `netns`,
// also stores an fd of that namespace there (O_CLOEXEC), or -1 when the kernel gave none.
int BringUpLoopback(int* netns = nullptr);

struct SandboxNet {
  UniqueFd netns;                                    // for init's setns (see MsgType::kNetns)
  std::vector<std::pair<FdKind, UniqueFd>> sockets;  // listening inside, served from outside
  // The namespace's own IP counters (/proc/net/snmp and snmp6 as seen inside), opened there:
  // read after the run by CountUnroutedSends. -1 where /proc did not give them.
  UniqueFd snmp, snmp6;
  // Transparent capture (NetSpec::capture_port): why it is off although planned ("" when it is
  // on or was not planned), and whether it covers IPv6.
  std::string capture_error;
  bool capture_v6 = false;
};

// How many sends of the sandbox found no route out of its namespace (the kernel's OutNoRoutes
// counters: UDP datagrams and ICMP to any address but loopback, and the TCP connects Landlock
// let through), from the files SandboxNet::snmp/snmp6 opened. The direct attempts ward can
// count; it never learns where they went. Only the sandbox's processes send from there.
uint64_t CountUnroutedSends(int snmp, int snmp6);

// Makes the sandbox's network namespace from the supervisor while init builds the root.
// Creating one is the costliest namespace by far (every network subsystem registers itself:
// ~0.6 ms here), and inside clone3 it held up sandbox init's start. A short-lived helper task
// joins init's user namespace, so that the new namespace is owned by it exactly as if init had
// made it, unshares the network namespace, brings up lo and opens the sockets `net` plans.
// Init joins the namespace before it writes its sysctls (user.max_net_namespaces = 0 among
// them) and before the command starts. `userns` names init's user namespace (its pidfd, or its
// /proc ns file); -1 when init has none of its own (LaunchPlan::user_ns). The caller must be
// single-threaded.
Result<SandboxNet> CreateSandboxNet(int userns, const NetSpec& net);

}  // namespace ward::enforce
