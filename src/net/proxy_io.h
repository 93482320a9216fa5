// Internal to src/net: socket and coroutine helpers shared by the egress proxy and the DNS
// stub. Every descriptor is opened with O_CLOEXEC (asio's own accept and socket calls do not set
// it) and non-blocking.
#pragma once

// GCC 12 reports the class-specific operator new/delete pair of asio's coroutine frames as
// mismatched (a known false positive); every file with coroutines includes
// this header.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
#endif

#include <asio/awaitable.hpp>
#include <asio/detached.hpp>
#include <asio/io_context.hpp>
#include <asio/ip/tcp.hpp>
#include <asio/ip/udp.hpp>
#include <asio/redirect_error.hpp>
#include <asio/steady_timer.hpp>
#include <asio/use_awaitable.hpp>
#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/events.h"
#include "common/status.h"
#include "common/unique_fd.h"
#include "net/addr.h"
#include "net/resolver.h"

namespace ward::net::internal {

using Clock = std::chrono::steady_clock;

inline auto Await(asio::error_code& ec) { return asio::redirect_error(asio::use_awaitable, ec); }

// Checks that fd is a listening socket of `type` (SOCK_STREAM / SOCK_DGRAM); returns its family.
Result<int> CheckServerSocket(int fd, int type);

// A TCP socket for `family` (AF_INET / AF_INET6), close-on-exec and non-blocking.
Result<asio::ip::tcp::socket> OpenTcpSocket(asio::io_context& ctx, int family);

// accept4(CLOEXEC | NONBLOCK) on a non-blocking listener: a valid fd, or -1 with errno.
int AcceptNonBlocking(int listen_fd);

// Accepts on `acc` until it closes or `stopped()` holds, handing each connection (close-on-exec,
// non-blocking) to `take`: at most `burst` a wake-up, so that one listener cannot starve the
// loop's other work. Out of descriptors or memory, the pending connection stays queued and the
// loop pauses (after `starved()`, when given) rather than spin on it. The functions are the
// caller's (named locals of the awaiting coroutine: GCC 12 mishandles temporaries with
// destructors in a co_await's full expression).
struct AcceptHandlers {
  std::function<bool()> stopped;
  std::function<void(int fd)> take;
  std::function<void()> starved;  // may be empty
};
asio::awaitable<void> AcceptEach(asio::ip::tcp::acceptor* acc, int burst,
                                 const AcceptHandlers& handlers);

asio::ip::tcp::endpoint ToEndpoint(const IpAddress& addr, uint16_t port);

// Whether a bound socket's local address is a loopback one (127/8, ::1, v4-mapped 127/8).
bool IsLoopbackBound(int fd);

// TCP_CONGESTION; the connections a listener accepts inherit it.
Status SetCongestionControl(int fd, const std::string& name);
std::string CongestionControl(int fd);  // "" when unknown

// A pipe for splice(2): bulk transfers move from socket to socket through it without being
// copied into user space. Both ends close-on-exec and non-blocking.
struct Pipe {
  UniqueFd read_end, write_end;
  size_t capacity = 0;
  // nullopt when no pipe can be had (descriptors or the user's pipe quota exhausted).
  static std::optional<Pipe> Open(size_t wanted_capacity);
};

// Emits an event; a sink that throws (it must not) cannot take the supervisor down.
void SafeEmit(EventSink* sink, std::string_view type, nlohmann::json data);

// Waits for a Resolver answer until a deadline, cancellably: Cancel() (from any handler on the
// loop) ends the wait at once. The resolver's late answer is dropped.
class ResolveWait {
 public:
  explicit ResolveWait(const asio::any_io_executor& ex) : timer_(ex) {}
  static asio::awaitable<Result<std::vector<IpAddress>>> Run(std::shared_ptr<ResolveWait> self,
                                                             Resolver* resolver, std::string name,
                                                             Clock::time_point deadline);
  void Cancel();

 private:
  asio::steady_timer timer_;
  std::optional<Result<std::vector<IpAddress>>> result_;
  bool cancelled_ = false;
};

}  // namespace ward::net::internal
