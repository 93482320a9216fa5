// Threat class C, network egress (NE01, NE02, NE07, NE08, NE09) on the default profile, which
// has no network at all. (The proxy and DNS rows are the egress issue's.)
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include "enforce/landlock.h"
#include "harness.h"

namespace ward::test {
namespace {

class Network : public SandboxTest {};

TEST_F(Network, NE01_DirectConnect) {
  EXPECT_EQ(Probe({"connect", "1.1.1.1", "443"}).out, TcpConnectRefusal());
  EXPECT_EQ(Probe({"connect", "93.184.215.14", "80"}).out, TcpConnectRefusal());
}

TEST_F(Network, NE02_UdpAndIcmp) {
  EXPECT_EQ(Probe({"udp", "8.8.8.8", "53"}).out, "err ENETUNREACH sendto\n");
  EXPECT_EQ(Probe({"udp", "8.8.8.8", "443"}).out, "err ENETUNREACH sendto\n");  // QUIC
  EXPECT_EQ(Probe({"raw"}).out, "err EPERM socket\n");
  EXPECT_EQ(Probe({"udp", "127.0.0.1", "9"}).out, "ok sent\n");  // control: lo is up
}

TEST_F(Network, NE07_ExoticFamilies) {
  for (int family : {4 /*IPX*/, 9 /*X25*/, 16 /*NETLINK*/, 17 /*PACKET*/, 29 /*CAN*/,
                     31 /*BLUETOOTH*/, 38 /*ALG*/, 40 /*VSOCK*/, 44 /*XDP*/}) {
    EXPECT_EQ(Probe({"socket", std::to_string(family)}).out, "err EAFNOSUPPORT socket\n") << family;
  }
  EXPECT_EQ(Probe({"socket", "1"}).status, 0);  // control: AF_UNIX
  EXPECT_EQ(Probe({"socket", "2"}).status, 0);  // AF_INET (the socket, not a route)
}

TEST_F(Network, NE08_Ipv6) {
  EXPECT_EQ(Probe({"connect", "2001:4860:4860::8888", "443"}).out, TcpConnectRefusal());
  EXPECT_EQ(Probe({"udp", "2001:4860:4860::8888", "53"}).out, "err ENETUNREACH sendto\n");
}

TEST_F(Network, NE09_HostLoopbackMetadataAndListeners) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  struct sockaddr_in sa = {};
  sa.sin_family = AF_INET;
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa), 0);
  socklen_t len = sizeof sa;
  getsockname(fd, reinterpret_cast<sockaddr*>(&sa), &len);
  listen(fd, 4);
  std::string port = std::to_string(ntohs(sa.sin_port));
  EXPECT_EQ(Probe({"connect", "127.0.0.1", port}).out, TcpConnectRefusal(true));
  EXPECT_EQ(RunProgram({ProbeBin(), "connect", "127.0.0.1", port}).out, "ok connected\n");
  close(fd);
  EXPECT_EQ(Probe({"connect", "169.254.169.254", "80"}).out, TcpConnectRefusal());
  EXPECT_EQ(Probe({"udp", "169.254.169.254", "80"}).out, "err ENETUNREACH sendto\n");
  // A port bound inside is the sandbox's own loopback's: Landlock refuses it from ABI 4 on.
  EXPECT_EQ(Probe({"bind", "8080"}).out,
            enforce::LandlockAbi() >= 4 ? "err EACCES bind\n" : "ok bind\n");
}

}  // namespace
}  // namespace ward::test
