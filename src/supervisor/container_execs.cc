#include "supervisor/container_execs.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/socket.h>

#include <cerrno>
#include <utility>

namespace ward::supervisor {

using enforce::ExecMsg;
using enforce::ExecMsgType;

ContainerExecs::ContainerExecs(asio::io_context& io, int listener, EventSink* events,
                               std::string socket_path)
    : io_(io),
      listener_(io, fcntl(listener, F_DUPFD_CLOEXEC, 3)),
      relay_(io),
      gate_(std::move(socket_path), events) {
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0, sv) == 0) {
    relay_.assign(sv[0]);
    relay_end_.reset(sv[1]);
  }
}

ContainerExecs::~ContainerExecs() = default;

UniqueFd ContainerExecs::TakeRelayEnd() { return std::move(relay_end_); }

void ContainerExecs::Start() {
  Accept();
  WaitRelay();
}

void ContainerExecs::Accept() {
  listener_.async_wait(asio::posix::descriptor_base::wait_read, [this](const asio::error_code& ec) {
    if (ec) return;
    OnAccept();
    Accept();
  });
}

// Each connection is one exec, from a process of the engine (our uid, our namespaces: nothing
// inside a sandbox), which may then signal it and waits for its end.
void ContainerExecs::OnAccept() {
  while (true) {
    UniqueFd conn(accept4(listener_.native_handle(), nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK));
    if (!conn) return;
    if (!gate_.Admit(conn.get()).admitted) continue;
    if (connections_.size() >= kMaxExecs) continue;  // closed unread: the client sees a reset
    const uint64_t id = next_id_++;
    connections_[id] = std::make_unique<Connection>(io_, std::move(conn));
    Wait(id);
  }
}

void ContainerExecs::Wait(uint64_t id) {
  auto it = connections_.find(id);
  if (it == connections_.end()) return;
  it->second->sock.async_wait(asio::posix::descriptor_base::wait_read,
                              [this, id](const asio::error_code& ec) {
                                if (!ec) OnConnectionMessage(id);
                              });
}

// The connection's first start is its exec (under this side's id); later ones are refused.
// Signals go to it once it was asked for. A closed connection kills what it asked for.
void ContainerExecs::OnConnectionMessage(uint64_t id) {
  auto found = connections_.find(id);
  if (found == connections_.end()) return;  // closed by its end while this wait was queued
  Connection* c = found->second.get();
  bool refused = false;
  const bool open =
      enforce::ForEachExecMsg(c->sock.native_handle(), [&](const ExecMsg& in, UniqueFd fds[4]) {
        ExecMsg m = in;
        m.id = id;
        if (m.type == ExecMsgType::kStart && !c->asked && !stopped_.empty()) {
          // Refused once its request was read: closing a socket with a message unread would
          // reset the connection before the client could read why.
          Fail(c->sock.native_handle(), stopped_);
          refused = true;
          return false;
        }
        if (m.type == ExecMsgType::kStart && !c->asked) {
          const int attached[4] = {fds[0].get(), fds[1].get(), fds[2].get(), fds[3].get()};
          c->asked = enforce::SendExecMsg(relay_.native_handle(), m, attached, 4) == 0;
          if (!c->asked) Fail(c->sock.native_handle(), "the exec relay did not take it");
        } else if (m.type == ExecMsgType::kSignal && c->asked) {
          enforce::SendExecMsg(relay_.native_handle(), m);
        }
        return true;
      });
  if (refused) return Close(id);
  if (open) return Wait(id);
  if (c->asked) {
    ExecMsg kill;
    kill.type = ExecMsgType::kSignal;
    kill.id = id;
    kill.value = SIGKILL;
    enforce::SendExecMsg(relay_.native_handle(), kill);
  }
  Close(id);
}

void ContainerExecs::Close(uint64_t id) { connections_.erase(id); }

void ContainerExecs::WaitRelay() {
  relay_.async_wait(asio::posix::descriptor_base::wait_read, [this](const asio::error_code& ec) {
    if (ec) return;
    OnRelayMessage();
    WaitRelay();
  });
}

// The relay's answers, to the connection whose id they carry; its end closes it.
void ContainerExecs::OnRelayMessage() {
  enforce::ForEachExecMsg(relay_.native_handle(), [this](const ExecMsg& m, UniqueFd fds[4]) {
    auto it = connections_.find(m.id);
    if (it == connections_.end()) return true;
    const int sock = it->second->sock.native_handle();
    const int attached = fds[0].get();
    enforce::SendExecMsg(sock, m, fds[0] ? &attached : nullptr, fds[0] ? 1 : 0);
    if (m.type == ExecMsgType::kFailed || m.type == ExecMsgType::kExited) Close(m.id);
    return true;
  });
}

void ContainerExecs::Stop(const std::string& why) {
  if (!stopped_.empty()) return;
  stopped_ = "the container's exec server ended (" + why + ")";
  // Those whose request was not read yet are refused when it is (OnConnectionMessage).
  for (auto it = connections_.begin(); it != connections_.end();) {
    if (!it->second->asked) {
      ++it;
      continue;
    }
    Fail(it->second->sock.native_handle(), stopped_);
    it = connections_.erase(it);
  }
}

void ContainerExecs::Fail(int sock, const std::string& why) {
  ExecMsg out;
  out.type = ExecMsgType::kFailed;
  out.value = 125;
  out.error.Set("container", 0, why.c_str());
  enforce::SendExecMsg(sock, out);
}

}  // namespace ward::supervisor
