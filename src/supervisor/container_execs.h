// A container's execs (`ward oci exec`): each connection to the container's exec socket (in its
// state directory, reachable by the engine's uid only, never from inside) asks for one exec in
// the exec channel's messages (enforce/exec_wire.h), with its stdin, stdout and stderr
// attached. The requests go to the container's exec relay under ids of the supervisor's own
// (ExecRelay: checked, recorded, run by the exec server beside the command), and the exec's
// start, signals and end pass between the two. A connection that closes while its exec runs
// kills the exec: the process the engine waits for and signals (ward oci exec's) is gone.
#pragma once

#include <asio.hpp>
#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include "common/events.h"
#include "common/socket_peer.h"
#include "common/unique_fd.h"
#include "enforce/exec_wire.h"

namespace ward::supervisor {

class ContainerExecs {
 public:
  // `listener`: the exec socket's (SOCK_SEQPACKET, non-blocking) at `socket_path`; this takes a
  // copy of it. Refused peers are recorded in `events` (may be null).
  ContainerExecs(asio::io_context& io, int listener, EventSink* events, std::string socket_path);
  ~ContainerExecs();
  // The relay's client end (ExecRelay's `client`); once.
  UniqueFd TakeRelayEnd();
  void Start();
  // The exec server is gone: every exec still waited for fails with `why`, and so does every
  // later request.
  void Stop(const std::string& why);

  // At most this many connections at once; one beyond them is closed at once.
  static constexpr size_t kMaxExecs = 256;

 private:
  struct Connection {
    explicit Connection(asio::io_context& io, UniqueFd fd) : sock(io, fd.release()) {}
    asio::posix::stream_descriptor sock;
    bool asked = false;  // its start was passed on: the relay knows its id
  };
  void Accept();
  void OnAccept();
  void Wait(uint64_t id);
  void OnConnectionMessage(uint64_t id);
  void Close(uint64_t id);
  void WaitRelay();
  void OnRelayMessage();
  static void Fail(int sock, const std::string& why);

  asio::io_context& io_;
  asio::posix::stream_descriptor listener_;
  asio::posix::stream_descriptor relay_;
  UniqueFd relay_end_;  // until TakeRelayEnd
  PeerGate gate_;
  std::map<uint64_t, std::unique_ptr<Connection>> connections_;
  uint64_t next_id_ = 1;
  std::string stopped_;  // why, once the exec server is gone
};

}  // namespace ward::supervisor
