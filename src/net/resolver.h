// Name resolution done by the supervisor for the proxy and the DNS stub. Injectable, so tests
// can prove that a denied name never reaches it.
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "net/addr.h"

namespace asio {
class io_context;
}

namespace ward::net {

class Resolver {
 public:
  using Callback = std::function<void(Result<std::vector<IpAddress>>)>;
  virtual ~Resolver() = default;
  // `normalized_host` is a NormalizeHost() result (never an IP literal). The callback runs later
  // on the io_context's thread, never inside Resolve(). Errors: kNotFound when the name has no
  // address, kUnavailable when resolution failed or is overloaded.
  virtual void Resolve(const std::string& normalized_host, Callback cb) = 0;
};

// Normalised name -> addresses, answered without asking the system (`--resolve HOST:ADDR`).
using ResolverOverrides = std::map<std::string, std::vector<IpAddress>>;

// "HOST:ADDR[,ADDR...]" (ADDR may be a bracketed IPv6 address) added to *overrides; the host is
// normalised. Repeating a host appends its addresses.
Status AddResolveOverride(std::string_view spec, ResolverOverrides* overrides);

struct SystemResolverOptions {
  ResolverOverrides overrides;  // keys are normalised on construction
  size_t threads = 4;           // getaddrinfo blocks: it runs on these, off the event loop
  size_t max_pending = 256;     // distinct names queued or in resolution; beyond: kUnavailable
  // Answers are reused for this long, so the DNS stub and the proxy see the same addresses and
  // repeated connections do not repeat lookups. Failures are not cached.
  std::chrono::milliseconds cache_ttl{30000};
  size_t cache_entries = 1024;
  // Replaces getaddrinfo (tests). Called on a worker thread.
  std::function<Result<std::vector<IpAddress>>(const std::string&)> lookup;
};

// getaddrinfo on worker threads, results delivered on `ctx`; concurrent requests for one name
// share one lookup. Destroy it before `ctx` (the destructor joins the workers, waiting for
// lookups in progress).
std::unique_ptr<Resolver> MakeSystemResolver(asio::io_context& ctx,
                                             ResolverOverrides overrides = {});
std::unique_ptr<Resolver> MakeSystemResolver(asio::io_context& ctx, SystemResolverOptions options);

// Blocking getaddrinfo for TCP destinations: addresses in the system's preference order,
// duplicates removed.
Result<std::vector<IpAddress>> LookupHost(const std::string& host);

}  // namespace ward::net
