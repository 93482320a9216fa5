#include "net/resolver.h"

#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <algorithm>
#include <array>
#include <asio/io_context.hpp>
#include <asio/post.hpp>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <utility>

#include "common/linux.h"
#include "net/idna.h"
#include "net/text_util.h"

namespace ward::net {

namespace {

using Clock = std::chrono::steady_clock;
using Addresses = std::vector<IpAddress>;
using LookupFn = std::function<Result<Addresses>(const std::string&)>;

// Shared by the resolver, its workers and the handlers it posts, so that none of them outlives
// what it touches. Fields under `mu` are shared with the workers; the rest belong to the loop.
struct State {
  explicit State(asio::io_context& c) : ctx(c) {}

  asio::io_context& ctx;
  LookupFn lookup;
  size_t max_pending = 0;
  Clock::duration cache_ttl{};
  size_t cache_entries = 0;

  std::mutex mu;
  std::condition_variable cv;
  std::deque<std::string> queue;
  bool stopping = false;

  // Loop thread only.
  bool destroyed = false;
  std::unordered_map<std::string, std::vector<Resolver::Callback>> waiting;
  struct Cached {
    Clock::time_point expiry;
    Addresses addresses;
  };
  std::unordered_map<std::string, Cached> cache;

  void Deliver(const std::string& name, Result<Addresses> result) {
    auto it = waiting.find(name);
    if (it == waiting.end()) return;
    std::vector<Resolver::Callback> callbacks = std::move(it->second);
    waiting.erase(it);
    if (destroyed) return;
    if (result.ok() && cache_ttl.count() > 0 && cache_entries > 0) {
      if (cache.size() >= cache_entries) {
        Clock::time_point now = Clock::now();
        std::erase_if(cache, [&](const auto& kv) { return kv.second.expiry <= now; });
        if (cache.size() >= cache_entries) cache.clear();
      }
      cache[name] = Cached{Clock::now() + cache_ttl, *result};
    }
    for (size_t i = 0; i < callbacks.size(); ++i) {
      // The last callback may take the value; the others get copies.
      if (i + 1 == callbacks.size()) {
        callbacks[i](std::move(result));
      } else {
        callbacks[i](result);
      }
    }
  }
};

void Worker(std::shared_ptr<State> st) {
  // Names come from the sandbox (allowed ones only): as root this thread keeps no capability.
  sys::DropThreadCapabilities();
  while (true) {
    std::string name;
    {
      std::unique_lock<std::mutex> lock(st->mu);
      st->cv.wait(lock, [&] { return st->stopping || !st->queue.empty(); });
      if (st->stopping) return;
      name = std::move(st->queue.front());
      st->queue.pop_front();
    }
    Result<Addresses> result = Status(Code::kInternal, "no lookup function");
    try {
      result = st->lookup(name);
    } catch (const std::exception& e) {
      result = Status(Code::kInternal, std::string("lookup failed: ") + e.what());
    } catch (...) {
      result = Status(Code::kInternal, "lookup failed");
    }
    // Posting while the resolver is being destroyed is safe: the destructor joins us before the
    // io_context can go away, and the handler only touches the shared state.
    asio::post(st->ctx, [st, name = std::move(name), result = std::move(result)]() mutable {
      st->Deliver(name, std::move(result));
    });
  }
}

class SystemResolver final : public Resolver {
 public:
  SystemResolver(asio::io_context& ctx, SystemResolverOptions options)
      : st_(std::make_shared<State>(ctx)) {
    for (auto& [host, addrs] : options.overrides) {
      auto normalized = NormalizeHost(host);
      overrides_[normalized.ok() ? *normalized : AsciiLower(host)] = addrs;
    }
    st_->lookup = options.lookup ? std::move(options.lookup) : LookupFn(LookupHost);
    st_->max_pending = std::max<size_t>(options.max_pending, 1);
    st_->cache_ttl = options.cache_ttl;
    st_->cache_entries = options.cache_entries;
    threads_ = std::clamp<size_t>(options.threads, 1, 64);
  }

  ~SystemResolver() override {
    {
      std::lock_guard<std::mutex> lock(st_->mu);
      st_->stopping = true;
      st_->queue.clear();
    }
    st_->cv.notify_all();
    for (std::thread& t : workers_) t.join();
    st_->destroyed = true;
    st_->waiting.clear();
  }

  void Resolve(const std::string& host, Callback cb) override {
    if (auto it = overrides_.find(host); it != overrides_.end()) {
      Post(std::move(cb), it->second);
      return;
    }
    if (auto it = st_->cache.find(host); it != st_->cache.end()) {
      if (it->second.expiry > Clock::now()) {
        Post(std::move(cb), it->second.addresses);
        return;
      }
      st_->cache.erase(it);
    }
    if (auto it = st_->waiting.find(host); it != st_->waiting.end()) {
      it->second.push_back(std::move(cb));
      return;
    }
    if (st_->waiting.size() >= st_->max_pending) {
      Post(std::move(cb), Status(Code::kUnavailable, "too many names in resolution"));
      return;
    }
    st_->waiting[host].push_back(std::move(cb));
    // The workers start with the first name to look up: a run that reaches no host (or only
    // overridden or cached ones) starts and joins no thread.
    if (workers_.empty()) {
      for (size_t i = 0; i < threads_; ++i) workers_.emplace_back(Worker, st_);
    }
    {
      std::lock_guard<std::mutex> lock(st_->mu);
      st_->queue.push_back(host);
    }
    st_->cv.notify_one();
  }

 private:
  void Post(Callback cb, Result<Addresses> result) {
    asio::post(st_->ctx, [st = st_, cb = std::move(cb), result = std::move(result)]() mutable {
      if (!st->destroyed) cb(std::move(result));
    });
  }

  std::shared_ptr<State> st_;
  ResolverOverrides overrides_;
  size_t threads_ = 1;
  std::vector<std::thread> workers_;
};

}  // namespace

Status AddResolveOverride(std::string_view spec, ResolverOverrides* overrides) {
  size_t colon = spec.find(':');
  if (colon == std::string_view::npos) {
    return InvalidArgument("resolve override " + QuoteUntrusted(spec) + " is not HOST:ADDR");
  }
  auto host = NormalizeHost(spec.substr(0, colon));
  if (!host.ok()) {
    return InvalidArgument("resolve override " + QuoteUntrusted(spec) + ": " +
                           host.status().message());
  }
  std::vector<IpAddress> addrs;
  std::string_view rest = spec.substr(colon + 1);
  while (true) {
    size_t comma = rest.find(',');
    std::string_view item = rest.substr(0, comma);
    auto addr = IpAddress::Parse(item);
    if (!addr.ok()) {
      return InvalidArgument("resolve override " + QuoteUntrusted(spec) + ": bad address " +
                             QuoteUntrusted(item));
    }
    addrs.push_back(addr->Unmapped());
    if (comma == std::string_view::npos) break;
    rest.remove_prefix(comma + 1);
  }
  auto& list = (*overrides)[*host];
  list.insert(list.end(), addrs.begin(), addrs.end());
  return Ok();
}

std::unique_ptr<Resolver> MakeSystemResolver(asio::io_context& ctx, ResolverOverrides overrides) {
  SystemResolverOptions options;
  options.overrides = std::move(overrides);
  return MakeSystemResolver(ctx, std::move(options));
}

std::unique_ptr<Resolver> MakeSystemResolver(asio::io_context& ctx, SystemResolverOptions options) {
  return std::make_unique<SystemResolver>(ctx, std::move(options));
}

Result<std::vector<IpAddress>> LookupHost(const std::string& host) {
  struct addrinfo hints;
  std::memset(&hints, 0, sizeof hints);
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  struct addrinfo* res = nullptr;
  int rc = getaddrinfo(host.c_str(), nullptr, &hints, &res);
  if (rc != 0) {
    switch (rc) {
      case EAI_NONAME:
#ifdef EAI_NODATA
      case EAI_NODATA:
#endif
#ifdef EAI_ADDRFAMILY
      case EAI_ADDRFAMILY:
#endif
        return Status(Code::kNotFound, host + ": no such host");
      case EAI_SYSTEM:
        return ErrnoError("resolving " + host, errno);
      default:
        return Status(Code::kUnavailable, "resolving " + host + ": " + gai_strerror(rc));
    }
  }
  std::vector<IpAddress> out;
  for (struct addrinfo* ai = res; ai != nullptr; ai = ai->ai_next) {
    IpAddress addr;
    if (ai->ai_family == AF_INET && ai->ai_addrlen >= sizeof(sockaddr_in)) {
      const auto* sin = reinterpret_cast<const sockaddr_in*>(ai->ai_addr);
      addr = IpAddress::V4(ntohl(sin->sin_addr.s_addr));
    } else if (ai->ai_family == AF_INET6 && ai->ai_addrlen >= sizeof(sockaddr_in6)) {
      const auto* sin6 = reinterpret_cast<const sockaddr_in6*>(ai->ai_addr);
      std::array<uint8_t, 16> bytes;
      std::memcpy(bytes.data(), &sin6->sin6_addr, 16);
      addr = IpAddress::V6(bytes).Unmapped();
    } else {
      continue;
    }
    if (std::find(out.begin(), out.end(), addr) == out.end()) out.push_back(addr);
  }
  freeaddrinfo(res);
  if (out.empty()) return Status(Code::kNotFound, host + ": no address");
  return out;
}

}  // namespace ward::net
