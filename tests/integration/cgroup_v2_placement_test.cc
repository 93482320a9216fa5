// Where a run's cgroup goes on the cgroup v2 unified hierarchy, from where ward is started: a
// cgroup of its own (what `systemd-run --scope -p Delegate=yes` gives), which ward leaves for a
// leaf so that its children may get controllers; or a cgroup it shares with other processes (a
// login session's scope, a terminal's), where root takes "ward" below the cgroup2 mount and
// anyone else gets no cgroup, told how to get one. Runs where this identity has a cgroup2
// subtree with the pids controller to make the test's cgroups in: as root, the hierarchy itself;
// as the test user, the parent of $WARD_CGROUP_ROOT (the kernel matrix delegates one).
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>

#include "enforce/probe.h"
#include "harness.h"

namespace ward::test {
namespace {

class CgroupV2PlacementTest : public SandboxTest {
 protected:
  void SetUp() override {
    SandboxTest::SetUp();
    enforce::KernelFeatures f = enforce::ProbeKernel(false);
    if (!f.cgroup.v2_mounted) GTEST_SKIP() << "no cgroup2 hierarchy is mounted here";
    mount_ = f.cgroup.v2_path;
    if (RunningAsRoot()) {
      base_ = mount_;
    } else {
      const char* root = getenv("WARD_CGROUP_ROOT");
      if (root == nullptr || *root == '\0') {
        GTEST_SKIP() << "no delegated cgroup2 subtree for the test user (the kernel matrix sets "
                        "WARD_CGROUP_ROOT to one)";
      }
      std::string r = root;
      base_ = r.rfind(mount_ + "/", 0) == 0 ? r : mount_ + r;
    }
    if (access((base_ + "/cgroup.procs").c_str(), W_OK) != 0) {
      GTEST_SKIP() << base_ << " is not writable by this identity";
    }
    for (const char* c : {"+pids", "+memory"}) {
      WriteText(base_ + "/cgroup.subtree_control", c);  // may already be on
    }
    if (ReadFile(base_ + "/cgroup.subtree_control").find("pids") == std::string::npos) {
      GTEST_SKIP() << "no pids controller for children of " << base_
                   << " (cgroup.controllers: " << ReadFile(base_ + "/cgroup.controllers") << ")";
    }
    std::random_device rd;
    std::stringstream ss;
    ss << base_ << "/ward-placement-" << std::hex << rd();
    own_ = ss.str();
    ASSERT_EQ(mkdir(own_.c_str(), 0755), 0) << own_ << ": " << strerror(errno);
  }

  void TearDown() override {
    if (!own_.empty()) RemoveTree(own_);
  }

  static void WriteText(const std::string& path, const std::string& text) {
    FILE* f = fopen(path.c_str(), "w");
    if (f == nullptr) return;
    fputs(text.c_str(), f);
    fclose(f);
  }

  static void RemoveTree(const std::string& dir) {
    std::string list = ReadFile(dir + "/cgroup.procs");
    std::istringstream pids(list);
    for (std::string pid; pids >> pid;) kill(std::stoi(pid), SIGKILL);
    std::string out = RunProgram({"/usr/bin/find", dir, "-depth", "-type", "d"}).out;
    std::istringstream dirs(out);
    for (std::string d; std::getline(dirs, d);) {
      for (int i = 0; i < 50 && rmdir(d.c_str()) != 0 && errno == EBUSY; ++i) usleep(100000);
    }
  }

  // `sh -c 'join OWN; [start a sibling;] exec ward ARGS'`, without $WARD_CGROUP_ROOT.
  RunResult WardIn(const std::vector<std::string>& args, bool shared, RunOptions o) {
    o.clean_env = true;
    o.env.erase("WARD_CGROUP_ROOT");
    std::string script = "echo $$ > " + own_ + "/cgroup.procs || exit 99; ";
    // The sibling is not ward's child (a subshell starts it): ward counts its own children as
    // its own.
    if (shared) script += "(sleep 60 </dev/null >/dev/null 2>&1 &); ";
    script += "exec \"$@\"";
    std::vector<std::string> argv = {"/bin/sh", "-c", script, "sh", WardBin()};
    argv.insert(argv.end(), args.begin(), args.end());
    return RunProgram(argv, o);
  }

  nlohmann::json CheckIn(bool shared) {
    RunResult r = WardIn({"check", "--json"}, shared, Defaults());
    nlohmann::json j = nlohmann::json::parse(r.out, nullptr, false);
    EXPECT_FALSE(j.is_discarded()) << r.out << r.err;
    return j;
  }

  std::string mount_, base_, own_;
};

// Alone in its cgroup, ward moves itself into a leaf and makes the run's cgroup next to it.
TEST_F(CgroupV2PlacementTest, AloneInItsCgroupWardUsesIt) {
  nlohmann::json check = CheckIn(false);
  EXPECT_EQ(check["cgroup"]["v2_own_busy"], "") << check.dump(2);
  EXPECT_EQ(check["cgroup"]["v2_parent"], own_) << check.dump(2);
  EXPECT_EQ(check["limits"]["backend"], "cgroup v2") << check.dump(2);

  RunOptions o = Defaults();
  o.env["WARD_TRACE_TIMING"] = "1";
  RunResult r = WardIn({"run", "-r", StageDir(), "--pids", "40", "--memory", "128M", "--",
                        ProbeBin(), "forkbomb", "200"},
                       false, o);
  EXPECT_NE(r.err.find("cgroup created"), std::string::npos) << r.err;
  // The whole sandbox holds 40 processes: the bomb gets fewer than 40 children.
  size_t p = r.out.find("forked=");
  ASSERT_NE(p, std::string::npos) << r.out << r.err;
  EXPECT_LT(std::strtol(r.out.c_str() + p + 7, nullptr, 10), 40) << r.out;
  // ward left its own cgroup for a leaf of its own, so that its run's cgroup could be made.
  std::string leaves = RunProgram({"/usr/bin/find", own_, "-mindepth", "1", "-maxdepth", "1", "-name", "ward-*-sup"}).out;
  EXPECT_NE(leaves, "") << "ward did not move into a leaf of " << own_;
  // The run's cgroup is gone after the run.
  std::string runs = RunProgram({"/usr/bin/find", own_, "-mindepth", "1", "-maxdepth", "1", "-name", "ward-*"}).out;
  EXPECT_EQ(runs, leaves) << "a run's cgroup was left behind";
}

// Sharing its cgroup with another process (a shell's sibling here), ward does not take it.
TEST_F(CgroupV2PlacementTest, ASharedCgroupIsLeftAlone) {
  nlohmann::json check = CheckIn(true);
  EXPECT_NE(check["cgroup"]["v2_own_busy"].get<std::string>().find("also holds"),
            std::string::npos)
      << check.dump(2);
  RunResult run = WardIn({"run", "-r", StageDir(), "--pids", "40", "--", ProbeBin(), "exit", "0"},
                         true, Defaults());
  if (RunningAsRoot()) {
    // Root makes the run's cgroup below "ward" at the top of the hierarchy instead.
    EXPECT_EQ(check["cgroup"]["v2_parent"], mount_ + "/ward") << check.dump(2);
    EXPECT_EQ(check["limits"]["backend"], "cgroup v2") << check.dump(2);
    EXPECT_EQ(run.status, 0) << run.err;
    EXPECT_TRUE(PathExists(mount_ + "/ward"));
  } else {
    // Anyone else runs on rlimits, and whatever needs a cgroup is refused with the way to one.
    EXPECT_EQ(check["limits"]["backend"], "rlimits") << check.dump(2);
    EXPECT_EQ(run.status, 0) << run.err;
    RunResult cpu =
        WardIn({"run", "-r", StageDir(), "--cpu", "0.5", "--", ProbeBin(), "exit", "0"}, true,
               Defaults());
    EXPECT_EQ(cpu.status, 125) << cpu.err;
    EXPECT_NE(cpu.err.find("systemd-run --user --scope -p Delegate=yes"), std::string::npos)
        << cpu.err;
  }
  // Either way the shared cgroup was not touched: no controllers handed to its children.
  std::string control = ReadFile(own_ + "/cgroup.subtree_control");
  EXPECT_TRUE(control.empty() || control == "\n") << control;
}

}  // namespace
}  // namespace ward::test
