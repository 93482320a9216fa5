// `ward oci create/start/kill/delete` with a real container, the test standing where the
// engine stands (oci_container.h).
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "harness.h"
#include "oci_container.h"

namespace ward::test {
namespace {

using Json = nlohmann::json;

class OciLifecycleTest : public OciContainerTest {};

TEST_F(OciLifecycleTest, CreateWaitsStartRunsAndTheEngineReapsTheExitStatus) {
  // The bundle's rlimits apply where they are lower than ward's own.
  Config(
      "echo started; hostname; ulimit -n; ulimit -Hn; exit 7",
      {{"process", {{"rlimits", {{{"type", "RLIMIT_NOFILE"}, {"soft", 512}, {"hard", 1024}}}}}}});
  const pid_t pid = Create("c1");
  ASSERT_GT(pid, 0) << Err();
  Json s = State("c1");
  EXPECT_EQ(s["status"], "created") << s.dump();
  EXPECT_EQ(s["pid"], pid);
  // `create` has exited: the engine (here the test, a subreaper) has adopted init.
  EXPECT_EQ(ParentOf(pid), getpid());
  // Nothing runs before start.
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  EXPECT_EQ(Out(), "");
  ASSERT_EQ(Oci({"start", "c1"}), 0) << Err();
  EXPECT_EQ(ReapInit(pid), 7);
  EXPECT_EQ(Out(), "started\nbox\n512\n1024\n");
  EXPECT_EQ(State("c1")["status"], "stopped");
  EXPECT_NE(Oci({"start", "c1"}), 0);  // a stopped container does not start again
  EXPECT_NE(Err().find("stopped, not created"), std::string::npos) << Err();
  ASSERT_EQ(Oci({"delete", "c1"}), 0) << Err();
  EXPECT_FALSE(StateDirExists("c1"));
}

// The container sees its image and what its bundle binds, as the bundle says (read-only here),
// and nothing of the host beside: a host file next to the bound directory stays out of view.
TEST_F(OciLifecycleTest, AContainerSeesItsImageAndItsBindsOnly) {
  MakeDirs(root_->path() + "/data");
  WriteFile(root_->path() + "/data/given", "given\n");
  const std::string secret = root_->path() + "/secret";
  WriteFile(secret, "secret\n");
  Config(
      "cat /data/given; (echo x > /data/new) 2>/dev/null && echo wrote || echo read-only; "
      "cat " +
          secret + " 2>/dev/null || echo unseen; echo w > /etc/made && echo image-writable",
      {{"mounts",
        {{{"destination", "/data"},
          {"type", "bind"},
          {"source", root_->path() + "/data"},
          {"options", {"rbind", "ro"}}}}}});
  const pid_t pid = Create("c2");
  ASSERT_GT(pid, 0) << Err();
  ASSERT_EQ(Oci({"start", "c2"}), 0) << Err();
  EXPECT_EQ(ReapInit(pid), 0);
  EXPECT_EQ(Out(), "given\nread-only\nunseen\nimage-writable\n");
  // The image's write went to the image (the container's own layer), the bind's did not.
  EXPECT_EQ(ReadFileOrEmpty(bundle_ + "/rootfs/etc/made"), "w\n");
  EXPECT_NE(access((root_->path() + "/data/new").c_str(), F_OK), 0);
  EXPECT_EQ(Oci({"delete", "c2"}), 0) << Err();
}

// A read-only root stays so. What ward does not honour of a bundle it says in the engine's log
// (here a pod's ipc namespace, which it does not join).
TEST_F(OciLifecycleTest, AReadOnlyRootIsReadOnly) {
  Config("echo w > /etc/made 2>/dev/null && echo wrote || echo read-only",
         {{"root", {{"path", "rootfs"}, {"readonly", true}}},
          {"linux", {{"namespaces", {{{"type", "ipc"}, {"path", "/proc/self/ns/ipc"}}}}}}});
  const std::string log = root_->path() + "/oci.log";
  ASSERT_EQ(Oci({"--log", log, "create", "--bundle", bundle_, "--pid-file", root_->path() + "/pid",
                 "c3"}),
            0)
      << Err();
  EXPECT_NE(ReadFileOrEmpty(log).find("linux.namespaces: the ipc namespace at /proc/self/ns/ipc "
                                      "is not joined"),
            std::string::npos)
      << ReadFileOrEmpty(log);
  const pid_t pid = PidFile();
  ASSERT_EQ(Oci({"start", "c3"}), 0) << Err();
  EXPECT_EQ(ReapInit(pid), 0);
  EXPECT_EQ(Out(), "read-only\n");
  EXPECT_NE(access((bundle_ + "/rootfs/etc/made").c_str(), F_OK), 0);
  EXPECT_EQ(Oci({"delete", "c3"}), 0) << Err();
}

// The image's symlinks are the container's: a top-level link to an absolute path and a chain of
// relative links resolve in the container's view, never the host's (the host's /etc has
// debian_version, the image's does not; the image's hosts file is the control).
TEST_F(OciLifecycleTest, TheImagesSymlinksResolveInsideTheContainer) {
  ASSERT_EQ(access("/etc/debian_version", F_OK), 0);
  ASSERT_EQ(symlink("/etc", (bundle_ + "/rootfs/hostetc").c_str()), 0);
  MakeDirs(bundle_ + "/rootfs/a/b");
  ASSERT_EQ(symlink("../../../../../../etc", (bundle_ + "/rootfs/a/b/up").c_str()), 0);
  // And a /proc magic link: its root is the container's.
  ASSERT_EQ(symlink("/proc/self/root", (bundle_ + "/rootfs/pr").c_str()), 0);
  Config(
      "cat /hostetc/hosts /a/b/up/hosts /pr/etc/hosts; "
      "cat /hostetc/debian_version 2>/dev/null || echo absent; "
      "cat /a/b/up/debian_version 2>/dev/null || echo absent; "
      "cat /pr/etc/debian_version 2>/dev/null || echo absent");
  const pid_t pid = Create("s1");
  ASSERT_GT(pid, 0) << Err();
  ASSERT_EQ(Oci({"start", "s1"}), 0) << Err();
  EXPECT_EQ(ReapInit(pid), 0);
  EXPECT_EQ(Out(),
            "127.0.0.1 localhost\n127.0.0.1 localhost\n127.0.0.1 localhost\n"
            "absent\nabsent\nabsent\n");
  EXPECT_EQ(Oci({"delete", "s1"}), 0) << Err();
}

// kill passes the signal to the container's process (TERM: 128+15); delete --force ends a
// container that was created and never started, with its supervisor, and leaves no state.
TEST_F(OciLifecycleTest, KillSignalsItAndDeleteForceEndsACreatedOne) {
  Config("exec sleep 100");
  pid_t pid = Create("k1");
  ASSERT_GT(pid, 0) << Err();
  ASSERT_EQ(Oci({"start", "k1"}), 0) << Err();
  EXPECT_EQ(State("k1")["status"], "running");
  // ps: init, the command and the exec server beside it, as host pids (init's children).
  RunResult ps;
  Json pids;
  for (int i = 0; i < 300 && pids.size() < 3; ++i) {  // the command starts after start returns
    if (i > 0) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    ps = RunWard({"oci", "--root", state_, "ps", "--format", "json", "k1"}, Defaults());
    ASSERT_EQ(ps.status, 0) << ps.err;
    pids = Json::parse(ps.out, nullptr, false);
    ASSERT_TRUE(pids.is_array()) << ps.out;
  }
  ASSERT_EQ(pids.size(), 3u) << ps.out;
  EXPECT_EQ(pids[0], pid);
  EXPECT_EQ(ParentOf(pids[1].get<pid_t>()), pid);
  EXPECT_EQ(ParentOf(pids[2].get<pid_t>()), pid);
  // Freezing is refused with its reason, and the container goes on.
  RunResult pause = RunWard({"oci", "--root", state_, "pause", "k1"}, Defaults());
  EXPECT_NE(pause.status, 0);
  EXPECT_NE(pause.err.find("pause is not supported"), std::string::npos) << pause.err;
  EXPECT_EQ(State("k1")["status"], "running");
  ASSERT_EQ(Oci({"kill", "k1", "TERM"}), 0) << Err();
  EXPECT_EQ(ReapInit(pid), 128 + SIGTERM);
  EXPECT_NE(Oci({"kill", "k1", "KILL"}), 0);  // nothing left to signal
  EXPECT_EQ(Oci({"delete", "k1"}), 0) << Err();

  ASSERT_EQ(Oci({"create", "--bundle", bundle_, "--pid-file", root_->path() + "/pid", "k2"}), 0)
      << Err();
  pid = PidFile();
  EXPECT_NE(Oci({"delete", "k2"}), 0);  // created: only with --force
  ASSERT_EQ(Oci({"delete", "--force", "k2"}), 0) << Err();
  EXPECT_EQ(ReapInit(pid), 128 + SIGKILL);
  EXPECT_FALSE(StateDirExists("k2"));
  // Its supervisor is gone too: the test adopted it with init, and reaps it.
  int status = 0;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  pid_t w = 0;
  while ((w = waitpid(-1, &status, WNOHANG)) >= 0 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_EQ(errno, ECHILD) << "a supervisor was left running";
}

// What decides for a container stays out of every container's view: a running container finds
// neither the state directory nor the socket that starts another, created one, which stays
// created (control: the socket is there on the host, and start through it works).
TEST_F(OciLifecycleTest, NoContainerReachesTheSocketThatStartsAnother) {
  Config("true");
  const pid_t waiting = Create("w1");
  ASSERT_GT(waiting, 0) << Err();
  const std::string sock = state_ + "/w1/start.sock";
  ASSERT_EQ(access(sock.c_str(), F_OK), 0);
  Config("ls " + sock +
         " >/dev/null 2>&1 && echo sock-seen || echo sock-unseen; "
         "ls " +
         state_ + " >/dev/null 2>&1 && echo state-seen || echo state-unseen");
  const pid_t pid = Create("p1");
  ASSERT_GT(pid, 0) << Err();
  ASSERT_EQ(Oci({"start", "p1"}), 0) << Err();
  EXPECT_EQ(ReapInit(pid), 0);
  EXPECT_EQ(Out(), "sock-unseen\nstate-unseen\n");
  EXPECT_EQ(State("w1")["status"], "created");
  ASSERT_EQ(Oci({"start", "w1"}), 0) << Err();
  EXPECT_EQ(ReapInit(waiting), 0);
  EXPECT_EQ(Oci({"delete", "w1"}), 0) << Err();
  EXPECT_EQ(Oci({"delete", "p1"}), 0) << Err();
}

// A container with a terminal, as the engines ask for one: its pty's master reaches the
// engine's console socket during create; the container's process has the slave as its
// terminal (stdin, stdout, stderr) and its output comes through the master.
TEST_F(OciLifecycleTest, ATerminalsMasterGoesToTheConsoleSocket) {
  const std::string console = root_->path() + "/console.sock";
  const int listener = ConsoleSocket(console);
  ASSERT_GE(listener, 0);
  Config("tty; test -t 0 && test -t 2 && echo all-three; exit 4",
         {{"process", {{"terminal", true}}}});
  ASSERT_EQ(Oci({"create", "--bundle", bundle_, "--pid-file", root_->path() + "/pid",
                 "--console-socket", console, "t1"}),
            0)
      << Err();
  const pid_t pid = PidFile();
  // The master came during create: it waits in the listener's queue.
  struct pollfd p = {listener, POLLIN, 0};
  ASSERT_EQ(poll(&p, 1, 0), 1);
  const int master = ReceiveMaster(listener);
  ASSERT_GE(master, 0);
  close(listener);
  ASSERT_EQ(Oci({"start", "t1"}), 0) << Err();
  const std::string out = ReadMaster(master);
  EXPECT_EQ(ReapInit(pid), 4);
  EXPECT_NE(out.find("/dev/pts/"), std::string::npos) << out;
  EXPECT_NE(out.find("all-three"), std::string::npos) << out;
  EXPECT_EQ(Out(), "");  // nothing went to the container's stdio
  EXPECT_EQ(Oci({"delete", "t1"}), 0) << Err();
  // A console socket without a terminal, and a terminal without one, are refused.
  ClearOut();
  Config("true");
  EXPECT_NE(Oci({"create", "--bundle", bundle_, "--console-socket", console, "t2"}), 0);
  EXPECT_NE(Err().find("process.terminal is false"), std::string::npos) << Err();
  EXPECT_FALSE(StateDirExists("t2"));
}

// `events --stats` gives one snapshot of a running container's use, and `update` changes the
// limits of the cgroup ward made for it (as root here; as another user without cgroup
// delegation ward enforces the limits otherwise, and update says there is no cgroup to change).
TEST_F(OciLifecycleTest, EventsShowsTheUseAndUpdateChangesTheLimits) {
  Config("exec sleep 100",
         {{"linux",
           {{"resources", {{"memory", {{"limit", 256 << 20}}}, {"pids", {{"limit", 100}}}}}}}});
  const pid_t pid = Create("u1");
  ASSERT_GT(pid, 0) << Err();
  ASSERT_EQ(Oci({"start", "u1"}), 0) << Err();
  auto stats = [&] {
    RunResult r = RunWard({"oci", "--root", state_, "events", "--stats", "u1"}, Defaults());
    EXPECT_EQ(r.status, 0) << r.err;
    return Json::parse(r.out, nullptr, false);
  };
  // Init is in the container's cgroup from create on; the command joins it once init forks it,
  // just after start.
  Json s = stats();
  for (int i = 0; i < 500 && s["data"]["pids"]["current"].get<int>() < 2; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    s = stats();
  }
  EXPECT_EQ(s["type"], "stats") << s.dump();
  EXPECT_EQ(s["id"], "u1");
  EXPECT_GE(s["data"]["pids"]["current"].get<int>(), 2) << s.dump();
  EXPECT_GT(s["data"]["memory"]["usage"]["usage"].get<uint64_t>(), 0u) << s.dump();
  // `update --resources -` with `json` on stdin, as containerd's shim gives it.
  auto update_with = [&](const std::string& json) {
    RunOptions in = Defaults();
    in.stdin_data = json;
    return RunWard({"oci", "--root", state_, "update", "--resources", "-", "u1"}, in);
  };
  RunResult update = update_with(R"({"pids": {"limit": 50}, "memory": {"limit": 134217728}})");
  if (geteuid() == 0) {
    EXPECT_EQ(update.status, 0) << update.err;
    s = stats();
    EXPECT_EQ(s["data"]["pids"]["limit"], 50) << s.dump();
    EXPECT_EQ(s["data"]["memory"]["usage"]["limit"], 134217728) << s.dump();
  } else {
    EXPECT_NE(update.status, 0);
    EXPECT_NE(update.err.find("no memory cgroup of ward's"), std::string::npos) << update.err;
  }
  // A limit it was created without, a malformed file, and a stream of events: refused, named.
  update = update_with(R"({"cpu": {"quota": 50000, "period": 100000}})");
  EXPECT_NE(update.status, 0);
  EXPECT_NE(update.err.find("no cpu cgroup of ward's"), std::string::npos) << update.err;
  update = update_with(R"({"memory": {"limit": "lots"}})");
  EXPECT_NE(update.status, 0);
  EXPECT_NE(update.err.find("resources: memory.limit"), std::string::npos) << update.err;
  RunResult events = RunWard({"oci", "--root", state_, "events", "u1"}, Defaults());
  EXPECT_NE(events.status, 0);
  EXPECT_NE(events.err.find("one snapshot"), std::string::npos) << events.err;
  ASSERT_EQ(Oci({"kill", "u1", "KILL"}), 0) << Err();
  EXPECT_EQ(ReapInit(pid), 128 + SIGKILL);
  // A stopped container has nothing to show.
  EXPECT_NE(RunWard({"oci", "--root", state_, "events", "--stats", "u1"}, Defaults()).status, 0);
  EXPECT_EQ(Oci({"delete", "u1"}), 0) << Err();
}

// The supervisor holds the container's proxy and audit trail: when it dies, nothing in the
// container goes on unrecorded. Init ends everything inside and exits 137, which the engine
// reads. (The supervisor is the test's child too: adopted, like init, when create exited.)
TEST_F(OciLifecycleTest, AContainerEndsWithItsSupervisor) {
  Config("exec sleep 100");
  const pid_t pid = Create("d1");
  ASSERT_GT(pid, 0) << Err();
  ASSERT_EQ(Oci({"start", "d1"}), 0) << Err();
  EXPECT_EQ(State("d1")["status"], "running");
  std::vector<pid_t> supervisors;
  for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
    const std::string name = entry.path().filename();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    const pid_t p = static_cast<pid_t>(std::stol(name));
    if (p != pid && ParentOf(p) == getpid()) supervisors.push_back(p);
  }
  ASSERT_EQ(supervisors.size(), 1u);
  ASSERT_EQ(kill(supervisors[0], SIGKILL), 0);
  EXPECT_EQ(ReapInit(pid), 137);
  EXPECT_EQ(State("d1")["status"], "stopped");
  EXPECT_EQ(Oci({"delete", "d1"}), 0) << Err();
}

// The credential broker's CA bundle goes where the image keeps its own (oci/container_view.h):
// a path the image chooses. Symlinks on the way (absolute, a relative chain, a /proc magic
// link) are never followed out of the image: create is refused and nothing is made on the
// host. Control: the same credential in an image without links has the bundle inside.
TEST_F(OciLifecycleTest, TheCaBundlesPlaceInTheImageIsNeverReachedThroughALink) {
  MakeDirs(root_->path() + "/creds");
  WriteFile(root_->path() + "/creds/testapi", "sk-oci-test-secret");
  WriteFile(root_->path() + "/none.toml",
            "[oci]\ncredentials_dir = \"" + root_->path() + "/creds\"\n");
  const std::string profile = root_->path() + "/creds.toml";
  WriteFile(profile,
            "extends = \"default\"\n[credentials.testapi]\nfrom = \"env:UNUSED\"\n"
            "hosts = [\"api.test\"]\nenv = \"TEST_API_KEY\"\n");
  const Json annotations = {{"annotations",
                             {{"run.ward/profile", profile},
                              {"run.ward/credentials", "testapi"},
                              {"run.ward/allow-net", "api.test"}}}};
  const std::string planted = "ward-oci-ca-" + std::to_string(getpid());
  const std::string etc = bundle_ + "/rootfs/etc";
  struct Case {
    std::string what;
    std::vector<std::pair<std::string, std::string>> links;  // path in etc/, its target
  };
  const std::vector<Case> cases = {
      {"absolute", {{"ssl", "/tmp/" + planted}}},
      {"relative chain", {{"ssl", "x"}, {"x", "../../../../../../tmp/" + planted}}},
      {"magic link", {{"ssl", "/proc/self/root/tmp/" + planted}}},
  };
  Config("busybox grep -c 'BEGIN CERTIFICATE' /etc/ssl/certs/ca-certificates.crt", annotations);
  for (const Case& c : cases) {
    ClearOut();
    for (const auto& [path, target] : c.links) {
      ASSERT_EQ(symlink(target.c_str(), (etc + "/" + path).c_str()), 0) << c.what;
    }
    EXPECT_EQ(Create("ca1"), -1) << c.what;
    EXPECT_NE(Err().find("symbolic link"), std::string::npos) << c.what << ": " << Err();
    EXPECT_FALSE(StateDirExists("ca1")) << c.what;
    EXPECT_NE(access(("/tmp/" + planted).c_str(), F_OK), 0) << c.what;
    for (const auto& [path, target] : c.links) unlink((etc + "/" + path).c_str());
  }
  // The bundle itself a link to a host file: not taken for the image's bundle, and not written
  // through either.
  MakeDirs(etc + "/ssl/certs");
  ASSERT_EQ(
      symlink("/proc/self/root/etc/hostname", (etc + "/ssl/certs/ca-certificates.crt").c_str()), 0);
  ClearOut();
  EXPECT_EQ(Create("ca2"), -1);
  EXPECT_NE(Err().find("symbolic link"), std::string::npos) << Err();
  EXPECT_FALSE(StateDirExists("ca2"));
  // Control: no link; the bundle is made in the image and holds the broker's CA inside.
  unlink((etc + "/ssl/certs/ca-certificates.crt").c_str());
  ClearOut();
  const pid_t pid = Create("ca3");
  ASSERT_GT(pid, 0) << Err();
  ASSERT_EQ(Oci({"start", "ca3"}), 0) << Err();
  EXPECT_EQ(ReapInit(pid), 0) << Out() << Err();
  EXPECT_GT(std::atoi(Out().c_str()), 0) << Out() << Err();
  EXPECT_EQ(Oci({"delete", "ca3"}), 0) << Err();
}

// What create refuses, it refuses before anything exists: the reason on stderr, no state.
TEST_F(OciLifecycleTest, RefusedBundlesLeaveNothingBehind) {
  ASSERT_EQ(symlink("/etc", (bundle_ + "/rootfs/lnk").c_str()), 0);
  MakeDirs(root_->path() + "/data");
  Config("true", {{"mounts",
                   {{{"destination", "/lnk/data"},
                     {"type", "bind"},
                     {"source", root_->path() + "/data"},
                     {"options", {"rbind"}}}}}});
  EXPECT_NE(Oci({"create", "--bundle", bundle_, "b1"}), 0);
  EXPECT_NE(Err().find("symbolic link"), std::string::npos) << Err();
  EXPECT_FALSE(StateDirExists("b1"));
  EXPECT_NE(access("/etc/data", F_OK), 0);  // nothing was made through the link
  // Nor through a relative link further down the destination's path.
  ClearOut();
  MakeDirs(bundle_ + "/rootfs/srv");
  ASSERT_EQ(symlink("../../../../../../../tmp", (bundle_ + "/rootfs/srv/up").c_str()), 0);
  const std::string planted = "ward-oci-planted-" + std::to_string(getpid());
  Config("true", {{"mounts",
                   {{{"destination", "/srv/up/" + planted},
                     {"type", "bind"},
                     {"source", root_->path() + "/data"},
                     {"options", {"rbind"}}}}}});
  EXPECT_NE(Oci({"create", "--bundle", bundle_, "b1"}), 0);
  EXPECT_NE(Err().find("symbolic link"), std::string::npos) << Err();
  EXPECT_NE(access(("/tmp/" + planted).c_str(), F_OK), 0);
  EXPECT_FALSE(StateDirExists("b1"));
  // Nor through a /proc magic link.
  ClearOut();
  ASSERT_EQ(symlink("/proc/self/root/tmp", (bundle_ + "/rootfs/srv/magic").c_str()), 0);
  Config("true", {{"mounts",
                   {{{"destination", "/srv/magic/" + planted},
                     {"type", "bind"},
                     {"source", root_->path() + "/data"},
                     {"options", {"rbind"}}}}}});
  EXPECT_NE(Oci({"create", "--bundle", bundle_, "b1"}), 0);
  EXPECT_NE(Err().find("symbolic link"), std::string::npos) << Err();
  EXPECT_NE(access(("/tmp/" + planted).c_str(), F_OK), 0);
  EXPECT_FALSE(StateDirExists("b1"));

  ClearOut();
  Config("true", {{"annotations", {{"run.ward/bogus", "1"}}}});
  EXPECT_NE(Oci({"create", "--bundle", bundle_, "b2"}), 0);
  EXPECT_NE(Err().find("run.ward/bogus"), std::string::npos) << Err();
  EXPECT_FALSE(StateDirExists("b2"));

  ClearOut();
  Config("true", {{"process", {{"terminal", true}}}});
  EXPECT_NE(Oci({"create", "--bundle", bundle_, "b3"}), 0);
  EXPECT_NE(Err().find("terminal"), std::string::npos) << Err();
  EXPECT_FALSE(StateDirExists("b3"));

  // A taken id is refused and the container that has it is untouched.
  ClearOut();
  Config("true");
  const pid_t pid = Create("b4");
  ASSERT_GT(pid, 0) << Err();
  EXPECT_NE(Oci({"create", "--bundle", bundle_, "b4"}), 0);
  EXPECT_NE(Err().find("already exists"), std::string::npos) << Err();
  EXPECT_EQ(State("b4")["status"], "created");
  ASSERT_EQ(Oci({"delete", "--force", "b4"}), 0) << Err();
  EXPECT_EQ(ReapInit(pid), 128 + SIGKILL);
}

}  // namespace
}  // namespace ward::test
