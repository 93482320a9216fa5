// The one peer check of every socket ward listens on: our uid AND our pid, user and mount
// namespaces. Peers are real processes: forked children that enter new namespaces the way a
// sandbox does (a user namespace of their own; pid and mount namespaces under it), then
// connect. Each refusal has its control: the same child without the namespace is admitted.
#include "common/socket_peer.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sched.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "common/unique_fd.h"

namespace ward {
namespace {

// A blocking listener in a private temporary directory.
class Listener {
 public:
  Listener() {
    char tmpl[] = "/tmp/ward-peer-test.XXXXXX";
    EXPECT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    path_ = dir_ + "/s.sock";
    fd_ = UniqueFd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
    sockaddr_un a = {};
    a.sun_family = AF_UNIX;
    std::strncpy(a.sun_path, path_.c_str(), sizeof a.sun_path - 1);
    EXPECT_EQ(::bind(fd_.get(), reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
    EXPECT_EQ(::listen(fd_.get(), 256), 0);
    // Reachable by a child that becomes another uid (the uid test): SO_PEERCRED must refuse.
    ::chmod(dir_.c_str(), 0755);
    ::chmod(path_.c_str(), 0777);
  }
  ~Listener() {
    ::unlink(path_.c_str());
    ::rmdir(dir_.c_str());
  }
  const std::string& path() const { return path_; }
  UniqueFd Accept() { return UniqueFd(::accept4(fd_.get(), nullptr, nullptr, SOCK_CLOEXEC)); }

 private:
  std::string dir_, path_;
  UniqueFd fd_;
};

int ConnectTo(const std::string& path) {
  int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un a = {};
  a.sun_family = AF_UNIX;
  std::strncpy(a.sun_path, path.c_str(), sizeof a.sun_path - 1);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) return -1;
  return fd;
}

// A child that enters `unshare_flags` (a pid namespace: its own child connects, as pid 1 there),
// optionally becomes `uid`, connects `connections` times and stays until released.
class PeerChild {
 public:
  struct Options {
    int unshare_flags = 0;
    uid_t uid = static_cast<uid_t>(-1);
    int connections = 1;
    // The connecting process forks a holder of its sockets, closes its own and then exits
    // (`exit_after_handover`) or stays alive (a pid that no longer holds the connection).
    bool hand_over = false;
    bool exit_after_handover = false;
  };

  PeerChild(const std::string& path, Options o) {
    int ready[2], release[2];
    EXPECT_EQ(::pipe2(ready, O_CLOEXEC), 0);
    EXPECT_EQ(::pipe2(release, O_CLOEXEC), 0);
    pid_ = ::fork();
    if (pid_ == 0) {
      ::close(ready[0]);
      ::close(release[1]);
      _exit(Child(path, o, ready[1], release[0]));
    }
    ::close(ready[1]);
    ::close(release[0]);
    release_ = release[1];
    char c = 0;
    ok_ = ::read(ready[0], &c, 1) == 1 && c == 'y';
    ::close(ready[0]);
  }
  ~PeerChild() {
    ::close(release_);
    int st;
    ::waitpid(pid_, &st, 0);
  }
  bool ok() const { return ok_; }  // the child connected (false: its setup was not possible)

 private:
  static int Child(const std::string& path, const Options& o, int ready, int release) {
    auto fail = [&] {
      (void)!::write(ready, "n", 1);
      return 1;
    };
    if (o.uid != static_cast<uid_t>(-1) && (::setgid(o.uid) != 0 || ::setuid(o.uid) != 0)) {
      return fail();
    }
    if (o.unshare_flags != 0 && ::unshare(o.unshare_flags) != 0) return fail();
    if (o.unshare_flags & CLONE_NEWPID) {
      pid_t inner = ::fork();  // the first child is pid 1 of the new namespace
      if (inner < 0) return fail();
      if (inner != 0) {
        int st;
        ::waitpid(inner, &st, 0);
        return 0;
      }
    }
    std::vector<int> fds;
    for (int i = 0; i < o.connections; ++i) {
      int fd = ConnectTo(path);
      if (fd < 0) return fail();
      fds.push_back(fd);
    }
    if (o.hand_over) {
      pid_t holder = ::fork();
      if (holder < 0) return fail();
      if (holder == 0) {
        char c;
        (void)!::read(release, &c, 1);
        _exit(0);
      }
      for (int fd : fds) ::close(fd);
      (void)!::write(ready, "y", 1);
      if (o.exit_after_handover) return 0;  // the holder keeps the connection open
      char c;
      (void)!::read(release, &c, 1);
      ::waitpid(holder, nullptr, 0);
      return 0;
    }
    (void)!::write(ready, "y", 1);
    char c;
    (void)!::read(release, &c, 1);
    return 0;
  }

  pid_t pid_ = -1;
  int release_ = -1;
  bool ok_ = false;
};

PeerVerdict Check(Listener& l, PeerChild::Options o, PeerPinning pinning = PeerPinning::kBest) {
  PeerChild child(l.path(), o);
  if (!child.ok()) {
    PeerVerdict skipped;
    skipped.reason = "setup-failed";
    return skipped;
  }
  UniqueFd fd = l.Accept();
  EXPECT_TRUE(fd.valid());
  return CheckSocketPeer(fd.get(), pinning);
}

bool Differs(const PeerVerdict& v, const std::string& ns) {
  for (const std::string& d : v.differs) {
    if (d == ns) return true;
  }
  return false;
}

// Whether the kernel hands out the pidfd of a socket's peer (SO_PEERPIDFD, Linux 6.5).
bool KernelHasPeerPidfd() {
  int sv[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) return false;
  int pidfd = -1;
  socklen_t len = sizeof pidfd;
  bool has = ::getsockopt(sv[0], SOL_SOCKET, 77 /* SO_PEERPIDFD */, &pidfd, &len) == 0;
  if (pidfd >= 0) ::close(pidfd);
  ::close(sv[0]);
  ::close(sv[1]);
  return has;
}

#define SKIP_IF_NO_SETUP(v) \
  if ((v).reason == "setup-failed") GTEST_SKIP() << "cannot make that namespace here"

TEST(SocketPeer, AProcessInOurNamespacesIsAdmitted) {
  Listener l;
  for (PeerPinning p : {PeerPinning::kBest, PeerPinning::kHoldsSocket}) {
    PeerVerdict v = Check(l, {}, p);
    EXPECT_TRUE(v.admitted) << v.reason;
    EXPECT_TRUE(v.differs.empty());
    EXPECT_EQ(v.uid, static_cast<int64_t>(::geteuid()));
    EXPECT_GT(v.pid, 0);
  }
}

// What a sandbox looks like from outside: our uid, its own user namespace (and pid and mount
// namespaces under it).
TEST(SocketPeer, AProcessInItsOwnUserNamespaceIsRefused) {
  Listener l;
  for (PeerPinning p : {PeerPinning::kBest, PeerPinning::kHoldsSocket}) {
    PeerVerdict v = Check(l, {.unshare_flags = CLONE_NEWUSER}, p);
    SKIP_IF_NO_SETUP(v);
    EXPECT_FALSE(v.admitted);
    EXPECT_EQ(v.uid, static_cast<int64_t>(::geteuid()));  // the uid alone would have let it in
    EXPECT_TRUE(Differs(v, "user")) << v.reason;
    EXPECT_NE(v.reason.find("namespaces other than ours"), std::string::npos) << v.reason;
  }
}

TEST(SocketPeer, ASandboxShapedPeerDiffersInEveryNamespace) {
  Listener l;
  PeerVerdict v = Check(l, {.unshare_flags = CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID});
  SKIP_IF_NO_SETUP(v);
  EXPECT_FALSE(v.admitted);
  EXPECT_EQ(v.differs, (std::vector<std::string>{"pid", "user", "mnt"}));
}

// Each namespace on its own (root: no user namespace needed for the others).
TEST(SocketPeer, EachNamespaceAloneIsEnough) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to enter a mount or pid namespace alone";
  Listener l;
  PeerVerdict mnt = Check(l, {.unshare_flags = CLONE_NEWNS});
  EXPECT_FALSE(mnt.admitted);
  EXPECT_EQ(mnt.differs, std::vector<std::string>{"mnt"});
  PeerVerdict pid = Check(l, {.unshare_flags = CLONE_NEWPID});
  EXPECT_FALSE(pid.admitted);
  EXPECT_EQ(pid.differs, std::vector<std::string>{"pid"});
  // Control: a namespace the check does not compare (uts) changes nothing.
  PeerVerdict uts = Check(l, {.unshare_flags = CLONE_NEWUTS});
  EXPECT_TRUE(uts.admitted) << uts.reason;
}

TEST(SocketPeer, AnotherUidIsRefused) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to become another uid";
  Listener l;
  PeerVerdict v = Check(l, {.uid = 65534});
  EXPECT_FALSE(v.admitted);
  EXPECT_EQ(v.uid, 65534);
  EXPECT_NE(v.reason.find("uid 65534"), std::string::npos) << v.reason;
}

// The pid SO_PEERCRED names must still be the peer when its namespaces are read. The process
// that connected hands its connection to a child and drops its own: it is alive, but no longer
// the holder. SO_PEERPIDFD pins the process that connected (admitted: it is ours); the fallback
// for kernels without it proves the process at that pid holds the connection, and refuses.
TEST(SocketPeer, TheFallbackRefusesAPidThatDoesNotHoldTheConnection) {
  Listener l;
  PeerVerdict best = Check(l, {.hand_over = true}, PeerPinning::kBest);
  if (KernelHasPeerPidfd()) {
    EXPECT_TRUE(best.admitted) << best.reason;
  } else {
    EXPECT_FALSE(best.admitted);  // kBest is the fallback here
    EXPECT_NE(best.reason.find("does not hold"), std::string::npos) << best.reason;
  }
  PeerVerdict fallback = Check(l, {.hand_over = true}, PeerPinning::kHoldsSocket);
  EXPECT_FALSE(fallback.admitted);
  EXPECT_NE(fallback.reason.find("does not hold"), std::string::npos) << fallback.reason;
}

// A peer that is gone by the time it is checked is refused, whichever way it is pinned: its pid
// may already be someone else's.
TEST(SocketPeer, APeerThatExitedIsRefused) {
  Listener l;
  for (PeerPinning p : {PeerPinning::kBest, PeerPinning::kHoldsSocket}) {
    PeerChild child(l.path(), {.hand_over = true, .exit_after_handover = true});
    ASSERT_TRUE(child.ok());
    UniqueFd fd = l.Accept();
    ASSERT_TRUE(fd.valid());
    // Wait until the connecting process is gone (its holder keeps the connection open).
    PeerVerdict v;
    for (int i = 0; i < 500; ++i) {
      v = CheckSocketPeer(fd.get(), p);
      if (!v.admitted) break;
      ::usleep(10000);
    }
    EXPECT_FALSE(v.admitted);
    EXPECT_FALSE(v.reason.empty());
  }
}

TEST(PeerGate, RecordsRefusalsUpToTheCapThenCountsThem) {
  Listener l;
  MemoryEventSink sink;
  PeerGate gate("/some/socket", &sink);
  const int n = static_cast<int>(PeerGate::kMaxAudited) + 5;
  PeerChild child(l.path(), {.unshare_flags = CLONE_NEWUSER, .connections = n});
  if (!child.ok()) GTEST_SKIP() << "cannot make a user namespace here";
  for (int i = 0; i < n; ++i) {
    UniqueFd fd = l.Accept();
    ASSERT_TRUE(fd.valid());
    EXPECT_FALSE(gate.Admit(fd.get()).admitted);
  }
  EXPECT_EQ(gate.refused(), static_cast<uint64_t>(n));
  std::vector<Event> events = sink.events();
  ASSERT_EQ(events.size(), PeerGate::kMaxAudited + 1);
  const Event& first = events.front();
  EXPECT_EQ(first.type, kPeerRefusedEvent);
  EXPECT_EQ(first.data["socket"], "/some/socket");
  EXPECT_EQ(first.data["uid"], ::geteuid());
  EXPECT_GT(first.data["pid"].get<int>(), 0);
  EXPECT_EQ(first.data["differs"], nlohmann::json::array({"user"}));
  EXPECT_EQ(events.back().data["suppressed"], true);
  // Control: an admitted peer is neither counted nor recorded.
  PeerChild ours(l.path(), {});
  ASSERT_TRUE(ours.ok());
  UniqueFd fd = l.Accept();
  EXPECT_TRUE(gate.Admit(fd.get()).admitted);
  EXPECT_EQ(gate.refused(), static_cast<uint64_t>(n));
  EXPECT_EQ(sink.events().size(), PeerGate::kMaxAudited + 1);
}

// A client checks its server as soon as connect() returns, which may be before the server has
// accepted; the fallback waits for the accept. Control: a server that never accepts is refused.
TEST(SocketPeer, TheFallbackWaitsForTheServersAccept) {
  Listener l;
  UniqueFd client(ConnectTo(l.path()));
  ASSERT_TRUE(client.valid());
  UniqueFd accepted;
  std::thread server([&] {
    ::usleep(200 * 1000);
    accepted = l.Accept();
  });
  PeerVerdict v = CheckSocketPeer(client.get(), PeerPinning::kHoldsSocket);
  server.join();
  EXPECT_TRUE(accepted.valid());
  EXPECT_TRUE(v.admitted) << v.reason;
  UniqueFd waiting(ConnectTo(l.path()));
  ASSERT_TRUE(waiting.valid());
  PeerVerdict never = CheckSocketPeer(waiting.get(), PeerPinning::kHoldsSocket);
  EXPECT_FALSE(never.admitted);
  EXPECT_NE(never.reason.find("never accepted"), std::string::npos) << never.reason;
}

// A client that connects and closes at once (a liveness probe) asked nothing: refused as hung up,
// which a PeerGate does not record. Control: the same client holding its connection is admitted.
TEST(SocketPeer, APeerThatHungUpIsRefusedAsHungUp) {
  Listener l;
  int closed[2];
  ASSERT_EQ(::pipe2(closed, O_CLOEXEC), 0);
  pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    ::close(ConnectTo(l.path()));
    (void)!::write(closed[1], "y", 1);
    ::pause();
    _exit(0);
  }
  ::close(closed[1]);
  char c;
  ASSERT_EQ(::read(closed[0], &c, 1), 1);
  ::close(closed[0]);
  UniqueFd fd = l.Accept();
  ASSERT_TRUE(fd.valid());
  PeerVerdict v = CheckSocketPeer(fd.get(), PeerPinning::kHoldsSocket);
  ::kill(child, SIGKILL);
  ::waitpid(child, nullptr, 0);
  EXPECT_FALSE(v.admitted);
  EXPECT_TRUE(v.hung_up) << v.reason;
  PeerVerdict held = Check(l, {}, PeerPinning::kHoldsSocket);
  EXPECT_TRUE(held.admitted) << held.reason;
  EXPECT_FALSE(held.hung_up);
}

}  // namespace
}  // namespace ward
