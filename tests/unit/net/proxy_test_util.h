// Test support for the proxy, DNS stub and resolver tests: loopback listeners, blocking client
// helpers, a plain HTTP origin, a TLS origin (self-signed, OpenSSL), a resolver stub that
// records what it was asked, and a proxy running on its own loop thread. Everything binds to
// 127.0.0.1 port 0; nothing leaves the machine.
#pragma once

#include <asio/executor_work_guard.hpp>
#include <asio/io_context.hpp>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "common/events.h"
#include "common/unique_fd.h"
#include "net/dns_stub.h"
#include "net/egress_rules.h"
#include "net/proxy.h"
#include "net/resolver.h"

namespace ward::net::testing {

// An event field that is a string ("" when absent or not one).
inline std::string Str(const nlohmann::json& j, const char* key) {
  return j.contains(key) && j[key].is_string() ? j[key].get<std::string>() : "";
}

EgressRules MakeRules(const std::vector<std::string>& allow,
                      const std::vector<std::string>& deny = {});
IpAddress Ip(const char* text);

struct Listener {
  UniqueFd fd;
  uint16_t port = 0;
};
Listener ListenTcp(int backlog = 4096);  // 127.0.0.1:0
Listener BindUdp();                      // 127.0.0.1:0

// Blocking client side, with poll() timeouts.
UniqueFd ConnectTo(uint16_t port);
bool SendAll(int fd, std::string_view data);
// Reads until done(buffer) holds, EOF, an error or the timeout.
std::string RecvUntil(int fd, const std::function<bool(const std::string&)>& done,
                      int timeout_ms = 5000);
std::string RecvExactly(int fd, size_t n, int timeout_ms = 5000);
// True when the peer closes (EOF or reset) within the timeout; data before that is discarded.
bool WaitClosed(int fd, int timeout_ms = 5000);

struct HttpResult {
  bool complete = false;  // a whole response was read
  int status = 0;
  std::string head;                                 // status line and fields
  std::string body;                                 // decoded
  std::vector<int> interim;                         // statuses of 1xx responses before it
  std::string Header(std::string_view name) const;  // first field of that name, "" if none
};
// Reads one response (Content-Length, chunked, or until close). `rest` receives bytes after it.
HttpResult RecvHttpResponse(int fd, bool head_request = false, std::string* rest = nullptr,
                            int timeout_ms = 5000);

// A Resolver that answers from a table (unknown names: kNotFound), on the loop, and records
// every name it was asked. Names in `silent` are recorded but never answered.
class FakeResolver final : public Resolver {
 public:
  explicit FakeResolver(asio::io_context& ctx) : ctx_(ctx) {}
  void Set(const std::string& name, std::vector<IpAddress> addrs);
  void SetSilent(const std::string& name);
  void Resolve(const std::string& normalized_host, Callback cb) override;
  std::vector<std::string> asked() const;

 private:
  asio::io_context& ctx_;
  mutable std::mutex mu_;
  std::map<std::string, std::vector<IpAddress>> table_;
  std::vector<std::string> silent_;
  std::vector<std::string> asked_;
};

// An io_context running on its own thread until Stop().
class LoopThread {
 public:
  LoopThread();
  ~LoopThread();
  asio::io_context& ctx() { return ctx_; }
  void Start();
  // Runs f on the loop thread and waits for it.
  void RunSync(const std::function<void()>& f);
  void Join();  // after everything on the loop was stopped: waits for the loop to end

 private:
  asio::io_context ctx_;
  std::optional<asio::executor_work_guard<asio::io_context::executor_type>> guard_;
  std::thread thread_;
};

// A proxy on 127.0.0.1:port with a FakeResolver, its own loop thread and a memory event sink;
// with options.synthetic, transparent capture's listener too (127.0.0.1:transparent_port()).
class ProxyHarness {
 public:
  ProxyHarness(EgressRules rules, ProxyOptions options = {},
               std::map<std::string, std::vector<IpAddress>> names = {});
  ~ProxyHarness();
  uint16_t port() const { return port_; }
  uint16_t transparent_port() const { return transparent_port_; }
  EgressProxy::Stats stats() { return proxy_->stats(); }
  std::vector<Event> events() const { return sink_.events(); }
  std::vector<Event> events(std::string_view type) const;
  FakeResolver& resolver() { return *resolver_; }
  // Stop()s the proxy on its loop and waits for the loop to run out of work.
  void StopAndJoin();
  // Waits until pred(stats) holds or the timeout passes; returns whether it held.
  bool WaitFor(const std::function<bool(const EgressProxy::Stats&)>& pred, int timeout_ms = 5000);
  bool WaitForEvents(std::string_view type, size_t count, int timeout_ms = 5000);

 private:
  MemoryEventSink sink_;
  LoopThread loop_;
  std::unique_ptr<FakeResolver> resolver_;
  std::unique_ptr<EgressProxy> proxy_;
  uint16_t port_ = 0;
  uint16_t transparent_port_ = 0;
  bool stopped_ = false;
};

// A plain HTTP/1.1 origin: one thread per connection, keep-alive. Routes:
//   /echo           200 with the request body
//   /chunked        a chunked response ("hello world")
//   /close          a response delimited by closing the connection
//   /interim        a 103 interim response, then 200 "ok"
//   /big/N          N bytes (a pattern), written as fast as the client takes them
//   /hold           no answer until the client leaves
//   anything else   200 "ok <target>"
// Every response carries "X-Conn: <connection number>".
class OriginServer {
 public:
  OriginServer();
  ~OriginServer();
  uint16_t port() const { return port_; }
  struct Request {
    std::string method, target, head, body;
  };
  std::vector<Request> requests() const;
  size_t connections() const { return connections_.load(); }
  uint64_t big_bytes_written() const { return big_written_.load(); }

 private:
  void AcceptLoop();
  void Serve(int fd, size_t id);

  Listener listener_;
  uint16_t port_ = 0;
  std::atomic<bool> stop_{false};
  std::atomic<size_t> connections_{0};
  std::atomic<uint64_t> big_written_{0};
  mutable std::mutex mu_;
  std::vector<Request> requests_;
  std::vector<int> open_fds_;
  std::vector<std::thread> threads_;
  std::thread acceptor_;
};

// A TLS origin with a self-signed certificate; answers one HTTP request per connection with
// "hello over tls" and records the SNI of each handshake.
class TlsServer {
 public:
  TlsServer();
  ~TlsServer();
  uint16_t port() const { return port_; }
  std::vector<std::string> snis() const;
  size_t handshakes() const { return handshakes_.load(); }
  size_t accepted() const { return accepted_.load(); }  // TCP connections, handshake or not

 private:
  void Loop();
  Listener listener_;
  uint16_t port_ = 0;
  void* ctx_ = nullptr;  // SSL_CTX
  std::atomic<bool> stop_{false};
  std::atomic<size_t> handshakes_{0};
  std::atomic<size_t> accepted_{0};
  mutable std::mutex mu_;
  std::vector<std::string> snis_;
  std::thread thread_;
};

// TLS over an fd that already reaches the server (e.g. after CONNECT): handshake with `sni`
// ("" for none), GET / with that Host, and the response body; nullopt when the handshake or
// the exchange fails.
std::optional<std::string> TlsGet(int fd, const std::string& sni, const std::string& host);

struct CommandResult {
  int exit_code = -1;
  std::string out, err;
};
// Runs a program from PATH with a minimal environment (no *_proxy variables), capturing output.
CommandResult RunCommand(const std::vector<std::string>& argv);
bool HaveCurl();

// This process's open descriptors and resident set size (kB).
size_t CountFds(int pid = 0);
size_t RssKb(int pid = 0);

}  // namespace ward::net::testing
