// Test support for the credential broker: a test PKI (its own CA, leaves, a self-signed
// certificate), an HTTPS upstream that records what it received, a temporary directory, and a
// runner for real clients (curl, python3, node) with a chosen environment. Loopback only.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "net/broker/credential_broker.h"
#include "net/tls_authority.h"
#include "net/tls_util.h"
#include "proxy_test_util.h"

namespace ward::net::testing {

class TempDir {
 public:
  TempDir();
  ~TempDir();
  const std::string& path() const { return path_; }
  // Writes a file (mode 0600 unless given); returns its path.
  std::string Write(const std::string& name, const std::string& content, int mode = 0600);

 private:
  std::string path_;
};

// A CA for test upstreams (not the broker's session CA), with its PEM in a file.
class TestPki {
 public:
  TestPki();
  const std::string& ca_file() const { return ca_file_; }
  const std::string& ca_pem() const { return ca_->ca_pem(); }
  // A server context with a leaf for `name` signed by this CA.
  std::shared_ptr<SSL_CTX> ServerFor(const std::string& name);
  // A server context with a self-signed certificate for `name`.
  static std::shared_ptr<SSL_CTX> SelfSigned(const std::string& name);

 private:
  TempDir dir_;
  std::unique_ptr<TlsAuthority> ca_;
  std::string ca_file_;
};

struct UpstreamRequest {
  std::string method, target, head, body;
  HttpHeaders headers;
};

// An HTTPS/1.1 origin (thread per connection, keep-alive). Paths:
//   /sse        a chunked event stream: "data: first", then - after ReleaseStream() or 10 s -
//               "data: second"
//   /echo       200 with the request head as the body
//   anything    200 "ok <method> <target>"
// A responder, when set, answers every request instead: it returns the whole response (head and
// body, as raw bytes) for the request it is given.
class HttpsUpstream {
 public:
  using Responder = std::function<std::string(const UpstreamRequest&)>;
  explicit HttpsUpstream(std::shared_ptr<SSL_CTX> ctx, Responder responder = nullptr);
  ~HttpsUpstream();
  uint16_t port() const { return port_; }
  std::vector<UpstreamRequest> requests() const;
  size_t handshakes() const { return handshakes_.load(); }
  size_t connections() const { return connections_.load(); }
  void ReleaseStream();
  // Waits until n requests were recorded.
  bool WaitRequests(size_t n, int timeout_ms = 5000) const;

 private:
  void Serve(int fd);
  Listener listener_;
  uint16_t port_ = 0;
  std::shared_ptr<SSL_CTX> ctx_;
  Responder responder_;
  std::atomic<bool> stop_{false};
  std::atomic<size_t> handshakes_{0}, connections_{0};
  mutable std::mutex mu_;
  mutable std::condition_variable cv_;
  bool released_ = false;
  std::vector<UpstreamRequest> requests_;
  std::vector<std::thread> threads_;
  std::vector<int> fds_;
  std::thread acceptor_;
};

// Runs argv with exactly `env` (plus PATH and HOME=/nonexistent), capturing output, killed
// after timeout_ms.
CommandResult RunWithEnv(const std::vector<std::string>& argv,
                         const std::map<std::string, std::string>& env, int timeout_ms = 20000);
bool HaveProgram(const std::string& name);

std::vector<policy::HostRule> Hosts(const std::vector<std::string>& patterns);

// Everything the events say, as one JSON text.
std::string EventsText(const std::vector<Event>& events);

}  // namespace ward::net::testing
