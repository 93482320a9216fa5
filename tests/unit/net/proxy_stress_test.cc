// Thousands of concurrent connections (allowed, denied, slowloris, garbage, clients that do
// not read) against a proxy running alone in a child process, so that its descriptors and
// memory can be measured exactly: both stay bounded, nothing leaks once the clients leave, and
// a fresh allowed request is served promptly in the middle of it.
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <asio/posix/stream_descriptor.hpp>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "proxy_test_util.h"

namespace ward::net {
namespace {

using testing::ConnectTo;
using testing::CountFds;
using testing::HttpResult;
using testing::Ip;
using testing::MakeRules;
using testing::OriginServer;
using testing::RecvHttpResponse;
using testing::RssKb;
using testing::SendAll;

class CountingSink final : public EventSink {
 public:
  void Emit(std::string_view type, nlohmann::json) override {
    if (type == "net.deny") deny++;
    if (type == "net.allow") allow++;
  }
  uint64_t deny = 0, allow = 0;
};

// The child: a proxy on the inherited listener until the control pipe closes; then one line of
// counters on the result pipe.
[[noreturn]] void RunProxyChild(UniqueFd listener, int ctl_fd, int result_fd) {
  asio::io_context ctx;
  testing::FakeResolver resolver(ctx);
  resolver.Set("origin.test", {Ip("127.0.0.1")});
  CountingSink sink;
  ProxyOptions options;
  options.max_connections = 8192;
  options.header_timeout = std::chrono::seconds(30);  // the slowloris clients hold on
  auto proxy = std::make_unique<EgressProxy>(ctx, MakeRules({"origin.test:*", "127.0.0.1:*"}),
                                             &resolver, &sink, options);
  if (!proxy->Serve(std::move(listener)).ok()) _exit(3);
  asio::posix::stream_descriptor ctl(ctx, ctl_fd);
  ctl.async_wait(asio::posix::stream_descriptor::wait_read, [&](const asio::error_code&) {
    proxy->Stop();
    asio::error_code ec;
    ctl.close(ec);
  });
  if (write(result_fd, "R", 1) != 1) _exit(4);
  ctx.run();
  EgressProxy::Stats s = proxy->stats();
  char line[256];
  int n = std::snprintf(
      line, sizeof line, "%llu %llu %llu %llu %llu %llu\n",
      static_cast<unsigned long long>(s.accepted), static_cast<unsigned long long>(s.denied),
      static_cast<unsigned long long>(s.allowed), static_cast<unsigned long long>(s.errors),
      static_cast<unsigned long long>(sink.deny), static_cast<unsigned long long>(sink.allow));
  if (write(result_fd, line, static_cast<size_t>(n)) != n) _exit(5);
  _exit(0);
}

TEST(ProxyStressTest, ThousandsOfConnectionsStayBoundedAndOthersAreServed) {
  struct rlimit rl;
  ASSERT_EQ(getrlimit(RLIMIT_NOFILE, &rl), 0);
  rl.rlim_cur = rl.rlim_max;
  setrlimit(RLIMIT_NOFILE, &rl);
  getrlimit(RLIMIT_NOFILE, &rl);
  // Client sockets and the origin's sockets both live in this process.
  int scale = rl.rlim_cur >= 8192 ? 4 : rl.rlim_cur >= 4096 ? 2 : 1;
  const int n_slow = 200 * scale, n_denied = 200 * scale, n_allowed = 120 * scale,
            n_unread = 10 * scale, n_garbage = 75 * scale;
  const int total = n_slow + n_denied + n_allowed + n_unread + n_garbage;

  testing::Listener listener = testing::ListenTcp(4096);
  const uint16_t port = listener.port;
  int ctl[2], res[2];
  ASSERT_EQ(pipe2(ctl, O_CLOEXEC), 0);
  ASSERT_EQ(pipe2(res, O_CLOEXEC), 0);
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    close(ctl[1]);
    close(res[0]);
    RunProxyChild(std::move(listener.fd), ctl[0], res[1]);
  }
  listener.fd.reset();
  close(ctl[0]);
  close(res[1]);
  char ready = 0;
  ASSERT_EQ(read(res[0], &ready, 1), 1);
  const size_t base_fds = CountFds(pid);
  const size_t base_rss = RssKb(pid);

  OriginServer origin;
  const std::string a = "origin.test:" + std::to_string(origin.port());
  const std::string host = "Host: " + a + "\r\n";
  std::vector<UniqueFd> slow, denied, allowed, unread, garbage;
  std::mt19937 rng(7);
  std::vector<int> kinds;
  for (int k = 0; k < 5; ++k) {
    int n = std::vector<int>{n_slow, n_denied, n_allowed, n_unread, n_garbage}[k];
    kinds.insert(kinds.end(), n, k);
  }
  std::shuffle(kinds.begin(), kinds.end(), rng);
  auto t_open = std::chrono::steady_clock::now();
  for (int i = 0; i < total; ++i) {
    int kind = kinds[i];
    UniqueFd fd = ConnectTo(port);
    ASSERT_TRUE(fd) << "connection " << i;
    if (kind == 0) {
      SendAll(fd.get(), "GET http://" + a + "/ HTTP/1.1\r\nHo");
      slow.push_back(std::move(fd));
    } else if (kind == 1) {
      SendAll(fd.get(), "CONNECT evil.test:443 HTTP/1.1\r\n\r\n");
      denied.push_back(std::move(fd));
    } else if (kind == 2) {
      SendAll(fd.get(), "GET http://" + a + "/hold HTTP/1.1\r\n" + host + "\r\n");
      allowed.push_back(std::move(fd));
    } else if (kind == 3) {
      SendAll(fd.get(), "GET http://" + a + "/big/" + std::to_string(16 << 20) + " HTTP/1.1\r\n" +
                            host + "\r\n");
      unread.push_back(std::move(fd));
    } else {
      std::string junk(200, '\0');
      for (char& c : junk) c = static_cast<char>(rng());
      junk[0] = 'X';  // not SOCKS: a broken request line
      SendAll(fd.get(), junk + "\r\n\r\n");
      garbage.push_back(std::move(fd));
    }
  }

  // Once the proxy holds them all, a fresh allowed request is still served promptly.
  for (int i = 0; i < 400; ++i) {
    if (CountFds(pid) >= base_fds + n_slow + 2 * n_allowed) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(25));
  }
  auto open_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                     std::chrono::steady_clock::now() - t_open)
                     .count();
  auto t0 = std::chrono::steady_clock::now();
  {
    UniqueFd fd = ConnectTo(port);
    ASSERT_TRUE(fd);
    SendAll(fd.get(), "GET http://" + a + "/fresh HTTP/1.1\r\n" + host + "\r\n");
    HttpResult r = RecvHttpResponse(fd.get(), false, nullptr, 10000);
    EXPECT_EQ(r.status, 200);
    EXPECT_EQ(r.body, "ok /fresh");
  }
  auto fresh_ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0)
          .count();
  EXPECT_LT(fresh_ms, 1000);

  // Peaks while everything is open (denied clients linger for at most a second).
  size_t peak_fds = 0, peak_rss = 0;
  for (int i = 0; i < 30; ++i) {
    peak_fds = std::max(peak_fds, CountFds(pid));
    peak_rss = std::max(peak_rss, RssKb(pid));
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  // Every client connection at most once, plus one upstream per allowed or unread client, plus
  // a pipe (two descriptors) for each bulk transfer (the unread responses).
  EXPECT_LE(peak_fds, base_fds + total + n_allowed + 3 * n_unread + 16);
  EXPECT_GE(peak_fds, base_fds + n_slow + 2 * n_allowed);  // the measurement sees them
  // Per-connection state is small and buffers are capped by the high watermark.
  EXPECT_LT(peak_rss - base_rss, size_t{256} << 10) << "kB";
  std::printf(
      "[ stress ] %d connections held after %lld ms: child fds %zu -> %zu, rss %zu -> "
      "%zu kB, a fresh request took %lld ms\n",
      total, static_cast<long long>(open_ms), base_fds, peak_fds, base_rss, peak_rss,
      static_cast<long long>(fresh_ms));

  for (UniqueFd& fd : denied) {
    HttpResult r = RecvHttpResponse(fd.get(), false, nullptr, 5000);
    EXPECT_EQ(r.status, 403);
  }
  for (UniqueFd& fd : garbage) EXPECT_TRUE(testing::WaitClosed(fd.get(), 5000));

  // Everyone leaves: the proxy returns to where it started.
  slow.clear();
  denied.clear();
  allowed.clear();
  unread.clear();
  garbage.clear();
  size_t after_fds = 0;
  for (int i = 0; i < 200; ++i) {
    after_fds = CountFds(pid);
    if (after_fds <= base_fds) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(25));
  }
  EXPECT_LE(after_fds, base_fds);

  close(ctl[1]);
  std::string line;
  char c;
  while (read(res[0], &c, 1) == 1 && c != '\n') line += c;
  close(res[0]);
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  unsigned long long accepted = 0, ndenied = 0, nallowed = 0, errors = 0, ev_deny = 0, ev_allow = 0;
  ASSERT_EQ(std::sscanf(line.c_str(), "%llu %llu %llu %llu %llu %llu", &accepted, &ndenied,
                        &nallowed, &errors, &ev_deny, &ev_allow),
            6)
      << line;
  EXPECT_EQ(accepted, static_cast<unsigned long long>(total + 1));
  EXPECT_EQ(ndenied, static_cast<unsigned long long>(n_denied));
  EXPECT_EQ(ev_deny, ndenied);
  EXPECT_EQ(nallowed, static_cast<unsigned long long>(n_allowed + n_unread + 1));
  EXPECT_EQ(ev_allow, nallowed);  // each upstream connection reported once
  EXPECT_GE(errors, static_cast<unsigned long long>(n_garbage));
}

}  // namespace
}  // namespace ward::net
