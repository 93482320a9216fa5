// The sandbox's DNS server: runs in the supervisor and serves the UDP and TCP sockets that
// sandbox init created at 127.0.0.1:53 inside the sandbox's network namespace. It answers A and
// AAAA queries for names the egress rules allow, from the supervisor's resolution; every other
// name gets NXDOMAIN without ever reaching the Resolver (so DNS cannot carry data out), other
// query types get REFUSED, malformed messages are dropped (FORMERR when the header is usable)
// and counted. Refused and denied queries emit one `dns.deny` event each. With transparent
// capture the answers are synthetic addresses (DnsStubOptions::synthetic).
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string_view>

#include "common/events.h"
#include "common/status.h"
#include "common/unique_fd.h"
#include "net/egress_rules.h"
#include "net/resolver.h"
#include "net/synthetic_names.h"

namespace asio {
class io_context;
}

namespace ward::net {

struct DnsStubOptions {
  uint32_t ttl_seconds = 30;  // small: the sandbox asks again rather than caching a stale pin
  std::chrono::milliseconds resolve_timeout{5000};  // then SERVFAIL
  size_t max_inflight = 256;                        // queries waiting for the Resolver
  size_t max_tcp_connections = 64;
  std::chrono::milliseconds tcp_idle_timeout{10000};
  // Called first with every query's name; true answers NXDOMAIN at once (no dns.deny: the hook
  // records its own event). The credential broker's leak check (CredentialBroker::DnsNameCheck).
  std::function<bool(std::string_view name)> name_check;
  // Transparent capture (null: none; must outlive the stub): an allowed name that resolves is
  // answered with its synthetic addresses instead of the real ones (A when it has IPv4
  // addresses, AAAA when it has IPv6 ones and `synthetic_v6`), so that the sandbox connects to
  // the name, never to an address the supervisor found. A full table answers SERVFAIL (and the
  // first time, one `net.limit` event with limit "synthetic_names").
  SyntheticNames* synthetic = nullptr;
  bool synthetic_v6 = true;
};

namespace internal {
struct DnsCore;
}

class DnsStub {
 public:
  // `resolver` and `events` (null: no events) must outlive the stub.
  DnsStub(asio::io_context& ctx, const EgressRules& rules, Resolver* resolver, EventSink* events,
          DnsStubOptions options = {});
  ~DnsStub();  // Stop()s
  DnsStub(const DnsStub&) = delete;
  DnsStub& operator=(const DnsStub&) = delete;

  Status ServeUdp(UniqueFd udp_socket);        // a bound UDP socket
  Status ServeTcp(UniqueFd listening_socket);  // a listening TCP socket
  void Stop();

  struct Stats {
    uint64_t queries = 0;    // messages received
    uint64_t answered = 0;   // NOERROR answers for allowed names
    uint64_t nxdomain = 0;   // denied names, and allowed names that do not exist
    uint64_t refused = 0;    // other types and classes, other opcodes
    uint64_t malformed = 0;  // dropped or answered FORMERR
    uint64_t servfail = 0;   // resolution failed, timed out or overloaded
  };
  Stats stats() const;  // safe from any thread

 private:
  std::shared_ptr<internal::DnsCore> core_;
};

}  // namespace ward::net
