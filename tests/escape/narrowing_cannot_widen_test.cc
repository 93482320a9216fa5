// An exec's narrowing policy (`ward serve`) cannot widen through a symlink a sandboxed command
// left in the workspace: the path is resolved in the workspace following no symlink, by the
// daemon and again by `ward run`, whose sandbox init binds the directory it opened there. Each
// refusal has its positive control: the same request on a real directory works, and naming the
// host directory itself does reach it (so the test would see a write that got out).
#include <dirent.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <random>
#include <set>
#include <thread>

#include "../../clients/cpp/ward_client.h"
#include "harness.h"
#include "serve_daemon.h"

namespace ward::test {
namespace {

using Json = nlohmann::json;

// The names in a directory (given by an open descriptor of it), listed from the host.
std::set<std::string> ListFd(int dir_fd) {
  std::set<std::string> names;
  int fd = openat(dir_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (DIR* d = fd >= 0 ? fdopendir(fd) : nullptr) {
    while (struct dirent* e = readdir(d)) {
      std::string n = e->d_name;
      if (n != "." && n != "..") names.insert(n);
    }
    closedir(d);
  }
  return names;
}

std::set<std::string> List(const std::string& dir) {
  int fd = open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return {"(cannot open " + dir + ")"};
  std::set<std::string> names = ListFd(fd);
  close(fd);
  return names;
}

class NarrowingCannotWiden : public SandboxTest {
 protected:
  void SetUp() override {
    SandboxTest::SetUp();
    host_ = root_->path() + "/host";  // outside the workspace: what a link would reach
    MakeDirs(host_ + "/sub", 0755);
    WriteFile(host_ + "/canary", "host\n");
    env_ = BaseEnv(home_);
    env_["XDG_STATE_HOME"] = root_->path() + "/state";
    env_.erase("XDG_RUNTIME_DIR");
    daemon_.emplace(root_->path(), env_, ws_);
    ASSERT_TRUE(daemon_->Start()) << daemon_->log();
    client_ = std::make_unique<client::Client>(daemon_->socket());
    ASSERT_TRUE(client_->Connect()) << client_->last_error().message;
  }
  void TearDown() override {
    if (daemon_) daemon_->Stop();
  }
  std::string Sandbox(Json extra = Json::object()) {
    extra["read"].push_back(StageDir());
    auto r = client_->CreateSandbox(ws_, extra);
    EXPECT_TRUE(r.ok()) << (r.error ? r.error->message : "");
    return r.ok() ? r.result["sandbox_id"].get<std::string>() : "";
  }
  client::Reply Exec(const std::string& sb, const std::string& script, Json options = {}) {
    if (options.is_null()) options = Json::object();
    return client_->Run(sb, {"/bin/sh", "-c", script}, options);
  }
  // An exec that leaves `link` -> `target` in the workspace (as any sandboxed command can).
  void Plant(const std::string& sb, const std::string& target, const std::string& link) {
    auto r = Exec(sb, "ln -sfn '" + target + "' '" + link + "'");
    ASSERT_TRUE(r.ok()) << r.error->message;
    ASSERT_EQ(r.result["exit_code"], 0) << r.result.dump();
  }
  std::set<std::string> HostUntouched() const { return {"canary", "sub"}; }

  std::string host_;
  std::map<std::string, std::string> env_;
  std::optional<ServeDaemon> daemon_;
  std::unique_ptr<client::Client> client_;
};

TEST_F(NarrowingCannotWiden, APlantedSymlinkIsRefusedWhereverItIsOnThePath) {
  std::string sb = Sandbox();
  ASSERT_FALSE(sb.empty());
  Plant(sb, host_, "abs");      // absolute
  Plant(sb, "../host", "rel");  // relative, climbing out of the workspace
  Plant(sb, host_, "mid");      // in the middle of "mid/sub"
  auto mk = Exec(sb, "mkdir -p d && ln -sfn ../../host d/up");  // two levels up
  ASSERT_TRUE(mk.ok());
  struct Case {
    std::string path, link;
  };
  for (const Case& c : {Case{"abs", "abs"}, Case{"rel", "rel"}, Case{"mid/sub", "mid"},
                        Case{"d/up", "d/up"}, Case{ws_ + "/abs", "abs"}}) {
    for (const char* field : {"write", "read"}) {
      auto r =
          Exec(sb, "echo widened > '" + c.path + "/marker'", {{"policy", {{field, {c.path}}}}});
      ASSERT_FALSE(r.ok()) << field << " " << c.path << ": " << r.result.dump();
      EXPECT_EQ(r.error->kind, "policy_denied") << r.error->message;
      EXPECT_NE(r.error->message.find(ws_ + "/" + c.link +
                                      " is a symbolic link inside the "
                                      "workspace"),
                std::string::npos)
          << r.error->message;
    }
  }
  // ".." out of the workspace, by a relative or an absolute name.
  for (const std::string& path : {std::string("../host"), ws_ + "/../host"}) {
    auto r = Exec(sb, "true", {{"policy", {{"write", {path}}}}});
    ASSERT_FALSE(r.ok()) << path;
    EXPECT_EQ(r.error->kind, "policy_denied") << r.error->message;
  }
  EXPECT_EQ(List(host_), HostUntouched());
  EXPECT_EQ(List(host_ + "/sub"), std::set<std::string>{});

  // Positive control: a real directory under the same name takes the same request.
  auto swap = Exec(sb, "rm abs && mkdir abs");
  ASSERT_TRUE(swap.ok());
  auto r = Exec(sb, "echo narrowed > abs/marker", {{"policy", {{"write", {"abs"}}}}});
  ASSERT_TRUE(r.ok()) << r.error->message;
  EXPECT_EQ(r.result["exit_code"], 0) << r.result.dump();
  EXPECT_EQ(ReadFile(ws_ + "/abs/marker"), "narrowed\n");
  EXPECT_EQ(List(host_), HostUntouched());
}

// The sandbox's own paths are re-resolved for every exec: swapping one for a link in between
// is refused as well.
TEST_F(NarrowingCannotWiden, TheSandboxsOwnPathSwappedForASymlinkIsRefused) {
  MakeDirs(ws_ + "/out", 0755);
  WriteFile(ws_ + "/.ward.toml", "[workspace]\naccess = \"read\"\n");
  std::string sb = Sandbox({{"write", {"out"}}});
  ASSERT_FALSE(sb.empty());
  auto r = Exec(sb, "echo ok > out/marker");
  ASSERT_TRUE(r.ok()) << r.error->message;
  EXPECT_EQ(r.result["exit_code"], 0) << r.result.dump();  // positive control
  EXPECT_EQ(ReadFile(ws_ + "/out/marker"), "ok\n");
  // As a command of another sandbox of this workspace (or an earlier run) could.
  ASSERT_EQ(rename((ws_ + "/out").c_str(), (ws_ + "/out.old").c_str()), 0);
  ASSERT_EQ(symlink(host_.c_str(), (ws_ + "/out").c_str()), 0);
  r = Exec(sb, "echo widened > out/marker");
  ASSERT_FALSE(r.ok()) << r.result.dump();
  EXPECT_EQ(r.error->kind, "policy_denied");
  EXPECT_NE(r.error->message.find(ws_ + "/out is a symbolic link"), std::string::npos)
      << r.error->message;
  EXPECT_EQ(List(host_), HostUntouched());
}

// `ward run` itself, as the daemon starts it: the rule through the link is refused by the run,
// not only by the daemon's check.
TEST_F(NarrowingCannotWiden, WardRunRefusesARuleThroughASymlinkInTheWorkspace) {
  ASSERT_EQ(symlink(host_.c_str(), (ws_ + "/sec").c_str()), 0);
  MakeDirs(ws_ + "/a", 0755);
  ASSERT_EQ(symlink("../../host", (ws_ + "/a/up").c_str()), 0);
  for (const std::string& rule : {ws_ + "/sec", ws_ + "/sec/sub", ws_ + "/a/up"}) {
    for (const char* opt : {"-w", "-r"}) {
      RunResult r = Shell("echo widened > '" + rule + "/marker'", {opt, rule});
      EXPECT_EQ(r.status, 125) << opt << " " << rule << ": " << r.err;
      EXPECT_NE(r.err.find("is a symbolic link inside the workspace"), std::string::npos) << r.err;
    }
  }
  EXPECT_EQ(List(host_), HostUntouched());
  EXPECT_EQ(List(host_ + "/sub"), std::set<std::string>{});
  // Positive control: naming the host directory itself binds it, and the write is seen here.
  RunResult r = Shell("echo granted > '" + host_ + "/marker'", {"-w", host_});
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(ReadFile(host_ + "/marker"), "granted\n");
}

// A process of the workspace's owner swaps `sec` between a real directory and a symlink to the
// host directory in a tight loop while the daemon runs execs that narrow to write ["sec"] and
// each write a marker. The workspace is read-only (.ward.toml), so `sec` is a bind of its own,
// made by sandbox init from what it opened in the workspace. The host directory never receives
// a marker; some execs do write theirs into the real directory.
TEST_F(NarrowingCannotWiden, SwappingADirectoryForASymlinkDuringExecsNeverReachesTheHost) {
  MakeDirs(ws_ + "/sec", 0755);
  ASSERT_EQ(symlink(host_.c_str(), (ws_ + "/sec-link").c_str()), 0);
  WriteFile(ws_ + "/.ward.toml", "[workspace]\naccess = \"read\"\n");
  std::string sb = Sandbox({{"write", {"sec"}}});
  ASSERT_FALSE(sb.empty());
  // The real directory, whatever its name at the moment.
  const int real_fd = open((ws_ + "/sec").c_str(), O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  ASSERT_GE(real_fd, 0);

  std::atomic<bool> stop{false};
  std::atomic<long> swaps{0};
  std::thread swapper([&] {
    std::mt19937 rng(7);
    int ws = open(ws_.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
    bool link_is_sec = false;
    while (!stop.load()) {
      if (syscall(SYS_renameat2, ws, "sec", ws, "sec-link", RENAME_EXCHANGE) != 0) break;
      ++swaps;
      link_is_sec = !link_is_sec;
      // The directory is held longer than the link, so that many execs pass the daemon's check
      // and meet the link later, in `ward run`'s planner or in sandbox init.
      std::this_thread::sleep_for(std::chrono::microseconds(rng() % (link_is_sec ? 500 : 5000)));
    }
    close(ws);
  });
  int daemon_refused = 0, run_refused = 0, init_refused = 0, ran = 0;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(150);
  for (int i = 0; i < 400 && std::chrono::steady_clock::now() < deadline; ++i) {
    auto r = Exec(sb, "echo x > sec/m" + std::to_string(i), {{"policy", {{"write", {"sec"}}}}});
    if (!r.ok()) {
      EXPECT_EQ(r.error->kind, "policy_denied") << r.error->message;
      ++daemon_refused;
    } else if (r.result["status"] == "denied") {
      ++run_refused;  // `ward run` refused: its planner or sandbox init met the link
      std::string why = r.result["reason"].dump();
      init_refused += why.find("following no symlink") != std::string::npos;
    } else {
      ++ran;
    }
    if (i >= 100 && daemon_refused >= 3 && run_refused >= 3 && ListFd(real_fd).size() >= 3) break;
  }
  stop = true;
  swapper.join();
  const size_t written = ListFd(real_fd).size();
  close(real_fd);
  std::printf(
      "execs: %d refused by the daemon, %d by ward run (%d by sandbox init), %d ran, %zu "
      "markers written; %ld swaps\n",
      daemon_refused, run_refused, init_refused, ran, written, swaps.load());
  EXPECT_EQ(List(host_), HostUntouched());
  EXPECT_EQ(List(host_ + "/sub"), std::set<std::string>{});
  // Positive controls: the flipping reached the daemon's check and `ward run`'s, and some execs
  // ran with the real directory bound and wrote their marker into it.
  EXPECT_GE(swaps.load(), 10);
  EXPECT_GE(daemon_refused, 1);
  EXPECT_GE(run_refused, 1);
  EXPECT_GE(written, 1u);
}

}  // namespace
}  // namespace ward::test
