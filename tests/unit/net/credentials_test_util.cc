#include "credentials_test_util.h"

#include <fcntl.h>
#include <openssl/err.h>
#include <openssl/x509v3.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "net/http_parser.h"
#include "net/tls_util.h"

namespace ward::net::testing {

namespace {

void SetTimeouts(int fd, int ms) {
  struct timeval tv = {ms / 1000, (ms % 1000) * 1000};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
}

bool SslWriteAll(SSL* ssl, const std::string& s) {
  size_t off = 0;
  while (off < s.size()) {
    size_t n = 0;
    if (SSL_write_ex(ssl, s.data() + off, s.size() - off, &n) != 1) return false;
    off += n;
  }
  return true;
}

std::string Chunk(const std::string& s) { return EncodeChunk(s); }

}  // namespace

// ------------------------------------------------------------------ TempDir

TempDir::TempDir() {
  char tmpl[] = "/tmp/ward-creds-test-XXXXXX";
  char* p = mkdtemp(tmpl);
  path_ = p ? p : "/tmp";
}

TempDir::~TempDir() {
  std::error_code ec;
  if (path_ != "/tmp") std::filesystem::remove_all(path_, ec);
}

std::string TempDir::Write(const std::string& name, const std::string& content, int mode) {
  std::string p = path_ + "/" + name;
  ::unlink(p.c_str());
  int fd = ::open(p.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd >= 0) {
    size_t off = 0;
    while (off < content.size()) {
      ssize_t n = ::write(fd, content.data() + off, content.size() - off);
      if (n <= 0) break;
      off += static_cast<size_t>(n);
    }
    ::fchmod(fd, static_cast<mode_t>(mode));
    ::close(fd);
  }
  return p;
}

// ------------------------------------------------------------------ PKI

TestPki::TestPki() {
  TlsAuthorityOptions o;
  o.common_name = "ward test upstream CA";
  auto ca = TlsAuthority::Create(o);
  if (ca.ok()) ca_ = std::move(ca).value();
  ca_file_ = dir_.Write("upstream-ca.pem", ca_ ? ca_->ca_pem() : "");
}

std::shared_ptr<SSL_CTX> TestPki::ServerFor(const std::string& name) {
  auto host = ParseHost(name);
  if (!ca_ || !host.ok()) return nullptr;
  auto ctx = ca_->ServerContext(*host);
  return ctx.ok() ? *ctx : nullptr;
}

std::shared_ptr<SSL_CTX> TestPki::SelfSigned(const std::string& name) {
  EvpPkeyPtr key(EVP_EC_gen("P-256"));
  X509Ptr cert(X509_new());
  X509_set_version(cert.get(), 2);
  ASN1_INTEGER_set(X509_get_serialNumber(cert.get()), 7);
  X509_gmtime_adj(X509_getm_notBefore(cert.get()), -3600);
  X509_gmtime_adj(X509_getm_notAfter(cert.get()), 86400);
  X509_set_pubkey(cert.get(), key.get());
  X509_NAME* subject = X509_get_subject_name(cert.get());
  X509_NAME_add_entry_by_txt(subject, "CN", MBSTRING_ASC,
                             reinterpret_cast<const unsigned char*>(name.c_str()), -1, -1, 0);
  X509_set_issuer_name(cert.get(), subject);
  X509V3_CTX v3;
  X509V3_set_ctx_nodb(&v3);
  X509V3_set_ctx(&v3, cert.get(), cert.get(), nullptr, nullptr, 0);
  std::string san = "DNS:" + name;
  X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, &v3, NID_subject_alt_name, san.c_str());
  X509_add_ext(cert.get(), ext, -1);
  X509_EXTENSION_free(ext);
  X509_sign(cert.get(), key.get(), EVP_sha256());
  SslCtxPtr ctx(SSL_CTX_new(TLS_server_method()));
  SSL_CTX_use_certificate(ctx.get(), cert.get());
  SSL_CTX_use_PrivateKey(ctx.get(), key.get());
  ERR_clear_error();
  return ShareSslCtx(std::move(ctx));
}

// ------------------------------------------------------------------ upstream

HttpsUpstream::HttpsUpstream(std::shared_ptr<SSL_CTX> ctx, Responder responder)
    : listener_(ListenTcp()),
      port_(listener_.port),
      ctx_(std::move(ctx)),
      responder_(std::move(responder)) {
  // SSL_write to a client that went away must fail with EPIPE, not kill the test binary.
  signal(SIGPIPE, SIG_IGN);
  acceptor_ = std::thread([this] {
    while (!stop_) {
      struct pollfd p = {listener_.fd.get(), POLLIN, 0};
      if (poll(&p, 1, 20) <= 0) continue;
      int fd = accept4(listener_.fd.get(), nullptr, nullptr, SOCK_CLOEXEC);
      if (fd < 0) continue;
      connections_++;
      std::lock_guard<std::mutex> lock(mu_);
      fds_.push_back(fd);
      threads_.emplace_back([this, fd] { Serve(fd); });
    }
  });
}

HttpsUpstream::~HttpsUpstream() {
  stop_ = true;
  ReleaseStream();
  acceptor_.join();
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (int fd : fds_) ::shutdown(fd, SHUT_RDWR);
  }
  for (auto& t : threads_) t.join();
  for (int fd : fds_) ::close(fd);
}

std::vector<UpstreamRequest> HttpsUpstream::requests() const {
  std::lock_guard<std::mutex> lock(mu_);
  return requests_;
}

void HttpsUpstream::ReleaseStream() {
  std::lock_guard<std::mutex> lock(mu_);
  released_ = true;
  cv_.notify_all();
}

bool HttpsUpstream::WaitRequests(size_t n, int timeout_ms) const {
  std::unique_lock<std::mutex> lock(mu_);
  return cv_.wait_for(lock, std::chrono::milliseconds(timeout_ms),
                      [&] { return requests_.size() >= n; });
}

void HttpsUpstream::Serve(int fd) {
  SetTimeouts(fd, 10000);
  SSL* ssl = SSL_new(ctx_.get());
  SSL_set_fd(ssl, fd);
  if (SSL_accept(ssl) != 1) {
    SSL_free(ssl);
    ERR_clear_error();
    return;
  }
  handshakes_++;
  std::string buf;
  char tmp[16384];
  auto read_more = [&]() {
    size_t n = 0;
    if (SSL_read_ex(ssl, tmp, sizeof tmp, &n) != 1) return false;
    buf.append(tmp, n);
    return true;
  };
  while (!stop_) {
    HttpRequestParser parser;
    HttpParse r;
    if (!buf.empty()) r = parser.Feed(buf);
    while (r.need_more()) {
      size_t before = buf.size();
      if (!read_more()) goto done;
      r = parser.Feed(std::string_view(buf).substr(before));
    }
    if (r.error()) break;
    {
      size_t end = buf.find("\r\n\r\n");
      if (end == std::string::npos) break;
      end += 4;
      UpstreamRequest req;
      req.method = parser.head().method;
      req.target = parser.head().target;
      req.head = buf.substr(0, end);
      req.headers = parser.head().headers;
      buf.erase(0, end);
      const BodyFraming& body = parser.head().body;
      if (body.kind == BodyKind::kContentLength) {
        while (buf.size() < body.length) {
          if (!read_more()) goto done;
        }
        req.body = buf.substr(0, body.length);
        buf.erase(0, body.length);
      } else if (body.kind == BodyKind::kChunked) {
        ChunkedDecoder dec;
        std::string decoded;
        HttpParse c = dec.Feed(buf, &decoded);
        while (c.need_more()) {
          buf.clear();
          if (!read_more()) goto done;
          c = dec.Feed(buf, &decoded);
        }
        if (c.error()) goto done;
        buf.erase(0, c.consumed);
        req.body = decoded;
      }
      bool close = !parser.head().keep_alive;
      std::string custom = responder_ ? responder_(req) : std::string();
      // A response that ends at the close (no length) must close.
      if (custom.substr(0, custom.find("\r\n\r\n")).find("Connection: close") !=
          std::string::npos) {
        close = true;
      }
      std::string target = req.target;
      std::string method = req.method;
      std::string head_text = req.head;
      {
        std::lock_guard<std::mutex> lock(mu_);
        requests_.push_back(std::move(req));
        cv_.notify_all();
      }
      std::string conn = close ? "Connection: close\r\n" : "";
      if (responder_) {
        if (!SslWriteAll(ssl, custom)) goto done;
      } else if (target == "/sse") {
        std::string h = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n" + conn +
                        "Transfer-Encoding: chunked\r\n\r\n";
        if (!SslWriteAll(ssl, h + Chunk("data: first\n\n"))) goto done;
        {
          std::unique_lock<std::mutex> lock(mu_);
          cv_.wait_for(lock, std::chrono::seconds(10), [&] { return released_; });
        }
        if (!SslWriteAll(ssl, Chunk("data: second\n\n") + std::string(kLastChunk))) goto done;
      } else {
        std::string body = target == "/echo" ? head_text : "ok " + method + " " + target;
        std::string resp = "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n" + conn +
                           "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
        if (!SslWriteAll(ssl, resp)) goto done;
      }
      if (close) break;
    }
  }
done:
  SSL_shutdown(ssl);
  SSL_free(ssl);
  ERR_clear_error();
}

// ------------------------------------------------------------------ clients

CommandResult RunWithEnv(const std::vector<std::string>& argv,
                         const std::map<std::string, std::string>& env, int timeout_ms) {
  CommandResult res;
  int out_pipe[2], err_pipe[2];
  if (pipe2(out_pipe, O_CLOEXEC) != 0) return res;
  if (pipe2(err_pipe, O_CLOEXEC) != 0) {
    close(out_pipe[0]);
    close(out_pipe[1]);
    return res;
  }
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&fa, out_pipe[1], 1);
  posix_spawn_file_actions_adddup2(&fa, err_pipe[1], 2);
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  std::vector<std::string> env_strings = {"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=/nonexistent"};
  for (const auto& [k, v] : env) env_strings.push_back(k + "=" + v);
  std::vector<char*> envp;
  for (std::string& e : env_strings) envp.push_back(e.data());
  envp.push_back(nullptr);
  pid_t pid = -1;
  int rc = posix_spawnp(&pid, args[0], &fa, nullptr, args.data(), envp.data());
  posix_spawn_file_actions_destroy(&fa);
  close(out_pipe[1]);
  close(err_pipe[1]);
  if (rc == 0) {
    auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
    struct pollfd fds[2] = {{out_pipe[0], POLLIN, 0}, {err_pipe[0], POLLIN, 0}};
    int open = 2;
    char tmp[65536];
    while (open > 0) {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                      deadline - std::chrono::steady_clock::now())
                      .count();
      if (left <= 0) {
        kill(pid, SIGKILL);
        res.err += "[killed at the timeout]";
        break;
      }
      if (poll(fds, 2, static_cast<int>(left)) < 0 && errno != EINTR) break;
      for (int i = 0; i < 2; ++i) {
        if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
        ssize_t n = read(fds[i].fd, tmp, sizeof tmp);
        if (n <= 0) {
          fds[i].fd = -1;
          --open;
        } else {
          (i == 0 ? res.out : res.err).append(tmp, static_cast<size_t>(n));
        }
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

bool HaveProgram(const std::string& name) {
  return RunWithEnv({"sh", "-c", "command -v " + name}, {}).exit_code == 0;
}

std::vector<policy::HostRule> Hosts(const std::vector<std::string>& patterns) {
  std::vector<policy::HostRule> out;
  for (const std::string& p : patterns) {
    out.push_back(policy::HostRule{p, policy::Origin{"test.toml", 1, "credentials.x.hosts"}});
  }
  return out;
}

std::string EventsText(const std::vector<Event>& events) {
  std::string out;
  for (const Event& e : events) out += e.type + " " + e.data.dump() + "\n";
  return out;
}

}  // namespace ward::net::testing
