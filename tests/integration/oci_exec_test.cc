// `ward oci exec` in a running container, the test standing where the engine stands
// (oci_container.h): the exec runs inside with the container's layers, its status and output
// reach the engine, the engine's signals reach it, and losing the engine's process ends it.
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <string>
#include <thread>

#include "harness.h"
#include "oci_container.h"

namespace ward::test {
namespace {

class OciExecTest : public OciContainerTest {
 protected:
  // A container that runs until it is killed, with a read-only bind and its trail in `audit`.
  pid_t StartLongRunning(const std::string& id) {
    for (const char* applet : {"sleep", "true", "killall", "pidof", "readlink"}) {
      symlink("busybox", (bundle_ + "/rootfs/bin/" + applet).c_str());
    }
    MakeDirs(root_->path() + "/data");
    MakeDirs(root_->path() + "/audit");
    Config("exec sleep 1000",
           {{"mounts",
             {{{"destination", "/data"},
               {"type", "bind"},
               {"source", root_->path() + "/data"},
               {"options", {"rbind", "ro"}}}}},
            {"annotations", {{"run.ward/audit-dir", root_->path() + "/audit"}}}});
    const pid_t pid = Create(id);
    if (pid <= 0 || Oci({"start", id}) != 0) return -1;
    return pid;
  }

  void End(const std::string& id, pid_t pid) {
    EXPECT_EQ(Oci({"kill", id, "KILL"}), 0) << Err();
    EXPECT_EQ(ReapInit(pid), 128 + SIGKILL);
    EXPECT_EQ(Oci({"delete", id}), 0) << Err();
  }

  // The container's processes, as `ward oci ps` counts them.
  size_t ProcessCount(const std::string& id) {
    RunResult r = RunWard({"oci", "--root", state_, "ps", "--format", "json", id}, Defaults());
    Json pids = Json::parse(r.out, nullptr, false);
    return pids.is_array() ? pids.size() : 0;
  }

  // What becomes of a client's connection to `sock` (the client in a user namespace of its own
  // with `own_userns`): 0 kept, 1 closed at once (refused), else the client could not try. One
  // stray byte (no request) leaves an admitted connection open.
  static int ConnectionFate(const std::string& sock, bool own_userns) {
    const pid_t child = fork();
    if (child == 0) {
      if (own_userns && unshare(CLONE_NEWUSER) != 0) _exit(3);
      const int s = socket(AF_UNIX, SOCK_SEQPACKET, 0);
      sockaddr_un addr = {};
      addr.sun_family = AF_UNIX;
      std::snprintf(addr.sun_path, sizeof addr.sun_path, "%s", sock.c_str());
      if (connect(s, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) _exit(4);
      if (send(s, "x", 1, MSG_NOSIGNAL) != 1) _exit(errno == EPIPE || errno == ECONNRESET ? 1 : 5);
      struct pollfd p = {s, POLLIN, 0};
      char c;
      const bool closed = poll(&p, 1, 1000) == 1 && recv(s, &c, 1, 0) <= 0;
      _exit(closed ? 1 : 0);
    }
    int status = 0;
    waitpid(child, &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }

  std::string Trail() {
    const std::string dir = root_->path() + "/audit";
    std::string out;
    for (const auto& s : std::filesystem::directory_iterator(dir + "/sessions")) {
      out += RunWard({"audit", "--state-dir", dir, "show", s.path().filename()}, Defaults()).out;
    }
    return out;
  }
};

// The exec is the container's: its hostname, its image, the bind as the bundle gave it
// (read-only), none of the host's files; the container's environment with the engine's
// variables over it; its exit status is the engine's, and it is in the container's trail.
TEST_F(OciExecTest, AnExecRunsInsideWithTheContainersLayers) {
  const std::string secret = root_->path() + "/secret";
  WriteFile(secret, "secret\n");
  const pid_t pid = StartLongRunning("e1");
  ASSERT_GT(pid, 0) << Err();
  EXPECT_EQ(Oci({"exec", "-e", "FOO=bar", "e1", "sh", "-c",
                 "echo in; hostname; echo $PATH $FOO; cat " + secret +
                     " 2>/dev/null || echo unseen; (echo x > /data/new) 2>/dev/null && echo wrote "
                     "|| echo read-only; exit 3"}),
            3)
      << Err();
  EXPECT_EQ(Out(), "in\nbox\n/bin bar\nunseen\nread-only\n");
  EXPECT_NE(access((root_->path() + "/data/new").c_str(), F_OK), 0);
  // Killed by a signal: the engine's process for it ends by the same signal.
  EXPECT_EQ(Oci({"exec", "e1", "sh", "-c", "kill -TERM $$"}), 128 + SIGTERM) << Err();
  // The container goes on.
  EXPECT_EQ(State("e1")["status"], "running");
  End("e1", pid);
  const std::string trail = Trail();
  EXPECT_NE(trail.find("exec.end"), std::string::npos) << trail;
  EXPECT_NE(trail.find("echo in; hostname"), std::string::npos) << trail;
}

// Detached, as conmon and containerd's shim run it: create returns once the exec runs, and the
// pid file names a process the engine adopts, waits for and signals; its TERM reaches the exec,
// and its SIGKILL (which it cannot pass on) ends the exec too.
TEST_F(OciExecTest, ADetachedExecIsTheEnginesToWaitForAndSignal) {
  const pid_t pid = StartLongRunning("e2");
  ASSERT_GT(pid, 0) << Err();
  // init and the command (and the exec server); `start` may return before init forked it.
  size_t alone = ProcessCount("e2");
  for (int i = 0; i < 100 && alone < 2; ++i) {
    usleep(50 * 1000);
    alone = ProcessCount("e2");
  }
  ASSERT_GE(alone, 2u);
  const std::string pid_file = root_->path() + "/exec.pid";
  ASSERT_EQ(Oci({"exec", "--detach", "--pid-file", pid_file, "e2", "sh", "-c",
                 "trap 'echo got-term; exit 9' TERM; echo ready; while :; do sleep 0.05; done"}),
            0)
      << Err();
  const pid_t exec_pid = static_cast<pid_t>(std::stol(ReadFileOrEmpty(pid_file)));
  EXPECT_EQ(ParentOf(exec_pid), getpid());  // adopted: its parent exited
  for (int i = 0; i < 200 && Out().find("ready") == std::string::npos; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_GT(ProcessCount("e2"), alone);
  ASSERT_EQ(kill(exec_pid, SIGTERM), 0);
  EXPECT_EQ(ReapInit(exec_pid), 9);
  EXPECT_NE(Out().find("got-term"), std::string::npos) << Out();

  ASSERT_EQ(Oci({"exec", "-d", "--pid-file", pid_file, "e2", "sleep", "1000"}), 0) << Err();
  const pid_t second = static_cast<pid_t>(std::stol(ReadFileOrEmpty(pid_file)));
  EXPECT_GT(ProcessCount("e2"), alone);
  ASSERT_EQ(kill(second, SIGKILL), 0);
  EXPECT_EQ(ReapInit(second), 128 + SIGKILL);
  size_t now = 0;
  for (int i = 0; i < 200 && (now = ProcessCount("e2")) > alone; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_EQ(now, alone);  // the exec inside went with it
  End("e2", pid);
}

// An exec's terminal (`exec -t`, as `docker exec -it` and `kubectl exec -it` ask): made in the
// container's own devpts by the exec server, the exec's session's controlling terminal, its
// master handed to the engine's console socket; nothing goes to the exec's own stdio.
TEST_F(OciExecTest, AnExecsTerminalGoesToTheConsoleSocket) {
  const pid_t pid = StartLongRunning("e4");
  ASSERT_GT(pid, 0) << Err();
  const std::string console = root_->path() + "/console.sock";
  const int listener = ConsoleSocket(console);
  ASSERT_GE(listener, 0);
  std::string tty_out;
  std::thread engine([&] { tty_out = ReadMaster(ReceiveMaster(listener)); });
  ClearOut();
  EXPECT_EQ(Oci({"exec", "-t", "--console-socket", console, "e4", "sh", "-c",
                 "busybox tty; test -t 0 && test -t 1 && test -t 2 && echo all-three; "
                 "(: < /dev/tty) 2>/dev/null && echo controlling; exit 5"}),
            5)
      << Err();
  engine.join();
  close(listener);
  EXPECT_NE(tty_out.find("/dev/pts/"), std::string::npos) << tty_out;
  EXPECT_NE(tty_out.find("all-three"), std::string::npos) << tty_out;
  EXPECT_NE(tty_out.find("controlling"), std::string::npos) << tty_out;
  EXPECT_EQ(Out(), "");
  End("e4", pid);
}

// What exec refuses, with its reason: a container not running (created, stopped, unknown), a
// terminal without a console socket and one without a terminal, another user, a program that is not there (the engines map the text to 127).
TEST_F(OciExecTest, RefusedExecsSayWhy) {
  Config("true");
  const pid_t created = Create("r1");
  ASSERT_GT(created, 0) << Err();
  EXPECT_NE(Oci({"exec", "r1", "true"}), 0);
  EXPECT_NE(Err().find("created, not running"), std::string::npos) << Err();
  ASSERT_EQ(Oci({"start", "r1"}), 0) << Err();
  EXPECT_EQ(ReapInit(created), 0);
  ClearOut();
  EXPECT_NE(Oci({"exec", "r1", "true"}), 0);
  EXPECT_NE(Err().find("stopped, not running"), std::string::npos) << Err();
  ClearOut();
  EXPECT_NE(Oci({"exec", "nosuch", "true"}), 0);
  EXPECT_NE(Err().find("does not exist"), std::string::npos) << Err();
  EXPECT_EQ(Oci({"delete", "r1"}), 0) << Err();

  const pid_t pid = StartLongRunning("r2");
  ASSERT_GT(pid, 0) << Err();
  ClearOut();
  EXPECT_NE(Oci({"exec", "-t", "r2", "true"}), 0);
  EXPECT_NE(Err().find("a terminal needs --console-socket"), std::string::npos) << Err();
  ClearOut();
  EXPECT_NE(Oci({"exec", "--console-socket", root_->path() + "/c.sock", "r2", "true"}), 0);
  EXPECT_NE(Err().find("asks for no terminal"), std::string::npos) << Err();
  ClearOut();
  EXPECT_NE(Oci({"exec", "--user", std::to_string(getuid() + 1), "r2", "true"}), 0);
  EXPECT_NE(Err().find("the engine's user"), std::string::npos) << Err();
  ClearOut();
  EXPECT_NE(Oci({"exec", "r2", "/bin/nosuch"}), 0);
  EXPECT_NE(Err().find("No such file or directory"), std::string::npos) << Err();
  // An exec's own process file, as the engines write it; a broken one names its field.
  ClearOut();
  const std::string process = root_->path() + "/process.json";
  WriteFile(process, Json{{"args", {"sh", "-c", "echo from-file $X"}},
                          {"env", {"PATH=/bin", "X=1"}},
                          {"cwd", "/"},
                          {"user", {{"uid", getuid()}, {"gid", getgid()}}}}
                         .dump());
  EXPECT_EQ(Oci({"exec", "--process", process, "r2"}), 0) << Err();
  EXPECT_EQ(Out(), "from-file 1\n");
  WriteFile(process, Json{{"args", Json::array()}, {"cwd", "/"}}.dump());
  EXPECT_NE(Oci({"exec", "--process", process, "r2"}), 0);
  EXPECT_NE(Err().find("process: args"), std::string::npos) << Err();
  End("r2", pid);
}

// The exec socket decides what runs inside: no container sees it (nor another's), a process in
// namespaces of its own is refused at its door, and a container that kills its exec server only
// loses its execs (control: an exec works before).
TEST_F(OciExecTest, NoContainerReachesAnExecSocketAndItsExecServerIsItsOwnToLose) {
  const pid_t other = StartLongRunning("x1");
  ASSERT_GT(other, 0) << Err();
  const std::string sock = state_ + "/x1/exec.sock";
  ASSERT_EQ(access(sock.c_str(), F_OK), 0);
  ASSERT_EQ(Oci({"exec", "x1", "true"}), 0) << Err();  // control
  // Nor a process of this uid in namespaces of its own (a sandbox's): the socket's gate closes
  // its connection (control: the same client in the engine's namespaces is kept).
  EXPECT_EQ(ConnectionFate(sock, false), 0);
  EXPECT_EQ(ConnectionFate(sock, true), 1);
  Config("ls " + sock + " >/dev/null 2>&1 && echo sock-seen || echo sock-unseen; "
         "echo started; exec sleep 1000");
  const pid_t pid = Create("x2");
  ASSERT_GT(pid, 0) << Err();
  ASSERT_EQ(Oci({"start", "x2"}), 0) << Err();
  for (int i = 0; i < 200 && Out().find("started") == std::string::npos; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_EQ(Out(), "sock-unseen\nstarted\n");
  // The exec server's descriptors (its socket to the supervisor among them) are out of reach of
  // what runs inside (control: the exec's own are readable).
  ClearOut();
  ASSERT_EQ(Oci({"exec", "x2", "sh", "-c",
                 "p=$(pidof ward-exec); [ -d /proc/$p/fd ] && echo found-server; "
                 "readlink /proc/self/fd/1 >/dev/null && echo own-readable; "
                 "for f in /proc/$p/fd/*; do readlink $f >/dev/null 2>&1 && echo server-fd-read; "
                 "cat $f </dev/null >/dev/null 2>&1 && echo server-fd-opened; done; echo done"}),
            0)
      << Err();
  EXPECT_EQ(Out(), "found-server\nown-readable\ndone\n");
  // Its end is not known: its server went first.
  EXPECT_NE(Oci({"exec", "x2", "sh", "-c", "killall -KILL ward-exec; sleep 1"}), 0);
  EXPECT_NE(Err().find("exec server ended"), std::string::npos) << Err();
  ClearOut();
  int code = 0;
  for (int i = 0; i < 50 && (code = Oci({"exec", "x2", "true"})) == 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_NE(code, 0);
  EXPECT_NE(Err().find("exec server ended"), std::string::npos) << Err();
  EXPECT_EQ(State("x2")["status"], "running");
  EXPECT_EQ(Oci({"exec", "x1", "true"}), 0) << Err();  // the other container's execs go on
  End("x2", pid);
  End("x1", other);
}

}  // namespace
}  // namespace ward::test
