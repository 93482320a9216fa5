// A test HTTPS (or HTTP) origin on 127.0.0.1 of the network namespace of the thread that makes
// it: the upstream the credential broker sends real secrets to.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <openssl/ssl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

namespace ward::test {

// A one-request-per-connection HTTP/1.1 origin on 127.0.0.1, over TLS when given a context.
// Records each request head; answers 200 "upstream-ok <target>", or what `answer` makes of the
// head (with its blank line) as a whole response.
class Origin {
 public:
  using Answer = std::function<std::string(const std::string& head)>;
  explicit Origin(std::shared_ptr<SSL_CTX> ctx, Answer answer = {})
      : ctx_(std::move(ctx)), answer_(std::move(answer)) {
    fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in sa = {};
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    int one = 1;
    setsockopt(fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (bind(fd_, reinterpret_cast<sockaddr*>(&sa), sizeof sa) != 0 || listen(fd_, 64) != 0) {
      ADD_FAILURE() << "listen: " << strerror(errno);
      return;
    }
    socklen_t len = sizeof sa;
    getsockname(fd_, reinterpret_cast<sockaddr*>(&sa), &len);
    port_ = ntohs(sa.sin_port);
    thread_ = std::thread([this] { Loop(); });
  }
  ~Origin() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
    close(fd_);
  }
  int port() const { return port_; }
  std::vector<std::string> heads() const {
    std::lock_guard<std::mutex> l(mu_);
    return heads_;
  }
  std::string AllHeads() const {
    std::string s;
    for (const auto& h : heads()) s += h + "\n";
    return s;
  }

 private:
  void Loop() {
    while (!stop_) {
      struct pollfd p = {fd_, POLLIN, 0};
      if (poll(&p, 1, 100) <= 0) continue;
      int c = accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (c < 0) continue;
      struct timeval tv = {5, 0};
      setsockopt(c, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
      setsockopt(c, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
      Serve(c);
      close(c);
    }
  }

  void Serve(int c) {
    SSL* ssl = nullptr;
    if (ctx_) {
      ssl = SSL_new(ctx_.get());
      SSL_set_fd(ssl, c);
      if (SSL_accept(ssl) != 1) {  // e.g. a client that does not trust our CA
        SSL_free(ssl);
        return;
      }
    }
    auto rd = [&](char* b, int n) { return ssl ? SSL_read(ssl, b, n) : recv(c, b, n, 0); };
    std::string req;
    char buf[4096];
    while (req.find("\r\n\r\n") == std::string::npos && req.size() < 65536) {
      int n = static_cast<int>(rd(buf, sizeof buf));
      if (n <= 0) break;
      req.append(buf, n);
    }
    size_t end = req.find("\r\n\r\n");
    if (end != std::string::npos) {
      std::string head = req.substr(0, end);
      {
        std::lock_guard<std::mutex> l(mu_);
        heads_.push_back(head);
      }
      std::string target = head.substr(0, head.find("\r\n"));
      std::string body = "upstream-ok " + target;
      std::string resp =
          answer_ ? answer_(req.substr(0, end + 4))
                  : "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: " +
                        std::to_string(body.size()) + "\r\nConnection: close\r\n\r\n" + body;
      if (ssl) {
        SSL_write(ssl, resp.data(), static_cast<int>(resp.size()));
      } else {
        send(c, resp.data(), resp.size(), MSG_NOSIGNAL);
      }
    }
    if (ssl) {
      SSL_shutdown(ssl);
      SSL_free(ssl);
    }
  }

  std::shared_ptr<SSL_CTX> ctx_;
  Answer answer_;
  int fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stop_{false};
  mutable std::mutex mu_;
  std::vector<std::string> heads_;
  std::thread thread_;
};

}  // namespace ward::test
