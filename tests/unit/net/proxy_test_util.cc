#include "proxy_test_util.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <poll.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <asio/post.hpp>
#include <cstring>
#include <fstream>
#include <future>
#include <sstream>

#include "net/http_parser.h"
#include "net/text_util.h"

namespace ward::net::testing {

namespace {

int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// Waits for fd to become readable; false on timeout.
bool PollIn(int fd, int64_t deadline_ms) {
  while (true) {
    int64_t left = deadline_ms - NowMs();
    if (left <= 0) return false;
    struct pollfd p = {fd, POLLIN, 0};
    int rc = poll(&p, 1, static_cast<int>(left));
    if (rc > 0) return true;
    if (rc == 0) return false;
    if (errno != EINTR) return false;
  }
}

}  // namespace

EgressRules MakeRules(const std::vector<std::string>& allow, const std::vector<std::string>& deny) {
  policy::NetworkPolicy p;
  int line = 1;
  for (const auto& a : allow) {
    p.allow.push_back({a, policy::Origin{"test.toml", line++, "network.allow"}});
  }
  for (const auto& d : deny) {
    p.deny.push_back({d, policy::Origin{"test.toml", line++, "network.deny"}});
  }
  auto r = EgressRules::Compile(p);
  if (!r.ok()) std::abort();
  return std::move(r).value();
}

IpAddress Ip(const char* text) {
  auto r = IpAddress::Parse(text);
  if (!r.ok()) std::abort();
  return *r;
}

Listener ListenTcp(int backlog) {
  Listener l;
  l.fd = UniqueFd(socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  int one = 1;
  setsockopt(l.fd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (bind(l.fd.get(), reinterpret_cast<sockaddr*>(&sa), sizeof sa) != 0) std::abort();
  if (listen(l.fd.get(), backlog) != 0) std::abort();
  socklen_t len = sizeof sa;
  getsockname(l.fd.get(), reinterpret_cast<sockaddr*>(&sa), &len);
  l.port = ntohs(sa.sin_port);
  return l;
}

Listener BindUdp() {
  Listener l;
  l.fd = UniqueFd(socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0));
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (bind(l.fd.get(), reinterpret_cast<sockaddr*>(&sa), sizeof sa) != 0) std::abort();
  socklen_t len = sizeof sa;
  getsockname(l.fd.get(), reinterpret_cast<sockaddr*>(&sa), &len);
  l.port = ntohs(sa.sin_port);
  return l;
}

UniqueFd ConnectTo(uint16_t port) {
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

bool SendAll(int fd, std::string_view data) {
  while (!data.empty()) {
    ssize_t n = send(fd, data.data(), data.size(), MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    data.remove_prefix(static_cast<size_t>(n));
  }
  return true;
}

std::string RecvUntil(int fd, const std::function<bool(const std::string&)>& done, int timeout_ms) {
  std::string buf;
  int64_t deadline = NowMs() + timeout_ms;
  char tmp[65536];
  while (!done(buf)) {
    if (!PollIn(fd, deadline)) break;
    ssize_t n = recv(fd, tmp, sizeof tmp, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    buf.append(tmp, static_cast<size_t>(n));
  }
  return buf;
}

std::string RecvExactly(int fd, size_t n, int timeout_ms) {
  return RecvUntil(
      fd, [n](const std::string& b) { return b.size() >= n; }, timeout_ms);
}

bool WaitClosed(int fd, int timeout_ms) {
  int64_t deadline = NowMs() + timeout_ms;
  char tmp[65536];
  while (true) {
    if (!PollIn(fd, deadline)) return false;
    ssize_t n = recv(fd, tmp, sizeof tmp, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return true;
  }
}

std::string HttpResult::Header(std::string_view name) const {
  std::istringstream in(head);
  std::string line;
  while (std::getline(in, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    size_t colon = line.find(':');
    if (colon == std::string::npos) continue;
    if (EqualsIgnoreCase(std::string_view(line).substr(0, colon), name)) {
      return std::string(TrimOws(std::string_view(line).substr(colon + 1)));
    }
  }
  return "";
}

HttpResult RecvHttpResponse(int fd, bool head_request, std::string* rest, int timeout_ms) {
  HttpResult out;
  int64_t deadline = NowMs() + timeout_ms;
  std::string buf;  // received, not yet given to the parser
  char tmp[65536];
  auto more = [&]() -> bool {
    if (!PollIn(fd, deadline)) return false;
    ssize_t n = recv(fd, tmp, sizeof tmp, 0);
    if (n <= 0) return false;
    buf.append(tmp, static_cast<size_t>(n));
    return true;
  };
  HttpResponseParser parser(head_request);
  while (true) {
    if (buf.empty() && !more()) return out;
    HttpParse r = parser.Feed(buf);
    if (r.error()) return out;
    if (r.need_more()) {
      buf.clear();  // the parser keeps what it consumed
      continue;
    }
    buf.erase(0, r.consumed);
    if (parser.head().status >= 200) break;
    out.interim.push_back(parser.head().status);
    parser.Reset(head_request);
  }
  const HttpResponseHead& h = parser.head();
  out.status = h.status;
  // Rebuild the head text from the parsed fields (the raw bytes were consumed incrementally).
  out.head = "HTTP/1." + std::to_string(h.version_minor) + " " + std::to_string(h.status) + " " +
             h.reason + "\r\n";
  for (const HttpHeader& f : h.headers.entries()) out.head += f.name + ": " + f.value + "\r\n";
  switch (h.body.kind) {
    case BodyKind::kNone:
      out.complete = true;
      break;
    case BodyKind::kContentLength:
      while (buf.size() < h.body.length) {
        if (!more()) return out;
      }
      out.body = buf.substr(0, h.body.length);
      buf.erase(0, h.body.length);
      out.complete = true;
      break;
    case BodyKind::kChunked: {
      ChunkedDecoder dec;
      while (true) {
        HttpParse r = dec.Feed(buf, &out.body);
        if (r.error()) return out;
        if (r.done()) {
          buf.erase(0, r.consumed);
          out.complete = true;
          break;
        }
        buf.clear();
        if (!more()) return out;
      }
      break;
    }
    case BodyKind::kUntilClose:
      while (more()) {
      }
      out.body = std::move(buf);
      buf.clear();
      out.complete = true;
      break;
  }
  if (rest) *rest = std::move(buf);
  return out;
}

// ------------------------------------------------------------------ FakeResolver

void FakeResolver::Set(const std::string& name, std::vector<IpAddress> addrs) {
  std::lock_guard<std::mutex> lock(mu_);
  table_[name] = std::move(addrs);
}

void FakeResolver::SetSilent(const std::string& name) {
  std::lock_guard<std::mutex> lock(mu_);
  silent_.push_back(name);
}

void FakeResolver::Resolve(const std::string& host, Callback cb) {
  Result<std::vector<IpAddress>> result = Status(Code::kNotFound, host + ": no such host");
  {
    std::lock_guard<std::mutex> lock(mu_);
    asked_.push_back(host);
    for (const std::string& s : silent_) {
      if (s == host) return;
    }
    if (auto it = table_.find(host); it != table_.end()) result = it->second;
  }
  asio::post(ctx_,
             [cb = std::move(cb), result = std::move(result)]() mutable { cb(std::move(result)); });
}

std::vector<std::string> FakeResolver::asked() const {
  std::lock_guard<std::mutex> lock(mu_);
  return asked_;
}

// ------------------------------------------------------------------ LoopThread

LoopThread::LoopThread() { guard_.emplace(ctx_.get_executor()); }

LoopThread::~LoopThread() { Join(); }

void LoopThread::Start() {
  thread_ = std::thread([this] { ctx_.run(); });
}

void LoopThread::RunSync(const std::function<void()>& f) {
  if (!thread_.joinable()) {
    f();
    return;
  }
  std::promise<void> done;
  asio::post(ctx_, [&] {
    f();
    done.set_value();
  });
  done.get_future().wait();
}

void LoopThread::Join() {
  guard_.reset();
  if (thread_.joinable()) thread_.join();
}

// ------------------------------------------------------------------ ProxyHarness

ProxyHarness::ProxyHarness(EgressRules rules, ProxyOptions options,
                           std::map<std::string, std::vector<IpAddress>> names) {
  resolver_ = std::make_unique<FakeResolver>(loop_.ctx());
  for (auto& [name, addrs] : names) resolver_->Set(name, addrs);
  const bool transparent = options.synthetic != nullptr;
  proxy_ = std::make_unique<EgressProxy>(loop_.ctx(), std::move(rules), resolver_.get(), &sink_,
                                         std::move(options));
  Listener l = ListenTcp();
  port_ = l.port;
  Status st = proxy_->Serve(std::move(l.fd));
  if (!st.ok()) std::abort();
  if (transparent) {
    Listener t = ListenTcp();
    transparent_port_ = t.port;
    if (!proxy_->ServeTransparent(std::move(t.fd)).ok()) std::abort();
  }
  loop_.Start();
}

ProxyHarness::~ProxyHarness() {
  StopAndJoin();
  proxy_.reset();
  resolver_.reset();
}

void ProxyHarness::StopAndJoin() {
  if (stopped_) return;
  stopped_ = true;
  loop_.RunSync([this] { proxy_->Stop(); });
  loop_.Join();
}

std::vector<Event> ProxyHarness::events(std::string_view type) const {
  std::vector<Event> out;
  for (Event& e : sink_.events()) {
    if (e.type == type) out.push_back(std::move(e));
  }
  return out;
}

bool ProxyHarness::WaitFor(const std::function<bool(const EgressProxy::Stats&)>& pred,
                           int timeout_ms) {
  int64_t deadline = NowMs() + timeout_ms;
  while (true) {
    if (pred(proxy_->stats())) return true;
    if (NowMs() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

bool ProxyHarness::WaitForEvents(std::string_view type, size_t count, int timeout_ms) {
  int64_t deadline = NowMs() + timeout_ms;
  while (true) {
    if (events(type).size() >= count) return true;
    if (NowMs() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

// ------------------------------------------------------------------ OriginServer

OriginServer::OriginServer() : listener_(ListenTcp()), port_(listener_.port) {
  acceptor_ = std::thread([this] { AcceptLoop(); });
}

OriginServer::~OriginServer() {
  stop_ = true;
  acceptor_.join();
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (int fd : open_fds_) shutdown(fd, SHUT_RDWR);
  }
  for (std::thread& t : threads_) t.join();
  for (int fd : open_fds_) close(fd);
}

std::vector<OriginServer::Request> OriginServer::requests() const {
  std::lock_guard<std::mutex> lock(mu_);
  return requests_;
}

void OriginServer::AcceptLoop() {
  while (!stop_) {
    struct pollfd p = {listener_.fd.get(), POLLIN, 0};
    if (poll(&p, 1, 20) <= 0) continue;
    int fd = accept4(listener_.fd.get(), nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) continue;
    size_t id = ++connections_;
    std::lock_guard<std::mutex> lock(mu_);
    open_fds_.push_back(fd);
    threads_.emplace_back([this, fd, id] {
      Serve(fd, id);
      shutdown(fd, SHUT_RDWR);  // closed by the destructor; the peer sees the end now
    });
  }
}

void OriginServer::Serve(int fd, size_t id) {
  std::string buf;
  char tmp[65536];
  auto more = [&]() -> bool {
    ssize_t n = recv(fd, tmp, sizeof tmp, 0);
    if (n <= 0) return false;
    buf.append(tmp, static_cast<size_t>(n));
    return true;
  };
  while (!stop_) {
    HttpRequestParser parser;
    HttpParse r;
    if (!buf.empty()) {  // pipelined bytes from the previous read
      r = parser.Feed(buf);
      if (r.done()) {
        buf.erase(0, r.consumed);
      } else {
        buf.clear();
      }
    }
    while (r.need_more()) {
      ssize_t n = recv(fd, tmp, sizeof tmp, 0);
      if (n <= 0) return;
      r = parser.Feed(std::string_view(tmp, static_cast<size_t>(n)));
      if (r.done()) buf.assign(tmp + r.consumed, static_cast<size_t>(n) - r.consumed);
    }
    if (r.error()) {
      SendAll(fd, "HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
      return;
    }
    const HttpRequestHead& h = parser.head();
    Request req;
    req.method = h.method;
    req.target = h.target;
    req.head = h.method + " " + h.target + " HTTP/1." + std::to_string(h.version_minor) + "\r\n";
    for (const HttpHeader& f : h.headers.entries()) req.head += f.name + ": " + f.value + "\r\n";
    if (h.body.kind == BodyKind::kContentLength) {
      while (buf.size() < h.body.length) {
        if (!more()) return;
      }
      req.body = buf.substr(0, h.body.length);
      buf.erase(0, h.body.length);
    } else if (h.body.kind == BodyKind::kChunked) {
      ChunkedDecoder dec;
      while (true) {
        HttpParse c = dec.Feed(buf, &req.body);
        if (c.error()) return;
        if (c.done()) {
          buf.erase(0, c.consumed);
          break;
        }
        buf.clear();
        if (!more()) return;
      }
    }
    {
      std::lock_guard<std::mutex> lock(mu_);
      requests_.push_back(req);
    }
    std::string conn = "X-Conn: " + std::to_string(id) + "\r\n";
    std::string path = h.target;
    bool keep = h.keep_alive;
    if (path == "/echo") {
      SendAll(fd, "HTTP/1.1 200 OK\r\n" + conn +
                      "Content-Length: " + std::to_string(req.body.size()) + "\r\n\r\n" + req.body);
    } else if (path == "/chunked") {
      SendAll(fd, "HTTP/1.1 200 OK\r\n" + conn +
                      "Transfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n");
    } else if (path == "/close") {
      SendAll(fd, "HTTP/1.1 200 OK\r\n" + conn + "Connection: close\r\n\r\nuntil close");
      shutdown(fd, SHUT_WR);
      return;
    } else if (path == "/interim") {
      SendAll(fd, "HTTP/1.1 103 Early Hints\r\nLink: </a.css>\r\n\r\nHTTP/1.1 200 OK\r\n" + conn +
                      "Content-Length: 2\r\n\r\nok");
    } else if (path.rfind("/big/", 0) == 0) {
      uint64_t n = std::stoull(path.substr(5));
      if (!SendAll(fd, "HTTP/1.1 200 OK\r\n" + conn + "Content-Length: " + std::to_string(n) +
                           "\r\n\r\n")) {
        return;
      }
      // Byte i of the body is 'a' + i % 26, so the client can check what it received.
      constexpr size_t kBlock = 26 * 2520;
      std::string block(kBlock + 26, '\0');
      for (size_t i = 0; i < block.size(); ++i) block[i] = static_cast<char>('a' + i % 26);
      uint64_t sent = 0;
      while (sent < n) {
        size_t len = static_cast<size_t>(std::min<uint64_t>(kBlock, n - sent));
        ssize_t w = send(fd, block.data() + sent % 26, len, MSG_NOSIGNAL);
        if (w <= 0) return;
        sent += static_cast<uint64_t>(w);
        big_written_ += static_cast<uint64_t>(w);
      }
    } else if (path == "/hold") {
      while (more()) {
      }
      return;
    } else {
      std::string body = "ok " + path;
      SendAll(fd, "HTTP/1.1 200 OK\r\n" + conn + "Content-Length: " + std::to_string(body.size()) +
                      "\r\n\r\n" + body);
    }
    if (!keep) {
      shutdown(fd, SHUT_WR);
      return;
    }
  }
}

// ------------------------------------------------------------------ TLS

namespace {

SSL_CTX* MakeServerContext() {
  EVP_PKEY* key = EVP_EC_gen("P-256");
  X509* cert = X509_new();
  X509_set_version(cert, 2);
  ASN1_INTEGER_set(X509_get_serialNumber(cert), 1);
  X509_gmtime_adj(X509_getm_notBefore(cert), -3600);
  X509_gmtime_adj(X509_getm_notAfter(cert), 86400);
  X509_set_pubkey(cert, key);
  X509_NAME* name = X509_get_subject_name(cert);
  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC,
                             reinterpret_cast<const unsigned char*>("tls.test"), -1, -1, 0);
  X509_set_issuer_name(cert, name);
  X509_sign(cert, key, EVP_sha256());
  SSL_CTX* ctx = SSL_CTX_new(TLS_server_method());
  SSL_CTX_use_certificate(ctx, cert);
  SSL_CTX_use_PrivateKey(ctx, key);
  X509_free(cert);
  EVP_PKEY_free(key);
  return ctx;
}

void SetRecvTimeout(int fd, int ms) {
  struct timeval tv = {ms / 1000, (ms % 1000) * 1000};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
}

}  // namespace

TlsServer::TlsServer() : listener_(ListenTcp()), port_(listener_.port) {
  ctx_ = MakeServerContext();
  thread_ = std::thread([this] { Loop(); });
}

TlsServer::~TlsServer() {
  stop_ = true;
  thread_.join();
  SSL_CTX_free(static_cast<SSL_CTX*>(ctx_));
}

std::vector<std::string> TlsServer::snis() const {
  std::lock_guard<std::mutex> lock(mu_);
  return snis_;
}

void TlsServer::Loop() {
  while (!stop_) {
    struct pollfd p = {listener_.fd.get(), POLLIN, 0};
    if (poll(&p, 1, 20) <= 0) continue;
    UniqueFd fd(accept4(listener_.fd.get(), nullptr, nullptr, SOCK_CLOEXEC));
    if (!fd) continue;
    accepted_++;
    SetRecvTimeout(fd.get(), 3000);
    SSL* ssl = SSL_new(static_cast<SSL_CTX*>(ctx_));
    SSL_set_fd(ssl, fd.get());
    if (SSL_accept(ssl) == 1) {
      handshakes_++;
      const char* sni = SSL_get_servername(ssl, TLSEXT_NAMETYPE_host_name);
      {
        std::lock_guard<std::mutex> lock(mu_);
        snis_.push_back(sni ? sni : "");
      }
      std::string req;
      char tmp[4096];
      while (req.find("\r\n\r\n") == std::string::npos) {
        int n = SSL_read(ssl, tmp, sizeof tmp);
        if (n <= 0) break;
        req.append(tmp, static_cast<size_t>(n));
      }
      std::string body = "hello over tls";
      std::string resp = "HTTP/1.1 200 OK\r\nContent-Length: " + std::to_string(body.size()) +
                         "\r\nConnection: close\r\n\r\n" + body;
      SSL_write(ssl, resp.data(), static_cast<int>(resp.size()));
      SSL_shutdown(ssl);
    }
    SSL_free(ssl);
    ERR_clear_error();
  }
}

std::optional<std::string> TlsGet(int fd, const std::string& sni, const std::string& host) {
  SetRecvTimeout(fd, 5000);
  SSL_CTX* ctx = SSL_CTX_new(TLS_client_method());
  SSL_CTX_set_verify(ctx, SSL_VERIFY_NONE, nullptr);
  SSL* ssl = SSL_new(ctx);
  SSL_set_fd(ssl, fd);
  if (!sni.empty()) SSL_set_tlsext_host_name(ssl, sni.c_str());
  std::optional<std::string> out;
  if (SSL_connect(ssl) == 1) {
    std::string req = "GET / HTTP/1.1\r\nHost: " + host + "\r\nConnection: close\r\n\r\n";
    if (SSL_write(ssl, req.data(), static_cast<int>(req.size())) > 0) {
      std::string resp;
      char tmp[4096];
      while (true) {
        int n = SSL_read(ssl, tmp, sizeof tmp);
        if (n <= 0) break;
        resp.append(tmp, static_cast<size_t>(n));
      }
      size_t end = resp.find("\r\n\r\n");
      if (end != std::string::npos) out = resp.substr(end + 4);
    }
  }
  SSL_free(ssl);
  SSL_CTX_free(ctx);
  ERR_clear_error();
  return out;
}

// ------------------------------------------------------------------ commands

CommandResult RunCommand(const std::vector<std::string>& argv) {
  CommandResult res;
  int out_pipe[2], err_pipe[2];
  if (pipe2(out_pipe, O_CLOEXEC) != 0 || pipe2(err_pipe, O_CLOEXEC) != 0) return res;
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, out_pipe[1], 1);
  posix_spawn_file_actions_adddup2(&fa, err_pipe[1], 2);
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  char path[] = "PATH=/usr/local/bin:/usr/bin:/bin";
  char home[] = "HOME=/nonexistent";
  char* envp[] = {path, home, nullptr};
  pid_t pid = -1;
  int rc = posix_spawnp(&pid, args[0], &fa, nullptr, args.data(), envp);
  posix_spawn_file_actions_destroy(&fa);
  close(out_pipe[1]);
  close(err_pipe[1]);
  if (rc == 0) {
    struct pollfd fds[2] = {{out_pipe[0], POLLIN, 0}, {err_pipe[0], POLLIN, 0}};
    int open = 2;
    char tmp[65536];
    while (open > 0) {
      if (poll(fds, 2, -1) < 0 && errno != EINTR) break;
      for (int i = 0; i < 2; ++i) {
        if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
        ssize_t n = read(fds[i].fd, tmp, sizeof tmp);
        if (n <= 0) {
          fds[i].fd = -1;
          --open;
          continue;
        }
        (i == 0 ? res.out : res.err).append(tmp, static_cast<size_t>(n));
      }
    }
    int status = 0;
    waitpid(pid, &status, 0);
    res.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }
  close(out_pipe[0]);
  close(err_pipe[0]);
  return res;
}

bool HaveCurl() { return RunCommand({"curl", "--version"}).exit_code == 0; }

size_t CountFds(int pid) {
  std::string path = pid == 0 ? "/proc/self/fd" : "/proc/" + std::to_string(pid) + "/fd";
  DIR* d = opendir(path.c_str());
  if (!d) return 0;
  size_t n = 0;
  while (struct dirent* e = readdir(d)) {
    if (e->d_name[0] != '.') ++n;
  }
  closedir(d);
  return n;
}

size_t RssKb(int pid) {
  std::ifstream in(pid == 0 ? "/proc/self/status" : "/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::stoul(line.substr(6));
  }
  return 0;
}

}  // namespace ward::net::testing
