// A tiny HTTP server on the host's loopback for sandbox tests (the egress proxy's upstream).
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <string>
#include <thread>

namespace ward::test {

// A tiny HTTP server on the host's loopback answering every request with `body`.
class LocalHttp {
 public:
  explicit LocalHttp(std::string body) : body_(std::move(body)) {
    fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    int one = 1;
    setsockopt(fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    struct sockaddr_in sa = {};
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    bind(fd_, reinterpret_cast<sockaddr*>(&sa), sizeof sa);
    socklen_t len = sizeof sa;
    getsockname(fd_, reinterpret_cast<sockaddr*>(&sa), &len);
    port_ = ntohs(sa.sin_port);
    listen(fd_, 64);
    thread_ = std::thread([this] {
      while (true) {
        int c = accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
        if (c < 0) return;
        ++hits_;
        char buf[8192];
        ssize_t n = read(c, buf, sizeof buf);
        (void)n;
        std::string resp = "HTTP/1.1 200 OK\r\nContent-Length: " + std::to_string(body_.size()) +
                           "\r\nConnection: close\r\n\r\n" + body_;
        ssize_t w = write(c, resp.data(), resp.size());
        (void)w;
        close(c);
      }
    });
  }
  ~LocalHttp() {
    shutdown(fd_, SHUT_RDWR);
    close(fd_);
    thread_.join();
  }
  int port() const { return port_; }
  int hits() const { return hits_.load(); }

 private:
  std::string body_;
  int fd_ = -1;
  int port_ = 0;
  std::atomic<int> hits_{0};
  std::thread thread_;
};

}  // namespace ward::test
