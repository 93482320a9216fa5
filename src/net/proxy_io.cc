#include "net/proxy_io.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <array>
#include <cerrno>
#include <cstring>

namespace ward::net::internal {

Result<int> CheckServerSocket(int fd, int type) {
  if (fd < 0) return InvalidArgument("no socket");
  int value = 0;
  socklen_t len = sizeof value;
  if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &value, &len) != 0) return Errno("getsockopt(SO_TYPE)");
  if (value != type) return InvalidArgument("socket has the wrong type");
  if (type == SOCK_STREAM) {
    len = sizeof value;
    if (getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &value, &len) != 0) {
      return Errno("getsockopt(SO_ACCEPTCONN)");
    }
    if (!value) return InvalidArgument("socket is not listening");
  }
  len = sizeof value;
  if (getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &value, &len) != 0) {
    return Errno("getsockopt(SO_DOMAIN)");
  }
  if (value != AF_INET && value != AF_INET6) return InvalidArgument("not an IP socket");
  return value;
}

Result<asio::ip::tcp::socket> OpenTcpSocket(asio::io_context& ctx, int family) {
  int fd = ::socket(family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) return Errno("socket");
  asio::ip::tcp::socket sock(ctx);
  asio::error_code ec;
  sock.assign(family == AF_INET6 ? asio::ip::tcp::v6() : asio::ip::tcp::v4(), fd, ec);
  if (ec) {
    ::close(fd);
    return ErrnoError("socket", ec.value());
  }
  sock.non_blocking(true, ec);
  sock.set_option(asio::ip::tcp::no_delay(true), ec);
  return sock;
}

int AcceptNonBlocking(int listen_fd) {
  while (true) {
    int fd = ::accept4(listen_fd, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (fd >= 0 || errno != EINTR) return fd;
  }
}

asio::awaitable<void> AcceptEach(asio::ip::tcp::acceptor* acc, int burst,
                                 const AcceptHandlers& handlers) {
  const auto& stopped = handlers.stopped;
  const auto& take = handlers.take;
  const auto& starved = handlers.starved;
  asio::steady_timer backoff(acc->get_executor());
  while (!stopped()) {
    asio::error_code ec;
    co_await acc->async_wait(asio::ip::tcp::acceptor::wait_read, Await(ec));
    if (stopped() || ec == asio::error::operation_aborted || !acc->is_open()) break;
    bool exhausted = false;
    for (int i = 0; i < burst && !stopped(); ++i) {
      const int fd = AcceptNonBlocking(acc->native_handle());
      if (fd >= 0) {
        take(fd);
        continue;
      }
      exhausted = errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM;
      // EAGAIN: drained. Anything else concerns one pending connection (ECONNABORTED, ...).
      if (errno == EAGAIN || exhausted) break;
    }
    if (exhausted) {
      if (starved) starved();
      backoff.expires_after(std::chrono::milliseconds(50));
      co_await backoff.async_wait(Await(ec));
    }
  }
}

asio::ip::tcp::endpoint ToEndpoint(const IpAddress& addr, uint16_t port) {
  IpAddress a = addr.Unmapped();
  if (a.is_v4()) return {asio::ip::address_v4(a.v4()), port};
  asio::ip::address_v6::bytes_type bytes;
  std::memcpy(bytes.data(), a.bytes().data(), 16);
  return {asio::ip::address_v6(bytes), port};
}

bool IsLoopbackBound(int fd) {
  sockaddr_storage ss{};
  socklen_t len = sizeof ss;
  if (getsockname(fd, reinterpret_cast<sockaddr*>(&ss), &len) != 0) return false;
  IpAddress addr;
  if (ss.ss_family == AF_INET) {
    addr = IpAddress::V4(ntohl(reinterpret_cast<const sockaddr_in*>(&ss)->sin_addr.s_addr));
  } else if (ss.ss_family == AF_INET6) {
    std::array<uint8_t, 16> bytes;
    std::memcpy(bytes.data(), &reinterpret_cast<const sockaddr_in6*>(&ss)->sin6_addr, 16);
    addr = IpAddress::V6(bytes);
  } else {
    return false;
  }
  return Classify(addr).cls == AddressClass::kLoopback;
}

Status SetCongestionControl(int fd, const std::string& name) {
  if (setsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, name.data(),
                 static_cast<socklen_t>(name.size())) != 0) {
    return Errno("setsockopt(TCP_CONGESTION, " + name + ")");
  }
  return Ok();
}

std::string CongestionControl(int fd) {
  char name[32] = {};
  socklen_t len = sizeof name - 1;
  if (getsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, name, &len) != 0) return "";
  return std::string(name, strnlen(name, len));
}

std::optional<Pipe> Pipe::Open(size_t wanted_capacity) {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC | O_NONBLOCK) != 0) return std::nullopt;
  Pipe p;
  p.read_end = UniqueFd(fds[0]);
  p.write_end = UniqueFd(fds[1]);
  // Best effort: beyond the user's pipe quota the kernel keeps the default size.
  fcntl(fds[1], F_SETPIPE_SZ, static_cast<int>(wanted_capacity));
  int size = fcntl(fds[1], F_GETPIPE_SZ);
  if (size <= 0) return std::nullopt;
  p.capacity = static_cast<size_t>(size);
  return p;
}

void SafeEmit(EventSink* sink, std::string_view type, nlohmann::json data) {
  if (sink == nullptr) return;
  try {
    sink->Emit(type, std::move(data));
  } catch (...) {
    // Losing one event beats losing the supervisor; sinks are not supposed to throw.
  }
}

asio::awaitable<Result<std::vector<IpAddress>>> ResolveWait::Run(std::shared_ptr<ResolveWait> self,
                                                                 Resolver* resolver,
                                                                 std::string name,
                                                                 Clock::time_point deadline) {
  if (self->cancelled_) co_return Status(Code::kUnavailable, "cancelled");
  self->timer_.expires_at(deadline);
  std::weak_ptr<ResolveWait> weak = self;
  resolver->Resolve(name, [weak](Result<std::vector<IpAddress>> r) {
    auto w = weak.lock();
    if (!w || w->result_ || w->cancelled_) return;
    w->result_.emplace(std::move(r));
    w->timer_.cancel();
  });
  // A resolver that answers inline (against its contract) must not cost a whole timeout.
  if (self->result_) co_return std::move(*self->result_);
  asio::error_code ec;
  co_await self->timer_.async_wait(Await(ec));
  if (self->result_) co_return std::move(*self->result_);
  if (self->cancelled_) co_return Status(Code::kUnavailable, "cancelled");
  co_return Status(Code::kTimeout, "resolving " + name + " timed out");
}

void ResolveWait::Cancel() {
  cancelled_ = true;
  timer_.cancel();
}

}  // namespace ward::net::internal
