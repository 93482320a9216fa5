#include "net/port_forward.h"

#include <sys/socket.h>

#include <array>
#include <asio/co_spawn.hpp>
#include <asio/steady_timer.hpp>
#include <asio/write.hpp>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "net/proxy_io.h"

namespace ward::net {

namespace internal {

using Socket = asio::ip::tcp::socket;

struct ForwardCore {
  ForwardCore(asio::io_context& c, EventSink* e, PortForwardOptions o)
      : ctx(c), events(e), options(std::move(o)) {}
  void Stop() {
    if (stopped) return;
    stopped = true;
    asio::error_code ignored;
    for (auto& l : listeners) l->close(ignored);
    for (Socket* s : open) s->close(ignored);
    if (unrecorded > 0) {
      SafeEmit(events, "net.inbound.unrecorded",
               {{"count", unrecorded}, {"recorded", options.max_records}});
    }
  }
  void Record(nlohmann::json data) {
    if (++records > options.max_records) {
      ++unrecorded;
      return;
    }
    SafeEmit(events, "net.inbound", std::move(data));
  }
  asio::io_context& ctx;
  EventSink* events;
  PortForwardOptions options;
  bool stopped = false;
  std::vector<std::unique_ptr<asio::ip::tcp::acceptor>> listeners;
  std::unordered_set<Socket*> open;  // both sides of every joined connection
  size_t open_now = 0;                              // accepted and not yet closed
  std::unordered_map<std::string, size_t> per_peer;  // of those, by the peer's address
  uint64_t records = 0, unrecorded = 0;
  PortForwarder::Stats stats;
};

namespace {

// One connection from outside and the one it was joined to inside.
struct Link {
  std::shared_ptr<Socket> outside, inside;
  uint16_t port = 0;
  std::string peer, address;  // "ADDR:PORT", and ADDR alone
  uint64_t in = 0, out = 0;
  int pumps = 2;  // running; the last one to end closes the link
};

// The peer of an accepted connection: "ADDR:PORT" ("[ADDR]:PORT" for IPv6) and ADDR.
std::pair<std::string, std::string> PeerOf(const Socket& sock) {
  asio::error_code ec;
  const asio::ip::tcp::endpoint peer = sock.remote_endpoint(ec);
  if (ec) return {"", ""};
  const std::string address = peer.address().to_string();
  const std::string shown = peer.address().is_v6() ? "[" + address + "]" : address;
  return {shown + ":" + std::to_string(peer.port()), address};
}

// A connection accepted is counted until it closes, joined or not.
void Opened(ForwardCore* core, const std::string& address) {
  ++core->open_now;
  ++core->per_peer[address];
}
void Closed(ForwardCore* core, const std::string& address) {
  --core->open_now;
  auto it = core->per_peer.find(address);
  if (it != core->per_peer.end() && --it->second == 0) core->per_peer.erase(it);
}

void Unjoined(ForwardCore* core, uint16_t port, const std::string& peer, const std::string& why) {
  ++core->stats.unjoined;
  core->Record({{"port", port}, {"peer", peer}, {"joined", false}, {"reason", why}});
}

void Close(ForwardCore* core, Link* link) {
  asio::error_code ignored;
  for (Socket* s : {link->outside.get(), link->inside.get()}) {
    core->open.erase(s);
    s->close(ignored);
  }
}

asio::awaitable<void> Pump(std::shared_ptr<ForwardCore> core, std::shared_ptr<Link> link,
                           bool inward) {
  Socket& from = inward ? *link->outside : *link->inside;
  Socket& to = inward ? *link->inside : *link->outside;
  std::array<char, 16384> buf;
  asio::error_code ec;
  while (true) {
    const size_t n = co_await from.async_read_some(asio::buffer(buf), Await(ec));
    if (ec) break;
    co_await asio::async_write(to, asio::buffer(buf.data(), n), Await(ec));
    if (ec) break;
    (inward ? link->in : link->out) += n;
    (inward ? core->stats.bytes_in : core->stats.bytes_out) += n;
  }
  // An end of stream goes on to the other side, whose own direction may go on; an error ends
  // both.
  asio::error_code ignored;
  if (ec == asio::error::eof) {
    to.shutdown(Socket::shutdown_send, ignored);
  } else {
    from.close(ignored);
    to.close(ignored);
  }
  if (--link->pumps > 0) co_return;
  Close(core.get(), link.get());
  Closed(core.get(), link->address);
  core->Record({{"port", link->port},
                {"peer", link->peer},
                {"joined", true},
                {"bytes_in", link->in},
                {"bytes_out", link->out}});
}

// The connection inside: 127.0.0.1:port, else [::1]:port (a server on IPv6 loopback only).
asio::awaitable<std::shared_ptr<Socket>> ConnectInside(std::shared_ptr<ForwardCore> core,
                                                       uint16_t port, std::string* why) {
  for (int family : {AF_INET, AF_INET6}) {
    Result<UniqueFd> fd = core->options.socket_inside(family);
    if (!fd.ok()) {
      *why = fd.status().ToString();
      co_return nullptr;
    }
    auto sock = std::make_shared<Socket>(core->ctx);
    asio::error_code ec;
    sock->assign(family == AF_INET ? asio::ip::tcp::v4() : asio::ip::tcp::v6(), fd->release(), ec);
    if (ec) {
      *why = ec.message();
      co_return nullptr;
    }
    const asio::ip::address loopback = family == AF_INET
                                           ? asio::ip::address(asio::ip::address_v4::loopback())
                                           : asio::ip::address(asio::ip::address_v6::loopback());
    // A server inside that does not accept (its queue full) holds the connect for the kernel's
    // SYN retries; the timeout ends it sooner.
    asio::steady_timer timeout(core->ctx);
    timeout.expires_after(core->options.connect_timeout);
    timeout.async_wait([sock](const asio::error_code& e) {
      asio::error_code ignored;
      if (!e) sock->close(ignored);
    });
    co_await sock->async_connect({loopback, port}, Await(ec));
    timeout.cancel();
    if (!ec) co_return sock;
    *why = ec == asio::error::connection_refused
               ? "nothing listens on port " + std::to_string(port) + " inside"
           : ec == asio::error::operation_aborted ? "the connection inside timed out"
                                                  : "connecting inside: " + ec.message();
  }
  co_return nullptr;
}

asio::awaitable<void> Join(std::shared_ptr<ForwardCore> core, std::shared_ptr<Socket> outside,
                           uint16_t port, std::pair<std::string, std::string> peer) {
  std::string why;
  core->open.insert(outside.get());  // Stop() closes it while it waits
  std::shared_ptr<Socket> inside = co_await ConnectInside(core, port, &why);
  core->open.erase(outside.get());
  asio::error_code ignored;
  if (!inside || core->stopped) {
    outside->close(ignored);
    if (inside) inside->close(ignored);
    Closed(core.get(), peer.second);
    Unjoined(core.get(), port, peer.first, inside ? "stopped" : why);
    co_return;
  }
  auto link = std::make_shared<Link>();
  link->outside = std::move(outside);
  link->inside = std::move(inside);
  link->port = port;
  link->peer = std::move(peer.first);
  link->address = std::move(peer.second);
  core->open.insert(link->outside.get());
  core->open.insert(link->inside.get());
  ++core->stats.joined;
  asio::co_spawn(core->ctx, Pump(core, link, true), asio::detached);
  asio::co_spawn(core->ctx, Pump(core, link, false), asio::detached);
}

void Accepted(const std::shared_ptr<ForwardCore>& core, int fd, int family, uint16_t port) {
  auto sock = std::make_shared<Socket>(core->ctx);
  asio::error_code ec;
  sock->assign(family == AF_INET6 ? asio::ip::tcp::v6() : asio::ip::tcp::v4(), fd, ec);
  if (ec) {
    ::close(fd);
    return;
  }
  std::pair<std::string, std::string> peer = PeerOf(*sock);
  const char* over = nullptr;
  if (core->open_now >= core->options.max_connections) {
    over = "over the cap of open connections";
  } else if (auto it = core->per_peer.find(peer.second);
             it != core->per_peer.end() && it->second >= core->options.max_per_peer) {
    over = "over the cap of open connections from one address";
  }
  if (over != nullptr) {
    Unjoined(core.get(), port, peer.first, over);
    sock->close(ec);
    return;
  }
  Opened(core.get(), peer.second);
  asio::co_spawn(core->ctx, Join(core, std::move(sock), port, std::move(peer)), asio::detached);
}

asio::awaitable<void> AcceptLoop(std::shared_ptr<ForwardCore> core, asio::ip::tcp::acceptor* acc,
                                 int family, uint16_t port) {
  const AcceptHandlers handlers = {[core] { return core->stopped; },
                                   [core, family, port](int fd) { Accepted(core, fd, family, port); },
                                   nullptr};
  co_await AcceptEach(acc, 16, handlers);
}

}  // namespace

}  // namespace internal

PortForwarder::PortForwarder(asio::io_context& ctx, EventSink* events, PortForwardOptions options)
    : core_(std::make_shared<internal::ForwardCore>(ctx, events, std::move(options))) {}

PortForwarder::~PortForwarder() { Stop(); }

Status PortForwarder::Serve(uint16_t port, UniqueFd listening_socket) {
  if (core_->stopped) return Status(Code::kFailedPrecondition, "the port forwarder was stopped");
  if (!core_->options.socket_inside) return InvalidArgument("no way to make a socket inside");
  WARD_ASSIGN_OR_RETURN(const int family,
                        internal::CheckServerSocket(listening_socket.get(), SOCK_STREAM));
  auto acc = std::make_unique<asio::ip::tcp::acceptor>(core_->ctx);
  asio::error_code ec;
  acc->assign(family == AF_INET6 ? asio::ip::tcp::v6() : asio::ip::tcp::v4(),
              listening_socket.get(), ec);
  if (ec) return ErrnoError("port " + std::to_string(port) + ": listener", ec.value());
  listening_socket.release();
  acc->non_blocking(true, ec);
  asio::ip::tcp::acceptor* raw = acc.get();
  core_->listeners.push_back(std::move(acc));
  asio::co_spawn(core_->ctx, internal::AcceptLoop(core_, raw, family, port), asio::detached);
  return Ok();
}

void PortForwarder::Stop() { core_->Stop(); }

PortForwarder::Stats PortForwarder::stats() const { return core_->stats; }

}  // namespace ward::net
