// Who is at the other end of a socket ward serves on the host (a run's approval socket,
// `ward serve`'s socket), and whether ward answers it. A sandbox runs as our uid, so the uid
// alone cannot tell it from the user: a peer is answered only when it runs as our uid AND
// lives in our own pid, user and mount namespaces (every sandbox has its own). The peer's
// process is pinned before it is inspected (SO_PEERPIDFD; on kernels without it, by proving the
// process at that pid holds the connection's other end), so a reused pid cannot pass for it.
// Every socket ward listens on admits its peers through one PeerGate.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/events.h"
#include "common/status.h"

namespace ward {

struct PeerVerdict {
  bool admitted = false;
  pid_t pid = 0;                     // as SO_PEERCRED tells it (0: not visible from here)
  int64_t uid = -1;                  // -1: unknown
  std::vector<std::string> differs;  // the namespaces that are not ours: "pid", "user", "mnt"
  std::string reason;                // why it was refused (empty when admitted)
  bool hung_up = false;  // refused because the peer closed first: it asked nothing, not recorded
};

// How the peer's process is pinned while its namespaces are read.
enum class PeerPinning {
  kBest,         // SO_PEERPIDFD where the kernel has it, else kHoldsSocket
  kHoldsSocket,  // pidfd_open(pid), then prove that process holds the connection's other end
};

// Keeps the namespaces this process is in now as those peers are compared with from then on,
// for a process that is about to move into a mount namespace of its own (a container's
// supervisor in a pod's network, oci/pod_network.h) and still answers peers of the one it
// came from. Call it before any thread checks a peer.
Status KeepHomeNamespaces();

// Checks the peer of the connected unix stream socket `fd` against our uid and our own
// namespaces. Never throws; anything that cannot be told refuses.
PeerVerdict CheckSocketPeer(int fd, PeerPinning pinning = PeerPinning::kBest);

// The audit record of a refusal (`channel.peer_refused`).
inline constexpr std::string_view kPeerRefusedEvent = "channel.peer_refused";

// The one door of a listening socket: checks every accepted connection's peer, counts and
// audits the refusals. Thread-safe.
class PeerGate {
 public:
  // `socket` names the socket in the audit records (its path); `events` may be null.
  PeerGate(std::string socket, EventSink* events) : socket_(std::move(socket)), events_(events) {}

  // Checks `fd`'s peer; a refusal is counted and recorded (at most kMaxAudited records per gate,
  // then one saying the rest are only counted, so a flood cannot fill the audit trail), but not
  // that of a peer which hung up before it was checked.
  PeerVerdict Admit(int fd);
  uint64_t refused() const;
  void set_events(EventSink* events);

  static constexpr uint64_t kMaxAudited = 100;

 private:
  std::string socket_;
  mutable std::mutex mu_;
  EventSink* events_;
  uint64_t refused_ = 0;
};

// The record's data: {"socket", "pid", "uid", "differs", "reason"}.
nlohmann::json PeerRefusedData(const std::string& socket, const PeerVerdict& v);

}  // namespace ward
