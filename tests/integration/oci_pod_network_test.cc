// `ward oci` with a pod's network namespace given by path (oci/pod_network.h): the container
// keeps its own, and its supervisor connects and resolves from the pod's.
#include <arpa/inet.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sched.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <string>

#include "harness.h"
#include "local_http.h"
#include "oci_container.h"

namespace ward::test {
namespace {

// A pod: a process in a network namespace of its own (and, for a caller without privilege, a
// user namespace of its own that owns it), answering HTTP on that namespace's loopback with
// "pod-net". Ended with the test.
class Pod {
 public:
  Pod() {
    int fds[2];
    if (pipe(fds) != 0) return;
    pid_ = fork();
    if (pid_ == 0) {
      close(fds[0]);
      Serve(fds[1]);
    }
    close(fds[1]);
    if (read(fds[0], &port_, sizeof port_) != sizeof port_) port_ = 0;
    close(fds[0]);
  }
  ~Pod() {
    if (pid_ > 0) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
  }
  int port() const { return port_; }
  std::string netns() const { return "/proc/" + std::to_string(pid_) + "/ns/net"; }

 private:
  [[noreturn]] static void Serve(int report) {
    const int flags = geteuid() == 0 ? CLONE_NEWNET : CLONE_NEWUSER | CLONE_NEWNET;
    if (unshare(flags) != 0) _exit(1);
    int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    struct ifreq ifr = {};
    std::strcpy(ifr.ifr_name, "lo");
    if (ioctl(s, SIOCGIFFLAGS, &ifr) != 0) _exit(2);
    ifr.ifr_flags |= IFF_UP;
    if (ioctl(s, SIOCSIFFLAGS, &ifr) != 0) _exit(3);
    int l = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in sa = {};
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof sa;
    if (bind(l, reinterpret_cast<sockaddr*>(&sa), sizeof sa) != 0 || listen(l, 16) != 0 ||
        getsockname(l, reinterpret_cast<sockaddr*>(&sa), &len) != 0) {
      _exit(4);
    }
    const int port = ntohs(sa.sin_port);
    if (write(report, &port, sizeof port) != sizeof port) _exit(5);
    static const char kAnswer[] =
        "HTTP/1.1 200 OK\r\nContent-Length: 8\r\nConnection: close\r\n\r\npod-net\n";
    while (true) {
      int c = accept(l, nullptr, nullptr);
      if (c < 0) continue;
      char buf[4096];
      (void)!read(c, buf, sizeof buf);
      (void)!write(c, kAnswer, sizeof kAnswer - 1);
      close(c);
    }
  }

  pid_t pid_ = -1;
  int port_ = 0;
};

class OciPodNetworkTest : public OciContainerTest {
 protected:
  // config.json joining `pod`'s network, its hosts file naming pod.test and node.test (both on
  // loopback) and allowing both names on the given ports; the script fetches each.
  // The script runs first, then fetches; the engine's hosts file is bound `hosts_options`.
  void PodConfig(const Pod& pod, int node_port, const std::string& first = "true",
                 const std::vector<std::string>& hosts_options = {"rbind", "ro"}) {
    const std::string hosts = root_->path() + "/pod-hosts";
    WriteFile(hosts, "127.0.0.1 pod.test node.test\n");
    const std::string resolv = root_->path() + "/pod-resolv.conf";
    WriteFile(resolv, "nameserver 127.0.0.1\n");
    const std::string p = std::to_string(pod.port()), n = std::to_string(node_port);
    Config(first + "; busybox wget -q -O - http://pod.test:" + p +
               "/; busybox wget -q -O - http://node.test:" + n +
               "/ 2>/dev/null || echo unreached; http_proxy= busybox wget -q -O - "
               "http://127.0.0.1:" + p + "/ 2>/dev/null || echo direct unreached",
           {{"linux", {{"namespaces", {{{"type", "network"}, {"path", pod.netns()}}}}}},
            {"mounts",
             {{{"destination", "/etc/hosts"}, {"type", "bind"}, {"source", hosts},
               {"options", hosts_options}},
              {{"destination", "/etc/resolv.conf"}, {"type", "bind"}, {"source", resolv},
               {"options", {"rbind", "ro"}}}}},
            {"annotations",
             {{"run.ward/allow-net", "pod.test:" + p + ", node.test:" + n + ", 127.0.0.1:" + p +
                                         ", 127.0.0.1:" + n}}}});
  }
};

// The supervisor's connections leave from the pod's network: the pod's loopback server answers,
// and one on the node's loopback (where the supervisor would otherwise connect from) is not
// reached. Names resolve from the pod's hosts file, which the node's does not share. The
// container itself is not in the pod's network: it reaches the pod's server only through ward.
// Unprivileged, the pod's namespace belongs to a user namespace ward is not in: refused with the
// reason, nothing left behind.
TEST_F(OciPodNetworkTest, TheSupervisorConnectsFromThePodsNetwork) {
  Pod pod;
  ASSERT_GT(pod.port(), 0);
  LocalHttp node("node-net\n");
  PodConfig(pod, node.port());
  const pid_t pid = Create("p1");
  if (geteuid() != 0) {
    EXPECT_EQ(pid, -1);
    EXPECT_NE(Err().find("joining the pod's network namespace at " + pod.netns()),
              std::string::npos) << Err();
    EXPECT_NE(Err().find("CAP_SYS_ADMIN"), std::string::npos) << Err();
    EXPECT_FALSE(StateDirExists("p1"));
    return;
  }
  ASSERT_GT(pid, 0) << Err();
  ASSERT_EQ(Oci({"start", "p1"}), 0) << Err();
  EXPECT_EQ(ReapInit(pid), 0);
  EXPECT_EQ(Out(), "pod-net\nunreached\ndirect unreached\n") << Err();
  EXPECT_EQ(node.hits(), 0);
  EXPECT_EQ(Oci({"delete", "p1"}), 0) << Err();
}

// The supervisor resolves with the hosts file as it was at create: a container that rewrites
// the engine's file (bound writable, as engines bind it) does not steer where its supervisor
// connects. Control: the file on the node did change.
TEST_F(OciPodNetworkTest, AContainerThatRewritesItsHostsFileDoesNotSteerItsSupervisor) {
  if (geteuid() != 0) GTEST_SKIP() << "joining a pod's network needs root (the test above)";
  Pod pod;
  ASSERT_GT(pod.port(), 0);
  LocalHttp node("node-net\n");
  PodConfig(pod, node.port(), "echo '127.0.0.9 pod.test' > /etc/hosts", {"rbind"});
  const pid_t pid = Create("p3");
  ASSERT_GT(pid, 0) << Err();
  ASSERT_EQ(Oci({"start", "p3"}), 0) << Err();
  EXPECT_EQ(ReapInit(pid), 0);
  EXPECT_EQ(Out(), "pod-net\nunreached\ndirect unreached\n") << Err();
  EXPECT_EQ(ReadFileOrEmpty(root_->path() + "/pod-hosts"), "127.0.0.9 pod.test\n");
  EXPECT_EQ(Oci({"delete", "p3"}), 0) << Err();
}

// Positive control for the test above: without the pod's namespace the same addresses reach
// the node's server and not the pod's.
TEST_F(OciPodNetworkTest, WithoutAPodTheSupervisorConnectsFromItsOwnNetwork) {
  Pod pod;
  ASSERT_GT(pod.port(), 0);
  LocalHttp node("node-net\n");
  const std::string p = std::to_string(pod.port()), n = std::to_string(node.port());
  Config("busybox wget -q -O - http://127.0.0.1:" + n + "/; busybox wget -q -O - http://127.0.0.1:" +
             p + "/ 2>/dev/null || echo unreached",
         {{"annotations", {{"run.ward/allow-net", "127.0.0.1:" + p + ", 127.0.0.1:" + n}}}});
  const pid_t pid = Create("p2");
  ASSERT_GT(pid, 0) << Err();
  ASSERT_EQ(Oci({"start", "p2"}), 0) << Err();
  EXPECT_EQ(ReapInit(pid), 0);
  EXPECT_EQ(Out(), "node-net\nunreached\n") << Err();
  EXPECT_EQ(node.hits(), 1);
  EXPECT_EQ(Oci({"delete", "p2"}), 0) << Err();
}

// The supervisor, moved into a mount namespace of its own for the pod's files, still admits
// the engine's `ward oci exec` (from the namespaces it came from), and the exec's connections
// leave from the pod's network too.
TEST_F(OciPodNetworkTest, AnExecReachesTheMovedSupervisorAndConnectsFromThePod) {
  if (geteuid() != 0) GTEST_SKIP() << "joining a pod's network needs root (the first test)";
  Pod pod;
  ASSERT_GT(pod.port(), 0);
  LocalHttp node("node-net\n");
  PodConfig(pod, node.port(), "exec sleep 1000");
  const pid_t pid = Create("p4");
  ASSERT_GT(pid, 0) << Err();
  ASSERT_EQ(Oci({"start", "p4"}), 0) << Err();
  EXPECT_EQ(Oci({"exec", "p4", "busybox", "wget", "-q", "-O", "-",
                 "http://pod.test:" + std::to_string(pod.port()) + "/"}),
            0)
      << Err();
  EXPECT_EQ(Out(), "pod-net\n") << Err();
  EXPECT_EQ(Oci({"kill", "p4", "KILL"}), 0) << Err();
  EXPECT_EQ(ReapInit(pid), 137);
  EXPECT_EQ(Oci({"delete", "p4"}), 0) << Err();
}

// A path that is not a network namespace is refused before anything exists, naming the field.
TEST_F(OciPodNetworkTest, APathThatIsNoNetworkNamespaceIsRefused) {
  for (const std::string& path : {std::string("/proc/self/ns/uts"), bundle_ + "/config.json"}) {
    ClearOut();
    Config("true", {{"linux", {{"namespaces", {{{"type", "network"}, {"path", path}}}}}}});
    EXPECT_EQ(Create("n1"), -1);
    EXPECT_NE(Err().find("linux.namespaces[network].path " + path), std::string::npos) << Err();
    EXPECT_NE(Err().find("not a network namespace"), std::string::npos) << Err();
    EXPECT_FALSE(StateDirExists("n1"));
  }
}

}  // namespace
}  // namespace ward::test
