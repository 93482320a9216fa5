// No network at all in the core profile: only `lo`, no route out, no TCP rights.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>
#include <cstddef>
#include <cstring>

#include "enforce/landlock.h"
#include "harness.h"

namespace ward::test {
namespace {

class NetworkTest : public SandboxTest {};

// A TCP listener on the host's loopback that counts accepted connections.
class HostListener {
 public:
  HostListener() {
    fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    struct sockaddr_in sa = {};
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    bind(fd_, reinterpret_cast<sockaddr*>(&sa), sizeof sa);
    socklen_t len = sizeof sa;
    getsockname(fd_, reinterpret_cast<sockaddr*>(&sa), &len);
    port_ = ntohs(sa.sin_port);
    listen(fd_, 16);
  }
  ~HostListener() { close(fd_); }
  int port() const { return port_; }
  int Accepted() {
    int n = 0;
    while (true) {
      int c = accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (c < 0) break;
      close(c);
      ++n;
    }
    return n;
  }

 private:
  int fd_ = -1;
  int port_ = 0;
};

TEST_F(NetworkTest, HostLoopbackIsUnreachable) {
  HostListener l;
  RunResult r = Probe({"connect", "127.0.0.1", std::to_string(l.port())});
  EXPECT_NE(r.status, 0);
  EXPECT_EQ(r.out.rfind("err ", 0), 0u) << r.out;
  EXPECT_EQ(l.Accepted(), 0);
  // Positive control: the probe reaches the listener from the host.
  RunResult outside = RunProgram({ProbeBin(), "connect", "127.0.0.1", std::to_string(l.port())});
  EXPECT_EQ(outside.out, "ok connected\n");
  EXPECT_EQ(l.Accepted(), 1);
}

TEST_F(NetworkTest, PublicAddressesUdpIpv6AndIcmpFail) {
  // TCP is refused by Landlock before routing (no TCP ports are granted).
  EXPECT_EQ(Probe({"connect", "192.0.2.1", "443"}).out, TcpConnectRefusal());
  EXPECT_EQ(Probe({"connect", "2001:db8::1", "443"}).out, TcpConnectRefusal());
  // UDP has no route out of a namespace that only has lo.
  EXPECT_EQ(Probe({"udp", "192.0.2.53", "53"}).out, "err ENETUNREACH sendto\n");
  EXPECT_EQ(Probe({"udp", "2001:db8::53", "53"}).out, "err ENETUNREACH sendto\n");
  RunResult r = Probe({"icmp"});
  EXPECT_EQ(r.status, 1) << r.out;
  EXPECT_EQ(Probe({"raw"}).out, "err EPERM socket\n");
  EXPECT_EQ(Probe({"netlink"}).out, "err EAFNOSUPPORT socket\n");
  EXPECT_EQ(Probe({"bind", "8080"}).out,
            enforce::LandlockAbi() >= 4 ? "err EACCES bind\n" : "ok bind\n");
  // Loopback inside works for UDP (positive control that the namespace has a live lo).
  EXPECT_EQ(Probe({"udp", "127.0.0.1", "9"}).out, "ok sent\n");
}

TEST_F(NetworkTest, AbstractSocketsOfTheHostAreUnreachable) {
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  struct sockaddr_un sa = {};
  sa.sun_family = AF_UNIX;
  const char name[] = "ward-test-abstract";
  memcpy(sa.sun_path + 1, name, sizeof name - 1);
  socklen_t len = offsetof(struct sockaddr_un, sun_path) + 1 + sizeof name - 1;
  ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&sa), len), 0);
  ASSERT_EQ(listen(fd, 4), 0);
  EXPECT_EQ(Probe({"abstract-connect", name}).out, "err ECONNREFUSED connect\n");
  EXPECT_EQ(RunProgram({ProbeBin(), "abstract-connect", name}).out, "ok connect\n");
  close(fd);
}

}  // namespace
}  // namespace ward::test
