// ward_creds_bench: the credential broker measured without a sandbox (bench/creds_bench.sh
// drives it). Three processes: an HTTPS upstream, the egress proxy with a broker, a load client.
//
//   ward_creds_bench upstream --ca-out FILE
//       An HTTPS/1.1 origin with a certificate for api.test from its own CA (written to FILE),
//       keep-alive, "ok" to every request, on two ports: the first is the credential's, the
//       second is reached through a plain CONNECT tunnel. Prints "listening P1 P2".
//   ward_creds_bench proxy --upstream-port P1 --upstream-ca FILE --ca-out FILE2
//       The egress proxy (system resolver with --resolve api.test:127.0.0.1) with a credential
//       for api.test:P1 (route "bench", header x-api-key), trusting FILE for upstreams; writes
//       the session CA to FILE2 and the phantom to FILE2.phantom. Prints "listening PORT".
//   ward_creds_bench load --proxy PORT --via route|intercept|tunnel|direct --port P
//                    --ca FILE [--key PHANTOM] [-n N] [-c C] [--fresh]
//       C client threads, N requests in all, each thread on one keep-alive connection (with
//       --fresh: a new connection, and TLS handshake, per request). Prints requests per second
//       and p50/p99 latency per request in µs.
//
// Servers run until SIGINT/SIGTERM.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <asio/io_context.hpp>
#include <asio/signal_set.hpp>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "common/unique_fd.h"
#include "net/broker/credential_broker.h"
#include "net/egress_rules.h"
#include "net/proxy.h"
#include "net/resolver.h"
#include "net/tls_authority.h"

namespace {

using ward::UniqueFd;
using Clock = std::chrono::steady_clock;

[[noreturn]] void Die(const std::string& msg) {
  std::fprintf(stderr, "ward_creds_bench: %s\n", msg.c_str());
  std::exit(2);
}

UniqueFd Listen(uint16_t* bound) {
  UniqueFd fd(socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (bind(fd.get(), reinterpret_cast<sockaddr*>(&sa), sizeof sa) != 0) Die("bind");
  if (listen(fd.get(), 4096) != 0) Die("listen");
  socklen_t len = sizeof sa;
  getsockname(fd.get(), reinterpret_cast<sockaddr*>(&sa), &len);
  *bound = ntohs(sa.sin_port);
  return fd;
}

UniqueFd ConnectLoopback(uint16_t port) {
  UniqueFd fd(socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  sa.sin_port = htons(port);
  if (connect(fd.get(), reinterpret_cast<sockaddr*>(&sa), sizeof sa) != 0) return UniqueFd();
  int one = 1;
  setsockopt(fd.get(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  return fd;
}

void WriteFile(const std::string& path, const std::string& data) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << data;
  if (!out) Die("cannot write " + path);
}

// A byte stream: plain socket or TLS over it.
struct Stream {
  int fd = -1;
  SSL* ssl = nullptr;
  bool Send(const std::string& s) {
    size_t off = 0;
    while (off < s.size()) {
      if (ssl != nullptr) {
        size_t n = 0;
        if (SSL_write_ex(ssl, s.data() + off, s.size() - off, &n) != 1) return false;
        off += n;
      } else {
        ssize_t n = send(fd, s.data() + off, s.size() - off, MSG_NOSIGNAL);
        if (n <= 0) return false;
        off += static_cast<size_t>(n);
      }
    }
    return true;
  }
  ssize_t Recv(char* buf, size_t cap) {
    if (ssl != nullptr) {
      size_t n = 0;
      return SSL_read_ex(ssl, buf, cap, &n) == 1 ? static_cast<ssize_t>(n) : -1;
    }
    return recv(fd, buf, cap, 0);
  }
};

// Reads one response with a Content-Length body into nothing; false on failure.
bool ReadResponse(Stream& s, std::string& buf) {
  char tmp[16384];
  size_t end;
  while ((end = buf.find("\r\n\r\n")) == std::string::npos) {
    ssize_t n = s.Recv(tmp, sizeof tmp);
    if (n <= 0) return false;
    buf.append(tmp, static_cast<size_t>(n));
  }
  if (buf.rfind("HTTP/1.1 200", 0) != 0) return false;
  size_t cl = buf.find("Content-Length: ");
  if (cl == std::string::npos || cl > end) cl = buf.find("content-length: ");
  if (cl == std::string::npos || cl > end) return false;
  size_t len = std::strtoul(buf.c_str() + cl + 16, nullptr, 10);
  while (buf.size() < end + 4 + len) {
    ssize_t n = s.Recv(tmp, sizeof tmp);
    if (n <= 0) return false;
    buf.append(tmp, static_cast<size_t>(n));
  }
  buf.erase(0, end + 4 + len);
  return true;
}

// ------------------------------------------------------------------ upstream

void ServeUpstream(SSL_CTX* ctx, int fd) {
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  SSL* ssl = SSL_new(ctx);
  SSL_set_fd(ssl, fd);
  if (SSL_accept(ssl) == 1) {
    Stream s{fd, ssl};
    std::string buf;
    char tmp[16384];
    while (true) {
      size_t end;
      bool ok = true;
      while ((end = buf.find("\r\n\r\n")) == std::string::npos) {
        ssize_t n = s.Recv(tmp, sizeof tmp);
        if (n <= 0) {
          ok = false;
          break;
        }
        buf.append(tmp, static_cast<size_t>(n));
      }
      if (!ok) break;
      bool close_after = buf.substr(0, end).find("onnection: close") != std::string::npos;
      buf.erase(0, end + 4);
      if (!s.Send(std::string("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n") +
                  (close_after ? "Connection: close\r\n" : "") + "\r\nok")) {
        break;
      }
      if (close_after) break;
    }
    SSL_shutdown(ssl);
  }
  SSL_free(ssl);
  ERR_clear_error();
  close(fd);
}

int RunUpstream(const std::string& ca_out) {
  auto ca = ward::net::TlsAuthority::Create({});
  if (!ca.ok()) Die(ca.status().ToString());
  auto host = ward::net::ParseHost("api.test");
  auto ctx = (*ca)->ServerContext(*host);
  if (!ctx.ok()) Die(ctx.status().ToString());
  WriteFile(ca_out, (*ca)->ca_pem());
  uint16_t p1 = 0, p2 = 0;
  UniqueFd l1 = Listen(&p1), l2 = Listen(&p2);
  std::printf("listening %u %u\n", p1, p2);
  std::fflush(stdout);
  SSL_CTX* c = ctx->get();
  while (true) {
    struct pollfd fds[2] = {{l1.get(), POLLIN, 0}, {l2.get(), POLLIN, 0}};
    if (poll(fds, 2, -1) < 0) continue;
    for (auto& p : fds) {
      if (!(p.revents & POLLIN)) continue;
      int fd = accept4(p.fd, nullptr, nullptr, SOCK_CLOEXEC);
      if (fd >= 0) std::thread(ServeUpstream, c, fd).detach();
    }
  }
}

// ------------------------------------------------------------------ proxy

int RunProxy(uint16_t upstream_port, const std::string& upstream_ca, const std::string& ca_out) {
  ward::policy::NetworkPolicy np;
  for (const char* a : {"api.test:*", "127.0.0.1:*"}) {
    np.allow.push_back({a, ward::policy::Origin{"bench", 0, "--allow"}});
  }
  auto rules = ward::net::EgressRules::Compile(np);
  if (!rules.ok()) Die(rules.status().ToString());
  ward::net::ResolverOverrides overrides;
  ward::Status st = ward::net::AddResolveOverride("api.test:127.0.0.1", &overrides);
  if (!st.ok()) Die(st.ToString());

  ward::net::CredentialSpec spec;
  spec.name = "bench";
  spec.secret = "sk-bench-REALsecretREALsecretREALsecret0123456789";
  spec.hosts = {{"api.test:" + std::to_string(upstream_port), {"bench", 0, "hosts"}}};
  spec.inject = {ward::policy::CredentialInject::Kind::kHeader, "x-api-key", "{secret}"};
  spec.route = "bench";
  ward::net::BrokerOptions bo;
  bo.upstream.extra_ca_files = {upstream_ca};
  auto broker = ward::net::CredentialBroker::Create({spec}, bo);
  if (!broker.ok()) Die(broker.status().ToString());
  WriteFile(ca_out, (*broker)->ca_pem());
  WriteFile(ca_out + ".phantom", (*broker)->credentials()[0].phantom);

  asio::io_context ctx;
  auto resolver = ward::net::MakeSystemResolver(ctx, overrides);
  ward::NullEventSink sink;
  ward::net::ProxyOptions options;
  options.credentials = broker->get();
  ward::net::EgressProxy proxy(ctx, std::move(rules).value(), resolver.get(), &sink, options);
  uint16_t bound = 0;
  st = proxy.Serve(Listen(&bound));
  if (!st.ok()) Die(st.ToString());
  asio::signal_set signals(ctx, SIGINT, SIGTERM);
  signals.async_wait([&](const asio::error_code&, int) { proxy.Stop(); });
  std::printf("listening %u\n", bound);
  std::fflush(stdout);
  ctx.run();
  auto s = proxy.stats();
  std::fprintf(stderr, "proxy: accepted %llu intercepted %llu uses %llu errors %llu\n",
               static_cast<unsigned long long>(s.accepted),
               static_cast<unsigned long long>(s.intercepted),
               static_cast<unsigned long long>(s.credential_uses),
               static_cast<unsigned long long>(s.errors));
  return 0;
}

// ------------------------------------------------------------------ load

struct Client {
  std::string via, ca, key;
  uint16_t proxy_port = 0, port = 0;
  SSL_CTX* ctx = nullptr;

  // A connection ready for requests; false on failure.
  bool Open(UniqueFd* fd, SSL** ssl) {
    const std::string authority = "api.test:" + std::to_string(port);
    *fd = ConnectLoopback(via == "direct" ? port : proxy_port);
    if (!*fd) return false;
    *ssl = nullptr;
    if (via == "route") return true;
    if (via != "direct") {
      Stream raw{fd->get(), nullptr};
      if (!raw.Send("CONNECT " + authority + " HTTP/1.1\r\nHost: " + authority + "\r\n\r\n")) {
        return false;
      }
      std::string buf;
      char tmp[1024];
      while (buf.find("\r\n\r\n") == std::string::npos) {
        ssize_t n = raw.Recv(tmp, sizeof tmp);
        if (n <= 0) return false;
        buf.append(tmp, static_cast<size_t>(n));
      }
      if (buf.rfind("HTTP/1.1 200", 0) != 0) return false;
    }
    *ssl = SSL_new(ctx);
    SSL_set_fd(*ssl, fd->get());
    SSL_set_tlsext_host_name(*ssl, "api.test");
    SSL_set1_host(*ssl, "api.test");
    if (SSL_connect(*ssl) != 1) {
      ERR_print_errors_fp(stderr);
      SSL_free(*ssl);
      *ssl = nullptr;
      return false;
    }
    return true;
  }

  std::string Request(bool close) const {
    std::string path = via == "route" ? "/bench/v1/x" : "/v1/x";
    std::string host = via == "route" ? "127.0.0.1" : "api.test:" + std::to_string(port);
    std::string auth = key.empty() ? "" : "x-api-key: " + key + "\r\n";
    return "GET " + path + " HTTP/1.1\r\nHost: " + host + "\r\n" + auth +
           (close ? "Connection: close\r\n" : "") + "\r\n";
  }
};

int RunLoad(Client client, int n, int c, bool fresh) {
  SSL_CTX* ctx = SSL_CTX_new(TLS_client_method());
  SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, nullptr);
  if (SSL_CTX_load_verify_file(ctx, client.ca.c_str()) != 1) Die("cannot load " + client.ca);
  client.ctx = ctx;
  std::mutex mu;
  std::vector<double> all;
  double rps = 0;  // the sum of each client's own rate over its measured requests
  std::atomic<bool> failed{false};
  const int per = std::max(1, n / c);
  auto worker = [&]() {
    std::vector<double> us;
    us.reserve(static_cast<size_t>(per));
    UniqueFd fd;
    SSL* ssl = nullptr;
    std::string buf;
    auto close_conn = [&]() {
      if (ssl != nullptr) SSL_free(ssl);
      ssl = nullptr;
      fd.reset();
      buf.clear();
    };
    const int warm = per / 10 + 5;
    for (int i = 0; i < per + warm && !failed; ++i) {
      auto t0 = Clock::now();
      if (!fd && !client.Open(&fd, &ssl)) {
        failed = true;
        break;
      }
      Stream s{fd.get(), ssl};
      if (!s.Send(client.Request(fresh)) || !ReadResponse(s, buf)) {
        failed = true;
        break;
      }
      if (fresh) close_conn();
      if (i >= warm) {
        us.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count());
      }
    }
    close_conn();
    double busy = 0;
    for (double v : us) busy += v;
    std::lock_guard<std::mutex> lock(mu);
    if (busy > 0) rps += static_cast<double>(us.size()) / (busy / 1e6);
    all.insert(all.end(), us.begin(), us.end());
  };
  std::vector<std::thread> threads;
  for (int i = 0; i < c; ++i) threads.emplace_back(worker);
  for (auto& t : threads) t.join();
  SSL_CTX_free(ctx);
  if (failed || all.empty()) Die("requests failed (" + client.via + ")");
  std::sort(all.begin(), all.end());
  auto pct = [&](double p) {
    return all[std::min(all.size() - 1, static_cast<size_t>(p * static_cast<double>(all.size())))];
  };
  std::printf("%s c=%d %s n=%zu rps=%.0f p50_us=%.1f p99_us=%.1f\n", client.via.c_str(), c,
              fresh ? "fresh" : "keepalive", all.size(), rps, pct(0.50), pct(0.99));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  signal(SIGPIPE, SIG_IGN);
  if (argc < 2) Die("usage: ward_creds_bench upstream|proxy|load [options]");
  std::string mode = argv[1];
  Client client;
  std::string ca_out, upstream_ca;
  uint16_t upstream_port = 0;
  int n = 2000, c = 1;
  bool fresh = false;
  for (int i = 2; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) Die("missing value for " + a);
      return argv[++i];
    };
    if (a == "--ca-out") {
      ca_out = next();
    } else if (a == "--upstream-port") {
      upstream_port = static_cast<uint16_t>(std::atoi(next().c_str()));
    } else if (a == "--upstream-ca") {
      upstream_ca = next();
    } else if (a == "--proxy") {
      client.proxy_port = static_cast<uint16_t>(std::atoi(next().c_str()));
    } else if (a == "--port") {
      client.port = static_cast<uint16_t>(std::atoi(next().c_str()));
    } else if (a == "--via") {
      client.via = next();
    } else if (a == "--ca") {
      client.ca = next();
    } else if (a == "--key") {
      client.key = next();
    } else if (a == "-n") {
      n = std::atoi(next().c_str());
    } else if (a == "-c") {
      c = std::max(1, std::atoi(next().c_str()));
    } else if (a == "--fresh") {
      fresh = true;
    } else {
      Die("unknown option " + a);
    }
  }
  if (mode == "upstream") return ca_out.empty() ? (Die("--ca-out"), 2) : RunUpstream(ca_out);
  if (mode == "proxy") {
    if (upstream_port == 0 || upstream_ca.empty() || ca_out.empty()) {
      Die("proxy needs --upstream-port, --upstream-ca and --ca-out");
    }
    return RunProxy(upstream_port, upstream_ca, ca_out);
  }
  if (mode == "load") return RunLoad(client, std::max(n, 10), c, fresh);
  Die("unknown mode " + mode);
}
