// ward_proxy_bench: the egress proxy measured without a sandbox (bench/proxy_bench.sh drives it).
//
//   ward_proxy_bench origin [--port N]
//       A plain HTTP/1.1 origin: GET /bytes/N answers N bytes as fast as the client takes them.
//   ward_proxy_bench proxy --allow PATTERN... [--resolve HOST:ADDR]... [--port N] [--buffer B]
//                  [--no-splice] [--system-cc]
//       The egress proxy (EgressProxy with the system resolver) on 127.0.0.1; --buffer sets
//       ProxyOptions::buffer_high_watermark (default: the ProxyOptions default), --no-splice
//       copies bulk transfers through user space, --system-cc keeps the system's TCP
//       congestion control on the client side (ProxyOptions::loopback_congestion_control "").
//   ward_proxy_bench relay --to PORT [--port N] [--system-cc]
//       A bare splice(2) relay to 127.0.0.1:PORT (no protocol, no policy, the proxy's
//       client-side TCP settings): the least CPU per byte any relay spends on this machine.
//   ward_proxy_bench latency --target HOST:PORT [--proxy PORT] [--via direct|forward|connect|
//                    socks5|transparent] [-n N]
//       N sequential new connections, each one small request; prints p50/p99/mean in µs.
//       transparent: to HOST's address as resolved (inside a sandbox, by transparent capture).
//
// Servers print "listening PORT" on stdout once ready and run until SIGINT/SIGTERM.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <asio/io_context.hpp>
#include <asio/signal_set.hpp>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "common/unique_fd.h"
#include "net/egress_rules.h"
#include "net/proxy.h"
#include "net/resolver.h"

namespace {

using ward::UniqueFd;

[[noreturn]] void Die(const std::string& msg) {
  std::fprintf(stderr, "ward_proxy_bench: %s\n", msg.c_str());
  std::exit(2);
}

UniqueFd Listen(uint16_t port, uint16_t* bound) {
  UniqueFd fd(socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  int one = 1;
  setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  sa.sin_port = htons(port);
  if (bind(fd.get(), reinterpret_cast<sockaddr*>(&sa), sizeof sa) != 0) Die("bind");
  if (listen(fd.get(), 4096) != 0) Die("listen");
  socklen_t len = sizeof sa;
  getsockname(fd.get(), reinterpret_cast<sockaddr*>(&sa), &len);
  *bound = ntohs(sa.sin_port);
  return fd;
}

bool SendAll(int fd, const char* p, size_t n) {
  while (n > 0) {
    ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    p += w;
    n -= static_cast<size_t>(w);
  }
  return true;
}
bool SendAll(int fd, const std::string& s) { return SendAll(fd, s.data(), s.size()); }

// ------------------------------------------------------------------ origin

void ServeOrigin(int fd) {
  static const std::string kBlock(1 << 20, 'x');
  std::string buf;
  char tmp[16384];
  while (true) {
    size_t end;
    while ((end = buf.find("\r\n\r\n")) == std::string::npos) {
      ssize_t n = recv(fd, tmp, sizeof tmp, 0);
      if (n <= 0) {
        close(fd);
        return;
      }
      buf.append(tmp, static_cast<size_t>(n));
    }
    std::string head = buf.substr(0, end);
    buf.erase(0, end + 4);
    size_t sp1 = head.find(' ');
    size_t sp2 = head.find(' ', sp1 + 1);
    std::string target = head.substr(sp1 + 1, sp2 - sp1 - 1);
    if (target.rfind("http://", 0) == 0) {
      size_t slash = target.find('/', 7);
      target = slash == std::string::npos ? "/" : target.substr(slash);
    }
    bool close_after = head.find("Connection: close") != std::string::npos;
    uint64_t n = 2;
    if (target.rfind("/bytes/", 0) == 0) n = std::strtoull(target.c_str() + 7, nullptr, 10);
    std::string resp = "HTTP/1.1 200 OK\r\nContent-Length: " + std::to_string(n) + "\r\n" +
                       (close_after ? "Connection: close\r\n" : "") + "\r\n";
    if (!SendAll(fd, resp)) break;
    if (target.rfind("/bytes/", 0) != 0) {
      if (!SendAll(fd, "ok")) break;
    } else {
      while (n > 0) {
        size_t len = static_cast<size_t>(std::min<uint64_t>(n, kBlock.size()));
        if (!SendAll(fd, kBlock.data(), len)) break;
        n -= len;
      }
      if (n > 0) break;
    }
    if (close_after) break;
  }
  close(fd);
}

int RunOrigin(uint16_t port) {
  uint16_t bound = 0;
  UniqueFd l = Listen(port, &bound);
  std::printf("listening %u\n", bound);
  std::fflush(stdout);
  while (true) {
    int fd = accept4(l.get(), nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EINTR) continue;
      Die("accept");
    }
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    std::thread(ServeOrigin, fd).detach();
  }
}

// ------------------------------------------------------------------ proxy

int RunProxy(uint16_t port, const std::vector<std::string>& allow,
             const std::vector<std::string>& resolve, size_t buffer, bool splice, bool system_cc) {
  ward::policy::NetworkPolicy np;
  for (const std::string& a : allow)
    np.allow.push_back({a, ward::policy::Origin{"bench", 0, "--allow"}});
  auto rules = ward::net::EgressRules::Compile(np);
  if (!rules.ok()) Die(rules.status().ToString());
  ward::net::ResolverOverrides overrides;
  for (const std::string& r : resolve) {
    ward::Status st = ward::net::AddResolveOverride(r, &overrides);
    if (!st.ok()) Die(st.ToString());
  }
  asio::io_context ctx;
  auto resolver = ward::net::MakeSystemResolver(ctx, overrides);
  ward::NullEventSink sink;
  ward::net::ProxyOptions options;
  if (buffer > 0) options.buffer_high_watermark = buffer;
  options.splice = splice;
  if (system_cc) options.loopback_congestion_control.clear();
  ward::net::EgressProxy proxy(ctx, std::move(rules).value(), resolver.get(), &sink, options);
  uint16_t bound = 0;
  ward::Status st = proxy.Serve(Listen(port, &bound));
  if (!st.ok()) Die(st.ToString());
  asio::signal_set signals(ctx, SIGINT, SIGTERM);
  signals.async_wait([&](const asio::error_code&, int) { proxy.Stop(); });
  std::printf("listening %u\n", bound);
  std::fflush(stdout);
  ctx.run();
  auto s = proxy.stats();
  std::fprintf(
      stderr, "proxy: accepted %llu allowed %llu denied %llu errors %llu up %llu down %llu\n",
      static_cast<unsigned long long>(s.accepted), static_cast<unsigned long long>(s.allowed),
      static_cast<unsigned long long>(s.denied), static_cast<unsigned long long>(s.errors),
      static_cast<unsigned long long>(s.bytes_up), static_cast<unsigned long long>(s.bytes_down));
  return 0;
}

// ------------------------------------------------------------------ relay

// A reference for the proxy's data path: a bare TCP relay to one fixed upstream with no
// protocol, no policy and no event loop, moving bytes with splice(2) through a 1 MiB pipe per
// direction (one blocking thread each). Its CPU per byte is the least any relay can spend; its
// speed is no ceiling (its threads sleep and wake at every full pipe). A client asks it for the
// origin's URL directly.
void RelayOneWay(int from, int to) {
  int p[2];
  if (pipe2(p, O_CLOEXEC) == 0) {
    UniqueFd read_end(p[0]), write_end(p[1]);
    fcntl(write_end.get(), F_SETPIPE_SZ, 1 << 20);
    bool open = true;
    while (open) {
      ssize_t n =
          splice(from, nullptr, write_end.get(), nullptr, 1 << 20, SPLICE_F_MOVE | SPLICE_F_MORE);
      open = n > 0;
      while (open && n > 0) {
        ssize_t m = splice(read_end.get(), nullptr, to, nullptr, static_cast<size_t>(n),
                           SPLICE_F_MOVE | SPLICE_F_MORE);
        open = m > 0;
        n -= m;
      }
    }
  }
  shutdown(to, SHUT_WR);
}

void RelayConnection(UniqueFd client, uint16_t upstream_port) {
  UniqueFd up(socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  sa.sin_port = htons(upstream_port);
  if (connect(up.get(), reinterpret_cast<sockaddr*>(&sa), sizeof sa) != 0) return;
  std::thread upward(RelayOneWay, client.get(), up.get());
  RelayOneWay(up.get(), client.get());
  upward.join();
}

int RunRelay(uint16_t port, uint16_t upstream_port, bool system_cc) {
  if (upstream_port == 0) Die("relay needs --to PORT");
  uint16_t bound = 0;
  UniqueFd l = Listen(port, &bound);
  // The same client-side TCP as the proxy's (ProxyOptions::loopback_congestion_control).
  ward::net::ProxyOptions defaults;
  const std::string& cc = defaults.loopback_congestion_control;
  if (!system_cc && !cc.empty()) {
    setsockopt(l.get(), IPPROTO_TCP, TCP_CONGESTION, cc.data(), static_cast<socklen_t>(cc.size()));
  }
  std::printf("listening %u\n", bound);
  std::fflush(stdout);
  while (true) {
    int fd = accept4(l.get(), nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EINTR) continue;
      Die("accept");
    }
    std::thread(RelayConnection, UniqueFd(fd), upstream_port).detach();
  }
}

// ------------------------------------------------------------------ latency

UniqueFd ConnectTo(in_addr_t addr, uint16_t port) {
  UniqueFd fd(socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_addr.s_addr = addr;
  sa.sin_port = htons(port);
  if (connect(fd.get(), reinterpret_cast<sockaddr*>(&sa), sizeof sa) != 0) return UniqueFd();
  int one = 1;
  setsockopt(fd.get(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  return fd;
}

UniqueFd ConnectLoopback(uint16_t port) { return ConnectTo(htonl(INADDR_LOOPBACK), port); }

// Reads until the buffer holds `until` (or, with until empty, until n bytes).
bool RecvUntil(int fd, std::string* buf, const std::string& until, size_t n = 0) {
  char tmp[4096];
  while (until.empty() ? buf->size() < n : buf->find(until) == std::string::npos) {
    ssize_t r = recv(fd, tmp, sizeof tmp, 0);
    if (r <= 0) return false;
    buf->append(tmp, static_cast<size_t>(r));
  }
  return true;
}

// One small request on a new connection; false on any failure.
// `via` transparent: host's own address (inside a sandbox with transparent capture, the
// synthetic one the DNS stub gave), resolved once like a client's cache.
in_addr_t TransparentAddress(const std::string& host) {
  static const in_addr_t addr = [&] {
    addrinfo hints{};
    hints.ai_family = AF_INET;
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* res = nullptr;
    if (getaddrinfo(host.c_str(), nullptr, &hints, &res) != 0 || res == nullptr) {
      Die("cannot resolve " + host);
    }
    in_addr_t a = reinterpret_cast<sockaddr_in*>(res->ai_addr)->sin_addr.s_addr;
    freeaddrinfo(res);
    return a;
  }();
  return addr;
}

bool OneRequest(const std::string& via, const std::string& host, uint16_t target_port,
                uint16_t proxy_port) {
  const std::string authority = host + ":" + std::to_string(target_port);
  UniqueFd fd = via == "transparent"
                    ? ConnectTo(TransparentAddress(host), target_port)
                    : ConnectLoopback(via == "direct" ? target_port : proxy_port);
  if (!fd) return false;
  std::string buf;
  std::string path = "/small";
  if (via == "connect") {
    if (!SendAll(fd.get(), "CONNECT " + authority + " HTTP/1.1\r\nHost: " + authority + "\r\n\r\n"))
      return false;
    if (!RecvUntil(fd.get(), &buf, "\r\n\r\n") || buf.rfind("HTTP/1.1 200", 0) != 0) return false;
    buf.clear();
  } else if (via == "socks5") {
    std::string req = {5, 1, 0, 5, 1, 0, 3, static_cast<char>(host.size())};
    req += host;
    req += static_cast<char>(target_port >> 8);
    req += static_cast<char>(target_port & 0xff);
    if (!SendAll(fd.get(), req)) return false;
    if (!RecvUntil(fd.get(), &buf, "", 12) || buf[1] != 0 || buf[3] != 0) return false;
    buf.clear();
  } else if (via == "forward") {
    path = "http://" + authority + "/small";
  }
  if (!SendAll(fd.get(), "GET " + path + " HTTP/1.1\r\nHost: " + authority +
                             "\r\nConnection: close\r\n\r\n")) {
    return false;
  }
  if (!RecvUntil(fd.get(), &buf, "\r\n\r\n")) return false;
  size_t end = buf.find("\r\n\r\n");
  return RecvUntil(fd.get(), &buf, "", end + 4 + 2) && buf.rfind("HTTP/1.1 200", 0) == 0;
}

int RunLatency(const std::string& target, uint16_t proxy_port, const std::string& via, int n) {
  size_t colon = target.rfind(':');
  if (colon == std::string::npos) Die("--target HOST:PORT");
  std::string host = target.substr(0, colon);
  uint16_t port = static_cast<uint16_t>(std::atoi(target.c_str() + colon + 1));
  for (int i = 0; i < n / 10 + 10; ++i) {  // warm-up
    if (!OneRequest(via, host, port, proxy_port)) Die("request failed (" + via + ")");
  }
  std::vector<double> us;
  us.reserve(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) {
    auto t0 = std::chrono::steady_clock::now();
    if (!OneRequest(via, host, port, proxy_port)) Die("request failed (" + via + ")");
    us.push_back(
        std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(us.begin(), us.end());
  double sum = 0;
  for (double v : us) sum += v;
  auto pct = [&](double p) {
    return us[std::min(us.size() - 1, static_cast<size_t>(p * us.size()))];
  };
  std::printf("%s n=%d p50_us=%.1f p99_us=%.1f mean_us=%.1f\n", via.c_str(), n, pct(0.50),
              pct(0.99), sum / static_cast<double>(us.size()));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  signal(SIGPIPE, SIG_IGN);
  if (argc < 2) Die("usage: ward_proxy_bench origin|proxy|latency [options]");
  std::string mode = argv[1];
  uint16_t port = 0, proxy_port = 0;
  int n = 2000;
  size_t buffer = 0;
  bool splice = true, system_cc = false;
  std::string target, via = "direct";
  std::vector<std::string> allow, resolve;
  for (int i = 2; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) Die("missing value for " + a);
      return argv[++i];
    };
    if (a == "--port") {
      port = static_cast<uint16_t>(std::atoi(next().c_str()));
    } else if (a == "--allow") {
      allow.push_back(next());
    } else if (a == "--resolve") {
      resolve.push_back(next());
    } else if (a == "--target") {
      target = next();
    } else if (a == "--proxy" || a == "--to") {
      proxy_port = static_cast<uint16_t>(std::atoi(next().c_str()));
    } else if (a == "--via") {
      via = next();
    } else if (a == "--no-splice") {
      splice = false;
    } else if (a == "--system-cc") {
      system_cc = true;
    } else if (a == "--buffer") {
      buffer = static_cast<size_t>(std::strtoull(next().c_str(), nullptr, 10));
    } else if (a == "-n") {
      n = std::atoi(next().c_str());
    } else {
      Die("unknown option " + a);
    }
  }
  if (mode == "origin") return RunOrigin(port);
  if (mode == "relay") return RunRelay(port, proxy_port, system_cc);
  if (mode == "proxy") return RunProxy(port, allow, resolve, buffer, splice, system_cc);
  if (mode == "latency") return RunLatency(target, proxy_port, via, std::max(n, 10));
  Die("unknown mode " + mode);
}
