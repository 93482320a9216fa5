#include "net/dns_stub.h"

#include <fcntl.h>
#include <sys/socket.h>

#include <array>
#include <asio/co_spawn.hpp>
#include <asio/write.hpp>
#include <atomic>
#include <functional>
#include <optional>
#include <unordered_set>

#include "net/dns_message.h"
#include "net/idna.h"
#include "net/proxy_io.h"
#include "net/text_util.h"

namespace ward::net {

namespace internal {

namespace {

std::string TypeName(uint16_t type) {
  switch (type) {
    case 1:
      return "A";
    case 2:
      return "NS";
    case 5:
      return "CNAME";
    case 6:
      return "SOA";
    case 12:
      return "PTR";
    case 15:
      return "MX";
    case 16:
      return "TXT";
    case 28:
      return "AAAA";
    case 33:
      return "SRV";
    case 64:
      return "SVCB";
    case 65:
      return "HTTPS";
    case 255:
      return "ANY";
    default:
      return "TYPE" + std::to_string(type);
  }
}

}  // namespace

struct DnsCore : std::enable_shared_from_this<DnsCore> {
  DnsCore(asio::io_context& c, const EgressRules& r, Resolver* res, EventSink* ev, DnsStubOptions o)
      : ctx(c), rules(r), resolver(res), events(ev), options(o) {}

  // Called exactly once per message: with the response, or nullopt when nothing is sent back.
  // Possibly before Handle returns.
  using Reply = std::function<void(std::optional<std::string>)>;
  void Handle(std::string_view message, bool tcp, Reply reply);
  // `d`: the rules' decision, for a name they refused (null: refused for its type).
  void Deny(const DnsQuery& q, const char* rcode, std::string_view reason,
            const EgressRules::Decision* d);
  // The addresses the sandbox is told for `name`, which resolved to `real`: the real ones, or
  // with capture its synthetic ones (nullopt: the table is full).
  std::optional<std::vector<IpAddress>> Shown(const std::string& name,
                                              const std::vector<IpAddress>& real);
  void Stop();

  asio::io_context& ctx;
  const EgressRules rules;
  Resolver* const resolver;
  EventSink* const events;
  const DnsStubOptions options;
  bool stopped = false;
  bool synthetic_full_said = false;
  size_t inflight = 0;
  std::vector<std::unique_ptr<asio::ip::udp::socket>> udp;
  std::vector<std::unique_ptr<asio::ip::tcp::acceptor>> listeners;
  std::unordered_set<asio::ip::tcp::socket*> tcp_conns;
  std::unordered_set<asio::steady_timer*> pending;  // resolutions waited for; Stop() ends them

  struct Counters {
    std::atomic<uint64_t> queries{0}, answered{0}, nxdomain{0}, refused{0}, malformed{0},
        servfail{0};
  } stats;
};

void DnsCore::Deny(const DnsQuery& q, const char* rcode, std::string_view reason,
                   const EgressRules::Decision* d) {
  if (stopped) return;
  // The name as the proxy's records have it (normalised), or quoted when it is not a host name.
  auto parsed = ParseHost(q.question.name);
  const std::string host = parsed.ok() ? parsed->ToString() : QuoteUntrusted(q.question.name, 255);
  const std::string rule = d ? d->rule : "";
  const std::string allow_with = d ? d->allow_with : "";
  const std::string origin = d && !d->rule.empty() ? d->origin.ToString() : "";
  const bool no_rule = d != nullptr && d->rule.empty() && !allow_with.empty();
  const std::string why = RefusalSentence(host, rule, origin, no_rule, reason, allow_with);
  SafeEmit(events, "dns.deny",
           {{"name", q.question.name},
            {"type", TypeName(q.question.qtype)},
            {"rcode", rcode},
            {"reason", reason},
            {"rule", rule},
            {"host", host},
            {"why", why},
            {"allow_with", allow_with}});
}

void DnsCore::Handle(std::string_view message, bool tcp, Reply reply) {
  stats.queries++;
  DnsQueryParse p = ParseDnsQuery(message);
  switch (p.kind) {
    case DnsQueryParse::Kind::kDrop:
      stats.malformed++;
      reply(std::nullopt);
      return;
    case DnsQueryParse::Kind::kFormErr: {
      stats.malformed++;
      std::string r = BuildDnsErrorResponse(message, DnsRcode::kFormErr);
      reply(r.empty() ? std::nullopt : std::optional<std::string>(std::move(r)));
      return;
    }
    case DnsQueryParse::Kind::kNotImp: {
      stats.refused++;
      std::string r = BuildDnsErrorResponse(message, DnsRcode::kNotImp);
      reply(r.empty() ? std::nullopt : std::optional<std::string>(std::move(r)));
      return;
    }
    case DnsQueryParse::Kind::kQuery:
      break;
  }
  const DnsQuery& q = p.query;
  const size_t max_size = tcp ? kDnsMaxMessage : q.MaxUdpResponse();
  auto respond = [&](DnsRcode rc) {
    auto r = BuildDnsResponse(q, rc, {}, max_size);
    reply(r.ok() ? std::optional<std::string>(std::move(r).value()) : std::nullopt);
  };
  if (options.name_check && options.name_check(q.question.name)) {
    stats.nxdomain++;
    respond(DnsRcode::kNxDomain);
    return;
  }
  if (q.has_edns && q.edns_version != 0) {
    stats.refused++;
    respond(DnsRcode::kBadVers);
    return;
  }
  const uint16_t type = q.question.qtype;
  if (q.question.qclass != kDnsClassIn || (type != kDnsTypeA && type != kDnsTypeAaaa)) {
    stats.refused++;
    Deny(q, "REFUSED", "only A and AAAA queries in class IN are answered", nullptr);
    respond(DnsRcode::kRefused);
    return;
  }
  EgressRules::Decision d = rules.CheckDnsName(q.question.name);
  auto host = ParseHost(q.question.name);
  if (!d.allowed || !host.ok() || host->is_address()) {
    // Never forwarded, never resolved: a denied name goes nowhere.
    stats.nxdomain++;
    Deny(q, "NXDOMAIN", d.reason, &d);
    respond(DnsRcode::kNxDomain);
    return;
  }
  if (inflight >= options.max_inflight) {
    stats.servfail++;
    respond(DnsRcode::kServFail);
    return;
  }
  inflight++;
  struct Pending {
    Pending(asio::io_context& c, DnsQuery query, Reply r, size_t max)
        : timer(c), q(std::move(query)), reply(std::move(r)), max_size(max) {}
    asio::steady_timer timer;
    DnsQuery q;
    Reply reply;
    size_t max_size;
    bool done = false;
  };
  auto wait = std::make_shared<Pending>(ctx, q, std::move(reply), max_size);
  std::weak_ptr<DnsCore> weak = weak_from_this();
  wait->timer.expires_after(options.resolve_timeout);
  pending.insert(&wait->timer);
  wait->timer.async_wait([weak, wait](const asio::error_code&) {
    auto core = weak.lock();
    if (wait->done || !core) return;
    wait->done = true;
    core->pending.erase(&wait->timer);
    core->inflight--;
    core->stats.servfail++;
    auto r = BuildDnsResponse(wait->q, DnsRcode::kServFail, {}, wait->max_size);
    wait->reply(r.ok() ? std::optional<std::string>(std::move(r).value()) : std::nullopt);
  });
  resolver->Resolve(host->name, [weak, wait, name = host->name](
                                    Result<std::vector<IpAddress>> result) {
    auto core = weak.lock();
    if (wait->done || !core) return;
    wait->done = true;
    wait->timer.cancel();
    core->pending.erase(&wait->timer);
    core->inflight--;
    Result<std::string> r = Status(Code::kInternal, "unset");
    std::optional<std::vector<IpAddress>> shown;
    if (result.ok()) shown = core->Shown(name, *result);
    if (result.ok() && shown) {
      core->stats.answered++;
      r = BuildDnsAddressResponse(wait->q, {}, *shown, core->options.ttl_seconds, wait->max_size);
    } else if (result.status().code() == Code::kNotFound) {
      core->stats.nxdomain++;
      r = BuildDnsResponse(wait->q, DnsRcode::kNxDomain, {}, wait->max_size);
    } else {
      core->stats.servfail++;
      r = BuildDnsResponse(wait->q, DnsRcode::kServFail, {}, wait->max_size);
    }
    wait->reply(r.ok() ? std::optional<std::string>(std::move(r).value()) : std::nullopt);
  });
}

std::optional<std::vector<IpAddress>> DnsCore::Shown(const std::string& name,
                                                     const std::vector<IpAddress>& real) {
  if (options.synthetic == nullptr) return real;
  bool v4 = false, v6 = false;
  for (const IpAddress& a : real) (a.Unmapped().is_v4() ? v4 : v6) = true;
  std::vector<IpAddress> shown;
  if (!v4 && !(v6 && options.synthetic_v6)) return shown;  // no data for this sandbox
  std::optional<SyntheticNames::Pair> pair = options.synthetic->AddressesFor(name);
  if (!pair) {
    // Said once: every new name is SERVFAIL from now on.
    if (!synthetic_full_said) {
      synthetic_full_said = true;
      SafeEmit(events, "net.limit",
               {{"limit", "synthetic_names"}, {"cap", options.synthetic->size()}, {"name", name}});
    }
    return std::nullopt;
  }
  if (v4) shown.push_back(pair->v4);
  if (v6 && options.synthetic_v6) shown.push_back(pair->v6);
  return shown;
}

void DnsCore::Stop() {
  if (stopped) return;
  stopped = true;
  asio::error_code ec;
  for (auto& s : udp) s->close(ec);
  for (auto& l : listeners) l->close(ec);
  for (asio::ip::tcp::socket* s : tcp_conns) s->close(ec);
  for (asio::steady_timer* t : pending) t->cancel();  // answered SERVFAIL, sent nowhere
}

namespace {

asio::awaitable<void> UdpLoop(std::shared_ptr<DnsCore> core, asio::ip::udp::socket* sock) {
  std::vector<char> buf(kDnsMaxMessage + 1);
  while (!core->stopped) {
    asio::ip::udp::endpoint from;
    asio::error_code ec;
    size_t n = co_await sock->async_receive_from(asio::buffer(buf), from, Await(ec));
    if (core->stopped || ec == asio::error::operation_aborted || !sock->is_open()) break;
    if (ec) continue;  // concerns one datagram (an ICMP error for an earlier answer, ...)
    core->Handle(std::string_view(buf.data(), n), /*tcp=*/false,
                 [core, sock, from](std::optional<std::string> resp) {
                   if (!resp || core->stopped) return;
                   // Non-blocking: with the socket buffer full the answer is lost, as UDP may.
                   asio::error_code send_ec;
                   sock->send_to(asio::buffer(*resp), from, 0, send_ec);
                 });
  }
}

// The answer to one TCP query, or nullopt (dropped).
asio::awaitable<std::optional<std::string>> HandleAwait(std::shared_ptr<DnsCore> core,
                                                        std::string message) {
  struct Wait {
    explicit Wait(asio::io_context& c) : timer(c, Clock::time_point::max()) {}
    asio::steady_timer timer;
    bool done = false;
    std::optional<std::string> response;
  };
  auto w = std::make_shared<Wait>(core->ctx);
  core->Handle(message, /*tcp=*/true, [w](std::optional<std::string> resp) {
    w->response = std::move(resp);
    w->done = true;
    w->timer.cancel();
  });
  if (!w->done) {
    asio::error_code ec;
    co_await w->timer.async_wait(Await(ec));
  }
  co_return std::move(w->response);
}

asio::awaitable<void> TcpConnection(std::shared_ptr<DnsCore> core,
                                    std::shared_ptr<asio::ip::tcp::socket> sock) {
  core->tcp_conns.insert(sock.get());
  asio::steady_timer idle(core->ctx);
  auto arm = [&] {
    idle.expires_after(core->options.tcp_idle_timeout);
    idle.async_wait([sock](const asio::error_code& ec) {
      asio::error_code ignored;
      if (!ec) sock->close(ignored);
    });
  };
  std::string buf;
  std::array<char, 4096> chunk;
  while (!core->stopped && sock->is_open()) {
    DnsTcpFrame f = ExtractDnsTcpFrame(buf);
    if (f.kind == DnsTcpFrame::Kind::kError) {
      core->stats.malformed++;
      break;
    }
    asio::error_code ec;
    if (f.kind == DnsTcpFrame::Kind::kFrame) {
      std::string message(f.message);
      buf.erase(0, f.consumed);
      std::optional<std::string> resp = co_await HandleAwait(core, std::move(message));
      if (!resp) continue;
      auto framed = FrameDnsTcp(*resp);
      if (!framed.ok()) continue;
      arm();
      co_await asio::async_write(*sock, asio::buffer(*framed), Await(ec));
      idle.cancel();
      if (ec) break;
      continue;
    }
    arm();
    size_t n = co_await sock->async_read_some(asio::buffer(chunk), Await(ec));
    idle.cancel();
    if (ec) break;
    buf.append(chunk.data(), n);
  }
  core->tcp_conns.erase(sock.get());
  asio::error_code ignored;
  sock->close(ignored);
}

// Serves an accepted connection, or closes it (over the cap, or unusable).
void StartTcpConnection(const std::shared_ptr<DnsCore>& core, int fd, int family) {
  if (core->tcp_conns.size() >= core->options.max_tcp_connections) {
    ::close(fd);
    return;
  }
  auto sock = std::make_shared<asio::ip::tcp::socket>(core->ctx);
  asio::error_code ec;
  sock->assign(family == AF_INET6 ? asio::ip::tcp::v6() : asio::ip::tcp::v4(), fd, ec);
  if (ec) {
    ::close(fd);
    return;
  }
  asio::co_spawn(core->ctx, TcpConnection(core, sock), asio::detached);
}

asio::awaitable<void> TcpAcceptLoop(std::shared_ptr<DnsCore> core, asio::ip::tcp::acceptor* acc,
                                    int family) {
  const AcceptHandlers handlers = {[core] { return core->stopped; },
                                   [core, family](int fd) { StartTcpConnection(core, fd, family); },
                                   nullptr};
  co_await AcceptEach(acc, 16, handlers);
}

Status PrepareFd(int fd) {
  int flags = fcntl(fd, F_GETFL);
  if (flags < 0 || fcntl(fd, F_SETFL, flags | O_NONBLOCK) != 0 ||
      fcntl(fd, F_SETFD, FD_CLOEXEC) != 0) {
    return Errno("dns stub: fcntl");
  }
  return Ok();
}

}  // namespace

}  // namespace internal

DnsStub::DnsStub(asio::io_context& ctx, const EgressRules& rules, Resolver* resolver,
                 EventSink* events, DnsStubOptions options)
    : core_(std::make_shared<internal::DnsCore>(ctx, rules, resolver, events, options)) {}

DnsStub::~DnsStub() { Stop(); }

Status DnsStub::ServeUdp(UniqueFd udp_socket) {
  if (core_->stopped) return Status(Code::kFailedPrecondition, "the DNS stub was stopped");
  WARD_ASSIGN_OR_RETURN(int family, internal::CheckServerSocket(udp_socket.get(), SOCK_DGRAM));
  WARD_TRY(internal::PrepareFd(udp_socket.get()));
  auto sock = std::make_unique<asio::ip::udp::socket>(core_->ctx);
  asio::error_code ec;
  sock->assign(family == AF_INET6 ? asio::ip::udp::v6() : asio::ip::udp::v4(), udp_socket.get(),
               ec);
  if (ec) return ErrnoError("dns stub: udp socket", ec.value());
  udp_socket.release();
  sock->non_blocking(true, ec);
  asio::ip::udp::socket* raw = sock.get();
  core_->udp.push_back(std::move(sock));
  asio::co_spawn(core_->ctx, internal::UdpLoop(core_, raw), asio::detached);
  return Ok();
}

Status DnsStub::ServeTcp(UniqueFd listening_socket) {
  if (core_->stopped) return Status(Code::kFailedPrecondition, "the DNS stub was stopped");
  WARD_ASSIGN_OR_RETURN(int family,
                        internal::CheckServerSocket(listening_socket.get(), SOCK_STREAM));
  WARD_TRY(internal::PrepareFd(listening_socket.get()));
  auto acc = std::make_unique<asio::ip::tcp::acceptor>(core_->ctx);
  asio::error_code ec;
  acc->assign(family == AF_INET6 ? asio::ip::tcp::v6() : asio::ip::tcp::v4(),
              listening_socket.get(), ec);
  if (ec) return ErrnoError("dns stub: tcp listener", ec.value());
  listening_socket.release();
  asio::ip::tcp::acceptor* raw = acc.get();
  core_->listeners.push_back(std::move(acc));
  asio::co_spawn(core_->ctx, internal::TcpAcceptLoop(core_, raw, family), asio::detached);
  return Ok();
}

void DnsStub::Stop() { core_->Stop(); }

DnsStub::Stats DnsStub::stats() const {
  const auto& c = core_->stats;
  Stats s;
  s.queries = c.queries.load();
  s.answered = c.answered.load();
  s.nxdomain = c.nxdomain.load();
  s.refused = c.refused.load();
  s.malformed = c.malformed.load();
  s.servfail = c.servfail.load();
  return s;
}

}  // namespace ward::net
