// `ward oci` without a container running: a bundle is read and checked as create will read it
// (its errors in the engine's log format), and the state directory serves `state` and `delete`
// for a container whose init is a real process: `delete` refuses a live one, `delete --force`
// kills it by pidfd and removes its state, and a pid that is another process now is left alone.
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "harness.h"

namespace ward::test {
namespace {

class OciCliTest : public SandboxTest {
 protected:
  void SetUp() override {
    SandboxTest::SetUp();
    bundle_ = root_->path() + "/bundle";
    state_ = root_->path() + "/oci-state";
    MakeDirs(bundle_ + "/rootfs");
  }
  // `ward oci --root STATE [--config NODE] ARGS`; the node file is none unless ARGS name one.
  RunResult Oci(std::vector<std::string> args) {
    if (std::find(args.begin(), args.end(), "--config") == args.end()) {
      args.insert(args.begin(), {"--config", root_->path() + "/none.toml"});
    }
    args.insert(args.begin(), {"oci", "--root", state_});
    return RunWard(args, Defaults());
  }
  static uint64_t StartTime(pid_t pid) {
    std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
    std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::istringstream rest(stat.substr(stat.rfind(')') + 1));
    std::string field;
    for (int i = 3; i <= 22 && rest >> field; ++i) {
      if (i == 22) return std::stoull(field);
    }
    return 0;
  }
  void WriteState(const std::string& id, pid_t pid, uint64_t start) {
    MakeDirs(state_ + "/" + id, 0700);
    nlohmann::json j = {{"id", id},           {"bundle", bundle_}, {"pid", pid},
                        {"pid_start", start}, {"started", true},   {"created", "2026-12-05T00:00:00Z"},
                        {"annotations", nlohmann::json::object()}};
    WriteFile(state_ + "/" + id + "/state.json", j.dump());
  }
  std::string bundle_, state_;
};

TEST_F(OciCliTest, ABundleIsCheckedAsCreateWillReadIt) {
  WriteFile(bundle_ + "/config.json",
            R"({"root": {"path": "rootfs"}, "process": {"args": ["/bin/true"]},
                "annotations": {"run.ward/allow-net": "a.example, b.example"}})");
  RunResult ok = Oci({"check", "--bundle", bundle_});
  ASSERT_EQ(ok.status, 0) << ok.err;
  nlohmann::json j = nlohmann::json::parse(ok.out, nullptr, false);
  EXPECT_EQ(j["allow_net"], nlohmann::json::array({"a.example", "b.example"})) << ok.out;
  // An rlimit above the hard limit this process may set is clamped to it and said in the log;
  // one within it is kept (the control). Root here may lack CAP_SYS_RESOURCE; with it, nothing
  // is clamped.
  struct rlimit nofile = {};
  ASSERT_EQ(getrlimit(RLIMIT_NOFILE, &nofile), 0);
  const std::string warn_log = root_->path() + "/warn.log";
  WriteFile(bundle_ + "/config.json",
            R"({"root": {"path": "rootfs"}, "process": {"args": ["/bin/true"], "rlimits": [
                {"type": "RLIMIT_NOFILE", "soft": 1024, "hard": )" +
                std::to_string(nofile.rlim_max + 1) + R"(},
                {"type": "RLIMIT_CORE", "soft": 0, "hard": 0}]}})");
  RunResult limits = RunWard({"oci", "--root", state_, "--log", warn_log, "check", "--bundle",
                              bundle_},
                             Defaults());
  ASSERT_EQ(limits.status, 0) << limits.err;
  nlohmann::json planned = nlohmann::json::parse(limits.out, nullptr, false)["rlimits"];
  ASSERT_EQ(planned.size(), 2u) << limits.out;
  EXPECT_EQ(planned[1]["clamped"], false);
  if (planned[0]["clamped"] == true) {
    EXPECT_EQ(planned[0]["hard"], nofile.rlim_max);
    EXPECT_NE(ReadFile(warn_log).find("level=warning msg=\"RLIMIT_NOFILE 1024:" +
                                      std::to_string(nofile.rlim_max + 1) + " clamped to 1024:"),
              std::string::npos)
        << ReadFile(warn_log);
  } else {
    EXPECT_EQ(planned[0]["hard"], nofile.rlim_max + 1) << "not clamped: CAP_SYS_RESOURCE held";
  }
  // An unknown run.ward/ key: refused, on stderr and in the JSON log the engine reads.
  WriteFile(bundle_ + "/config.json",
            R"({"root": {"path": "rootfs"}, "process": {"args": ["/bin/true"]},
                "annotations": {"run.ward/allow-nets": "a.example"}})");
  const std::string log = root_->path() + "/oci.log";
  RunResult bad = RunWard({"oci", "--root", state_, "--log", log, "--log-format", "json", "check",
                           "--bundle", bundle_},
                          Defaults());
  EXPECT_EQ(bad.status, 1);
  EXPECT_NE(bad.err.find("run.ward/allow-nets"), std::string::npos) << bad.err;
  nlohmann::json line = nlohmann::json::parse(ReadFile(log), nullptr, false);
  EXPECT_EQ(line["level"], "error") << ReadFile(log);
  EXPECT_NE(line["msg"].get<std::string>().find("run.ward/allow-nets"), std::string::npos);
  // A rootfs that links out of the bundle.
  ASSERT_EQ(rmdir((bundle_ + "/rootfs").c_str()), 0);
  ASSERT_EQ(symlink("/", (bundle_ + "/rootfs").c_str()), 0);
  WriteFile(bundle_ + "/config.json",
            R"({"root": {"path": "rootfs"}, "process": {"args": ["/bin/true"]}})");
  RunResult escape = Oci({"check", "--bundle", bundle_});
  EXPECT_EQ(escape.status, 1);
  EXPECT_NE(escape.err.find("root.path"), std::string::npos) << escape.err;
}

// The node's [oci] defaults apply to a container that says nothing; its annotation wins; a
// broken node file refuses with its line.
TEST_F(OciCliTest, TheNodesDefaultsApplyUnlessTheContainerSaysOtherwise) {
  const std::string node = root_->path() + "/node.toml";
  WriteFile(node, "[oci]\nprofile = \"minimal\"\napprover = \"https://approve.example.org/\"\n");
  WriteFile(bundle_ + "/config.json",
            R"({"root": {"path": "rootfs"}, "process": {"args": ["/bin/true"]}})");
  RunResult r = Oci({"--config", node, "check", "--bundle", bundle_});
  ASSERT_EQ(r.status, 0) << r.err;
  nlohmann::json j = nlohmann::json::parse(r.out, nullptr, false);
  EXPECT_EQ(j["profile"], "minimal") << r.out;
  EXPECT_EQ(j["approver"], "https://approve.example.org/");
  WriteFile(bundle_ + "/config.json",
            R"({"root": {"path": "rootfs"}, "process": {"args": ["/bin/true"]},
                "annotations": {"run.ward/profile": "agent"}})");
  r = Oci({"--config", node, "check", "--bundle", bundle_});
  EXPECT_EQ(nlohmann::json::parse(r.out, nullptr, false)["profile"], "agent") << r.out;
  // Without the file: the built-in default.
  r = Oci({"--config", root_->path() + "/absent.toml", "check", "--bundle", bundle_});
  EXPECT_EQ(r.status, 0) << r.err;
  WriteFile(node, "[oci]\nprofil = \"x\"\n");
  r = Oci({"--config", node, "check", "--bundle", bundle_});
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find(node + ":2: oci.profil: unknown key"), std::string::npos) << r.err;
}

TEST_F(OciCliTest, DeleteRefusesALiveContainerAndForceKillsItsInit) {
  pid_t init = fork();
  if (init == 0) {
    execl("/bin/sleep", "sleep", "60", nullptr);
    _exit(127);
  }
  ASSERT_GT(init, 0);
  uint64_t start = 0;
  for (int i = 0; i < 100 && start == 0; ++i) start = StartTime(init);
  WriteState("box", init, start);
  RunResult st = Oci({"state", "box"});
  ASSERT_EQ(st.status, 0) << st.err;
  nlohmann::json j = nlohmann::json::parse(st.out, nullptr, false);
  EXPECT_EQ(j["status"], "running") << st.out;
  EXPECT_EQ(j["pid"], init);
  RunResult refused = Oci({"delete", "box"});
  EXPECT_EQ(refused.status, 1);
  EXPECT_NE(refused.err.find("is running"), std::string::npos) << refused.err;
  EXPECT_EQ(kill(init, 0), 0) << "a refused delete killed the init";
  RunResult forced = Oci({"delete", "--force", "box"});
  EXPECT_EQ(forced.status, 0) << forced.err;
  int ws = 0;
  ASSERT_EQ(waitpid(init, &ws, 0), init);
  EXPECT_TRUE(WIFSIGNALED(ws) && WTERMSIG(ws) == SIGKILL);
  RunResult gone = Oci({"state", "box"});
  EXPECT_EQ(gone.status, 1);
  EXPECT_NE(gone.err.find("does not exist"), std::string::npos) << gone.err;
}

TEST_F(OciCliTest, APidThatIsAnotherProcessNowIsNeverSignalled) {
  pid_t other = fork();
  if (other == 0) {
    execl("/bin/sleep", "sleep", "60", nullptr);
    _exit(127);
  }
  uint64_t start = 0;
  for (int i = 0; i < 100 && start == 0; ++i) start = StartTime(other);
  // The recorded init had this pid but another start time: the container is stopped.
  WriteState("old", other, start + 1);
  RunResult st = Oci({"state", "old"});
  EXPECT_EQ(nlohmann::json::parse(st.out, nullptr, false)["status"], "stopped") << st.out;
  RunResult del = Oci({"delete", "--force", "old"});
  EXPECT_EQ(del.status, 0) << del.err;
  EXPECT_EQ(kill(other, 0), 0) << "another process was signalled";
  kill(other, SIGKILL);
  waitpid(other, nullptr, 0);
}

// What the engines ask a runtime before anything else: its version and the spec it speaks,
// and its features; ward-oci (a link to ward) is ward oci.
TEST_F(OciCliTest, TheVersionAndFeaturesAsEnginesReadThem) {
  RunResult v = RunWard({"oci", "--version"}, Defaults());
  ASSERT_EQ(v.status, 0) << v.err;
  EXPECT_EQ(v.out.rfind("ward-oci version ", 0), 0u) << v.out;
  EXPECT_NE(v.out.find("\nspec: 1.0.2"), std::string::npos) << v.out;
  const std::string link = root_->path() + "/ward-oci";
  ASSERT_EQ(symlink(WardBin().c_str(), link.c_str()), 0);
  RunResult f = RunProgram({link, "features"}, Defaults());
  ASSERT_EQ(f.status, 0) << f.err;
  nlohmann::json j = nlohmann::json::parse(f.out, nullptr, false);
  EXPECT_EQ(j["ociVersionMax"], "1.0.2") << f.out;
  // What an engine checks before it hands over a profile or a cgroup path.
  const nlohmann::json& seccomp = j["linux"]["seccomp"];
  EXPECT_EQ(seccomp["enabled"], true) << f.out;
  EXPECT_NE(std::find(seccomp["actions"].begin(), seccomp["actions"].end(), "SCMP_ACT_ERRNO"),
            seccomp["actions"].end())
      << f.out;
  EXPECT_EQ(std::find(seccomp["actions"].begin(), seccomp["actions"].end(), "SCMP_ACT_NOTIFY"),
            seccomp["actions"].end())
      << f.out;
  EXPECT_EQ(seccomp["operators"].size(), 7u) << f.out;
  EXPECT_EQ(j["linux"]["cgroup"]["systemd"], true) << f.out;
  RunResult other = RunProgram({link, "run"}, Defaults());  // ward's own commands are not there
  EXPECT_NE(other.status, 0);
}

}  // namespace
}  // namespace ward::test
