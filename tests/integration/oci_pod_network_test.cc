// `ward oci` with a pod's network namespace given by path (oci/pod_network.h): the container
// keeps its own, and its supervisor connects and resolves from the pod's.
#include <arpa/inet.h>
#include <fcntl.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sched.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>

#include "common/unique_fd.h"
#include "harness.h"
#include "local_http.h"
#include "net/idna.h"
#include "net/tls_authority.h"
#include "oci_container.h"
#include "tls_origin.h"

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
               "http://127.0.0.1:" +
               p + "/ 2>/dev/null || echo direct unreached",
           {{"linux", {{"namespaces", {{{"type", "network"}, {"path", pod.netns()}}}}}},
            {"mounts",
             {{{"destination", "/etc/hosts"},
               {"type", "bind"},
               {"source", hosts},
               {"options", hosts_options}},
              {{"destination", "/etc/resolv.conf"},
               {"type", "bind"},
               {"source", resolv},
               {"options", {"rbind", "ro"}}}}},
            {"annotations",
             {{"run.ward/allow-net",
               "pod.test:" + p + ", node.test:" + n + ", 127.0.0.1:" + p + ", 127.0.0.1:" + n}}}});
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
              std::string::npos)
        << Err();
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

// The supervisor resolves with the engine's hosts file: no container under ward may write it,
// though the engine binds it writable (Kubernetes shares one among a pod's containers), or one
// could steer the supervisor of the next container, or of itself restarted. The write fails,
// the file on the node is unchanged, and the supervisor resolves as the engine wrote it.
// Control: the same bind outside a pod's network stays writable.
TEST_F(OciPodNetworkTest, NoContainerRewritesTheHostsFileItsSupervisorResolvesWith) {
  if (geteuid() != 0) GTEST_SKIP() << "joining a pod's network needs root (the first test)";
  Pod pod;
  ASSERT_GT(pod.port(), 0);
  LocalHttp node("node-net\n");
  PodConfig(pod, node.port(),
            "(echo '127.0.0.9 pod.test' > /etc/hosts) 2>/dev/null || echo read-only", {"rbind"});
  const pid_t pid = Create("p3");
  ASSERT_GT(pid, 0) << Err();
  ASSERT_EQ(Oci({"start", "p3"}), 0) << Err();
  EXPECT_EQ(ReapInit(pid), 0);
  EXPECT_EQ(Out(), "read-only\npod-net\nunreached\ndirect unreached\n") << Err();
  EXPECT_EQ(ReadFileOrEmpty(root_->path() + "/pod-hosts"), "127.0.0.1 pod.test node.test\n");
  EXPECT_EQ(Oci({"delete", "p3"}), 0) << Err();
  // Control: without the pod's network the engine's hosts file is the container's to write.
  ClearOut();
  Config("echo '127.0.0.9 pod.test' > /etc/hosts && echo written",
         {{"mounts",
           {{{"destination", "/etc/hosts"},
             {"type", "bind"},
             {"source", root_->path() + "/pod-hosts"},
             {"options", {"rbind"}}}}}});
  const pid_t again = Create("p3b");
  ASSERT_GT(again, 0) << Err();
  ASSERT_EQ(Oci({"start", "p3b"}), 0) << Err();
  EXPECT_EQ(ReapInit(again), 0);
  EXPECT_EQ(Out(), "written\n") << Err();
  EXPECT_EQ(ReadFileOrEmpty(root_->path() + "/pod-hosts"), "127.0.0.9 pod.test\n");
  EXPECT_EQ(Oci({"delete", "p3b"}), 0) << Err();
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

// A credential through ward oci: the node's credentials_dir holds the secret and its
// upstream_ca the origin's CA; the container enables the profile's credential by annotation.
// The origin (on the pod's loopback, by the pod's hosts file) gets the real secret through the
// credential's route; the container holds only the phantom.
TEST_F(OciPodNetworkTest, ACredentialReachesItsHostAndTheContainerHoldsOnlyThePhantom) {
  if (geteuid() != 0) GTEST_SKIP() << "joining a pod's network needs root (the first test)";
  signal(SIGPIPE, SIG_IGN);
  Pod pod;
  ASSERT_GT(pod.port(), 0);
  auto ca = net::TlsAuthority::Create({.common_name = "ward oci test upstream CA"});
  ASSERT_TRUE(ca.ok()) << ca.status().ToString();
  auto ctx = (*ca)->ServerContext(*net::ParseHost("api.test"));
  ASSERT_TRUE(ctx.ok()) << ctx.status().ToString();
  std::unique_ptr<Origin> origin;
  std::thread([&] {  // the origin's sockets and thread in the pod's network
    UniqueFd netns(open(pod.netns().c_str(), O_RDONLY | O_CLOEXEC));
    if (netns && setns(netns.get(), CLONE_NEWNET) == 0) origin = std::make_unique<Origin>(*ctx);
  })
      .join();
  ASSERT_TRUE(origin && origin->port() > 0);
  const std::string port = std::to_string(origin->port());
  const std::string secret = "sk-oci-test-0123456789abcdef0123456789abcdef";
  MakeDirs(root_->path() + "/creds");
  WriteFile(root_->path() + "/creds/testapi", secret);
  WriteFile(root_->path() + "/ca.pem", (*ca)->ca_pem());
  WriteFile(root_->path() + "/none.toml", "[oci]\ncredentials_dir = \"" + root_->path() +
                                              "/creds\"\nupstream_ca = [\"" + root_->path() +
                                              "/ca.pem\"]\n");
  const std::string profile = root_->path() + "/creds.toml";
  WriteFile(profile,
            "extends = \"default\"\n[credentials.testapi]\nfrom = \"env:UNUSED\"\n"
            "hosts = [\"api.test:" +
                port +
                "\"]\nenv = \"TEST_API_KEY\"\n"
                "route = \"testapi\"\nroute_env = { TEST_API_BASE_URL = \"{route_url}\" }\n");
  const std::string hosts = root_->path() + "/pod-hosts";
  WriteFile(hosts, "127.0.0.1 api.test\n");
  Config(
      "busybox wget -q -O - --header \"Authorization: Bearer $TEST_API_KEY\" "
      "\"$TEST_API_BASE_URL/v1/route\"; echo; echo \"phantom=$TEST_API_KEY\"",
      {{"linux", {{"namespaces", {{{"type", "network"}, {"path", pod.netns()}}}}}},
       {"mounts",
        {{{"destination", "/etc/hosts"},
          {"type", "bind"},
          {"source", hosts},
          {"options", {"rbind", "ro"}}}}},
       {"annotations",
        {{"run.ward/profile", profile},
         {"run.ward/credentials", "testapi"},
         {"run.ward/allow-net", "api.test:" + port + ", 127.0.0.1:" + port}}}});
  const pid_t pid = Create("c1");
  ASSERT_GT(pid, 0) << Err();
  ASSERT_EQ(Oci({"start", "c1"}), 0) << Err();
  EXPECT_EQ(ReapInit(pid), 0);
  const std::string out = Out();
  EXPECT_NE(out.find("upstream-ok GET /v1/route HTTP/1.1"), std::string::npos) << out << Err();
  ASSERT_EQ(origin->heads().size(), 1u) << origin->AllHeads();
  EXPECT_NE(origin->heads()[0].find("Bearer " + secret), std::string::npos) << origin->AllHeads();
  const size_t at = out.find("phantom=");
  ASSERT_NE(at, std::string::npos) << out;
  const std::string phantom = out.substr(at + 8, out.find('\n', at) - at - 8);
  EXPECT_EQ(phantom.size(), secret.size());
  EXPECT_NE(phantom, secret);
  EXPECT_EQ(out.find(secret), std::string::npos);
  EXPECT_EQ(Oci({"delete", "c1"}), 0) << Err();
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

// What answers `port` on the pod's loopback to an HTTP GET made from the pod's network (a
// Service's or the kubelet's connection); "" when nothing does.
std::string GetInPod(const Pod& pod, int port) {
  int fds[2];
  if (pipe(fds) != 0) return "";
  const pid_t child = fork();
  if (child == 0) {
    close(fds[0]);
    const int netns = open(pod.netns().c_str(), O_RDONLY | O_CLOEXEC);
    if (netns < 0 || setns(netns, CLONE_NEWNET) != 0) _exit(1);
    const int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in sa = {};
    sa.sin_family = AF_INET;
    sa.sin_port = htons(static_cast<uint16_t>(port));
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(s, reinterpret_cast<sockaddr*>(&sa), sizeof sa) != 0) _exit(2);
    static const char kGet[] = "GET / HTTP/1.0\r\nHost: pod\r\n\r\n";
    if (write(s, kGet, sizeof kGet - 1) != sizeof kGet - 1) _exit(3);
    char buf[4096];
    ssize_t n;
    while ((n = read(s, buf, sizeof buf)) > 0) (void)!write(fds[1], buf, n);
    _exit(0);
  }
  close(fds[1]);
  std::string out;
  char buf[4096];
  ssize_t n;
  while ((n = read(fds[0], buf, sizeof buf)) > 0) out.append(buf, n);
  close(fds[0]);
  waitpid(child, nullptr, 0);
  return out;
}

// Connections from the pod's network reach the ports the container exposes (run.ward/expose) on
// the container's loopback, and no other: a Service or the kubelet's HTTP probe reaches the
// container's server. The container may listen on the ports it exposes and on no other (Landlock).
// An exposed port nothing listens on inside is closed at once. Each connection is in the
// container's trail. Refused: run.ward/expose without a pod's network and ward's own ports inside
// (as root and as a user), and a port something of the pod already has.
TEST_F(OciPodNetworkTest, ExposedPortsAreReachedFromThePodAndNoOtherPortIs) {
  Config("true", {{"annotations", {{"run.ward/expose", "8080"}}}});
  EXPECT_EQ(Create("p6a"), -1);
  EXPECT_NE(Err().find("run.ward/expose: the container has no network of its engine's"),
            std::string::npos)
      << Err();
  EXPECT_FALSE(StateDirExists("p6a"));
  // ward's own listeners inside (the proxy, the DNS stub) are not the container's to expose.
  for (const char* own : {"3128", "53"}) {
    Config("true", {{"annotations", {{"run.ward/expose", own}}}});
    ClearOut();
    EXPECT_EQ(Create("p6o"), -1) << own;
    EXPECT_NE(Err().find("is ward's own inside the container"), std::string::npos) << Err();
    EXPECT_FALSE(StateDirExists("p6o"));
  }
  if (geteuid() != 0) return;  // joining a pod's network needs root (the first test)
  Pod pod;
  ASSERT_GT(pod.port(), 0);
  const std::string audit = root_->path() + "/audit";
  ASSERT_EQ(mkdir(audit.c_str(), 0700), 0);
  Config(
      "mkdir /tmp/www && echo inside > /tmp/www/index.html && "
      "busybox httpd -p 127.0.0.1:8080 -h /tmp/www && "
      "{ busybox httpd -p 127.0.0.1:8081 -h /tmp/www 2>/dev/null || echo 8081 refused; } && "
      "exec sleep 1000",
      {{"linux", {{"namespaces", {{{"type", "network"}, {"path", pod.netns()}}}}}},
       {"annotations", {{"run.ward/expose", "8080, 8082"}, {"run.ward/audit-dir", audit}}}});
  ClearOut();
  const pid_t pid = Create("p6");
  ASSERT_GT(pid, 0) << Err();
  ASSERT_EQ(Oci({"start", "p6"}), 0) << Err();
  std::string answer;
  for (int i = 0; i < 500 && answer.find("inside") == std::string::npos; ++i) {
    answer = GetInPod(pod, 8080);
    if (answer.find("inside") == std::string::npos) usleep(10000);
  }
  EXPECT_NE(answer.find("200 OK"), std::string::npos) << answer;
  EXPECT_NE(answer.find("inside"), std::string::npos) << answer;
  for (int i = 0; i < 500 && Out().empty(); ++i) usleep(10000);  // it tries 8081 after 8080
  EXPECT_EQ(Out(), "8081 refused\n") << Err();
  EXPECT_EQ(GetInPod(pod, 8081), "");  // not exposed: nothing of ward's listens in the pod
  EXPECT_EQ(GetInPod(pod, 8082), "");  // exposed, nothing listens inside: closed
  EXPECT_EQ(Oci({"kill", "p6", "KILL"}), 0) << Err();
  EXPECT_EQ(ReapInit(pid), 137);
  EXPECT_EQ(Oci({"delete", "p6"}), 0) << Err();
  std::string trail;
  for (const auto& s : std::filesystem::directory_iterator(audit + "/sessions")) {
    trail += RunWard({"audit", "--state-dir", audit, "show", s.path().filename()}, Defaults()).out;
  }
  EXPECT_NE(trail.find("net.inbound"), std::string::npos) << trail;
  EXPECT_NE(trail.find("nothing listens on port 8082"), std::string::npos) << trail;
  // A port of the pod's own (its server's) is not the container's to take.
  Config("true", {{"linux", {{"namespaces", {{{"type", "network"}, {"path", pod.netns()}}}}}},
                  {"annotations", {{"run.ward/expose", std::to_string(pod.port())}}}});
  ClearOut();
  EXPECT_EQ(Create("p6b"), -1);
  EXPECT_NE(Err().find("run.ward/expose: port " + std::to_string(pod.port()) +
                       " in the pod's network"),
            std::string::npos)
      << Err();
  EXPECT_FALSE(StateDirExists("p6b"));
}

}  // namespace
}  // namespace ward::test
