// A container's cgroup is where its engine names it (linux.cgroupsPath): below the engine's (a
// Kubernetes pod's) cgroups, whose limits then hold for the container, in every hierarchy an
// engine's statistics read; made with the container and removed with it, the engine's parents
// kept. A path that has processes in it is never taken over (it would be torn down with the
// container). As a user ward may write no cgroup for, the path is not used and the container
// runs all the same.
#include <signal.h>
#include <sys/wait.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "harness.h"
#include "oci_container.h"

namespace ward::test {
namespace {

using Json = nlohmann::json;

class OciCgroupTest : public OciContainerTest {
 protected:
  void SetUp() override {
    OciContainerTest::SetUp();
    uint32_t r = 0;
    ASSERT_EQ(getrandom(&r, sizeof r, 0), static_cast<ssize_t>(sizeof r));
    top_ = "wardtest-" + std::to_string(r);
  }
  void TearDown() override {
    for (const std::string& dir : made_) rmdir(dir.c_str());
    OciContainerTest::TearDown();
  }

  // The cgroup hierarchies mounted here at their roots: mount point and super options (which
  // name a v1 hierarchy's controllers).
  static std::vector<std::pair<std::string, std::string>> Mounts() {
    std::vector<std::pair<std::string, std::string>> out;
    std::ifstream in("/proc/self/mountinfo");
    std::string line;
    while (std::getline(in, line)) {
      std::istringstream pre(line);
      std::string id, parent, dev, root, mnt;
      pre >> id >> parent >> dev >> root >> mnt;
      const size_t dash = line.find(" - ");
      if (dash == std::string::npos || root != "/") continue;
      std::istringstream post(line.substr(dash + 3));
      std::string fstype, source, options;
      post >> fstype >> source >> options;
      if (fstype == "cgroup" || fstype == "cgroup2") out.emplace_back(mnt, "," + options + ",");
    }
    return out;
  }
  static std::vector<std::string> Hierarchies() {
    std::vector<std::string> out;
    for (const auto& [mnt, options] : Mounts()) out.push_back(mnt);
    return out;
  }
  // The v1 hierarchy of `controller`, "" when none is mounted.
  static std::string V1With(const std::string& controller) {
    for (const auto& [mnt, options] : Mounts()) {
      if (options.find("," + controller + ",") != std::string::npos) return mnt;
    }
    return "";
  }

  // Whether `dir` (below a hierarchy's root) exists in any hierarchy.
  static bool AnyHierarchyHas(const std::string& dir) {
    for (const std::string& h : Hierarchies()) {
      if (access((h + dir).c_str(), F_OK) == 0) return true;
    }
    return false;
  }

  // The lines of /proc/PID/cgroup that end in `leaf`: the hierarchies init is in there.
  static std::vector<std::string> LinesAt(pid_t pid, const std::string& leaf) {
    std::vector<std::string> out;
    std::ifstream in("/proc/" + std::to_string(pid) + "/cgroup");
    std::string line;
    const std::string end = ":" + leaf;
    while (std::getline(in, line)) {
      if (line.size() > end.size() && line.compare(line.size() - end.size(), end.size(), end) == 0) {
        out.push_back(line);
      }
    }
    return out;
  }

  // Removed in TearDown, deepest first, wherever they were made.
  void Forget(const std::string& dir) {
    for (const std::string& h : Hierarchies()) made_.push_back(h + dir);
  }

  std::string top_;
  std::vector<std::string> made_;
};

TEST_F(OciCgroupTest, TheContainersCgroupIsWhereItsEngineNamesItAndGoesWithIt) {
  const std::string leaf = "/" + top_ + "/pod/c1";
  Forget(leaf);
  Forget("/" + top_ + "/pod");
  Forget("/" + top_);
  Config("exec sleep 100", {{"linux", {{"cgroupsPath", leaf}}}});
  const pid_t pid = Create("g1");
  ASSERT_GT(pid, 0) << Err();
  const std::vector<std::string> at = LinesAt(pid, leaf);
  if (geteuid() == 0) {
    // memory, pids, cpu and the accounting hierarchies an engine's statistics read.
    for (const char* c : {"memory", "pids", "cpu"}) {
      bool found = false;
      for (const std::string& l : at) found |= l.find(std::string(":") + c) != std::string::npos;
      EXPECT_TRUE(found) << c << " is not at " << leaf << " in "
                         << ReadFileOrEmpty("/proc/" + std::to_string(pid) + "/cgroup");
    }
    // A limit the container was created without can be given later: the cgroup is there.
    RunOptions in = Defaults();
    in.stdin_data = R"({"pids": {"limit": 50}})";
    RunResult update = RunWard({"oci", "--root", state_, "update", "--resources", "-", "g1"}, in);
    EXPECT_EQ(update.status, 0) << update.err;
    const std::string pids = V1With("pids");
    if (!pids.empty()) {
      EXPECT_EQ(ReadFileOrEmpty(pids + leaf + "/pids.max"), "50\n");
    }
  } else {
    EXPECT_TRUE(at.empty()) << at.front();
    EXPECT_FALSE(AnyHierarchyHas("/" + top_));
  }
  ASSERT_EQ(Oci({"start", "g1"}), 0) << Err();
  ASSERT_EQ(Oci({"kill", "g1", "KILL"}), 0) << Err();
  EXPECT_EQ(ReapInit(pid), 128 + SIGKILL);
  ASSERT_EQ(Oci({"delete", "g1"}), 0) << Err();
  // The container's own cgroup went with it; the engine's parents stay.
  for (int i = 0; i < 500 && AnyHierarchyHas(leaf); ++i) usleep(10000);
  EXPECT_FALSE(AnyHierarchyHas(leaf));
  EXPECT_EQ(AnyHierarchyHas("/" + top_ + "/pod"), geteuid() == 0);
}

// The limits of the cgroups above the container's (a pod's) hold for it: a pod allowing 8
// processes stops the container's ninth. Control: the same container without the path forks 20.
TEST_F(OciCgroupTest, ThePodsLimitsHoldForTheContainer) {
  const std::string pod = "/" + top_ + "/pod";
  const std::string pids = V1With("pids");
  Forget(pod + "/c2");
  Forget(pod);
  Forget("/" + top_);
  if (geteuid() == 0 && !pids.empty()) {
    MakeDirs(pids + pod);
    WriteFile(pids + pod + "/pids.max", "8");
  }
  // Prints how many it has started; the shell ends at the first fork the kernel refuses.
  const std::string script = "i=0; while [ $i -lt 20 ]; do sleep 30 & i=$((i+1)); echo $i; done";
  auto count = [&](const std::string& id, const Json& extra) {
    Config(script, extra);
    ClearOut();
    const pid_t pid = Create(id);
    EXPECT_GT(pid, 0) << Err();
    if (pid <= 0) return -1;
    EXPECT_EQ(Oci({"start", id}), 0) << Err();
    EXPECT_GE(ReapInit(pid), 0);
    EXPECT_EQ(Oci({"delete", id}), 0) << Err();
    std::istringstream out(Out());
    int last = 0;
    for (std::string line; std::getline(out, line);) last = std::atoi(line.c_str());
    return last;
  };
  EXPECT_EQ(count("c2free", Json::object()), 20) << Out();
  const int in_pod = count("c2", {{"linux", {{"cgroupsPath", pod + "/c2"}}}});
  if (geteuid() == 0 && !pids.empty()) {
    // init, the exec server and the shell count too.
    EXPECT_LE(in_pod, 6) << Out() << Err();
    EXPECT_GE(in_pod, 1) << Out() << Err();
  } else {
    EXPECT_EQ(in_pod, 20) << Out();  // not used: nothing here for this user to write
  }
}

// A path with processes in it is not the container's: create refuses it, and what runs there
// goes on (tearing the container's cgroup down would kill it). Nothing is left.
TEST_F(OciCgroupTest, ACgroupThatHasProcessesIsNeverTakenOver) {
  const std::string busy = "/" + top_ + "/busy";
  const std::string memory = V1With("memory");
  pid_t bystander = fork();
  if (bystander == 0) {
    pause();
    _exit(0);
  }
  ASSERT_GT(bystander, 0);
  const bool root = geteuid() == 0 && !memory.empty();
  Forget(busy);
  Forget("/" + top_);
  if (root) {
    MakeDirs(memory + busy);
    WriteFile(memory + busy + "/cgroup.procs", std::to_string(bystander));
  }
  Config("echo ran", {{"linux", {{"cgroupsPath", busy}}}});
  const pid_t pid = Create("g3");
  if (root) {
    EXPECT_EQ(pid, -1);
    EXPECT_NE(Err().find("exists and has processes"), std::string::npos) << Err();
    EXPECT_FALSE(StateDirExists("g3"));
    EXPECT_EQ(ReadFileOrEmpty(memory + busy + "/cgroup.procs"),
              std::to_string(bystander) + "\n");
  } else {
    ASSERT_GT(pid, 0) << Err();  // not used
    ASSERT_EQ(Oci({"start", "g3"}), 0) << Err();
    EXPECT_EQ(ReapInit(pid), 0);
    EXPECT_EQ(Oci({"delete", "g3"}), 0) << Err();
  }
  EXPECT_EQ(kill(bystander, 0), 0);  // still alive
  kill(bystander, SIGKILL);
  waitpid(bystander, nullptr, 0);
}

// A container's cgroup is its own: a second container on the path of a running one is refused,
// and so is a path with a cgroup below it (an engine's parent, a pod's). An empty leaf that
// exists is taken over (the control). As a user the path is not used at all.
TEST_F(OciCgroupTest, ACgroupIsOneContainersOwn) {
  const std::string leaf = "/" + top_ + "/c7";
  Forget(leaf + "/below");
  Forget(leaf);
  Forget("/" + top_);
  Config("exec sleep 100", {{"linux", {{"cgroupsPath", leaf}}}});
  const pid_t first = Create("g7");
  ASSERT_GT(first, 0) << Err();
  ClearOut();
  const pid_t second = Create("g7b");
  if (geteuid() == 0) {
    EXPECT_EQ(second, -1);
    EXPECT_NE(Err().find("is another container's"), std::string::npos) << Err();
    EXPECT_FALSE(StateDirExists("g7b"));
  } else {
    ASSERT_GT(second, 0) << Err();
    ASSERT_EQ(Oci({"delete", "--force", "g7b"}), 0) << Err();
    ReapInit(second);
  }
  ASSERT_EQ(Oci({"delete", "--force", "g7"}), 0) << Err();
  ReapInit(first);
  for (int i = 0; i < 500 && AnyHierarchyHas(leaf); ++i) usleep(10000);
  const std::string memory = V1With("memory");
  if (geteuid() != 0 || memory.empty()) return;
  // A path with a cgroup below it: refused, and what is below is left.
  MakeDirs(memory + leaf + "/below");
  ClearOut();
  EXPECT_EQ(Create("g7c"), -1);
  EXPECT_NE(Err().find("has processes or cgroups below it"), std::string::npos) << Err();
  EXPECT_EQ(access((memory + leaf + "/below").c_str(), F_OK), 0);
  // An empty leaf that exists is the container's (and goes with it).
  ASSERT_EQ(rmdir((memory + leaf + "/below").c_str()), 0);
  ClearOut();
  const pid_t taken = Create("g7d");
  ASSERT_GT(taken, 0) << Err();
  EXPECT_FALSE(LinesAt(taken, leaf).empty());
  ASSERT_EQ(Oci({"delete", "--force", "g7d"}), 0) << Err();
  ReapInit(taken);
}

// Paths out of the hierarchy, the root itself, and a systemd path of the wrong form are refused
// with the field named; nothing is left behind.
TEST_F(OciCgroupTest, PathsOutOfTheHierarchyAreRefused) {
  for (const std::string& bad : {"/" + top_ + "/../../x", std::string("/")}) {
    Config("echo ran", {{"linux", {{"cgroupsPath", bad}}}});
    ClearOut();
    EXPECT_EQ(Create("g4"), -1) << bad;
    EXPECT_NE(Err().find("linux.cgroupsPath"), std::string::npos) << Err();
    EXPECT_FALSE(StateDirExists("g4"));
  }
  Config("echo ran", {{"linux", {{"cgroupsPath", "/docker/g4"}}}});
  ClearOut();
  EXPECT_NE(Oci({"--systemd-cgroup", "create", "--bundle", bundle_, "--pid-file",
                 root_->path() + "/pid", "g4"}),
            0);
  EXPECT_NE(Err().find("slice:prefix:name"), std::string::npos) << Err();
  EXPECT_FALSE(StateDirExists("g4"));
  EXPECT_FALSE(AnyHierarchyHas("/" + top_));
  EXPECT_FALSE(AnyHierarchyHas("/x"));
}

// With --systemd-cgroup the container's cgroup is where systemd would put its scope.
TEST_F(OciCgroupTest, ASystemdScopeIsWhereSystemdPutsIt) {
  const std::string slice = top_ + ".slice";
  const std::string leaf = "/" + slice + "/wardtest-g5.scope";
  // "wardtest-N.slice" nests in "wardtest.slice".
  const std::string nested = "/wardtest.slice/" + slice + "/wardtest-g5.scope";
  Forget(nested);
  Forget("/wardtest.slice/" + slice);
  Forget("/wardtest.slice");  // when no other run of this test uses it
  Config("exec sleep 100", {{"linux", {{"cgroupsPath", slice + ":wardtest:g5"}}}});
  ASSERT_EQ(Oci({"--systemd-cgroup", "create", "--bundle", bundle_, "--pid-file",
                 root_->path() + "/pid", "g5"}),
            0)
      << Err();
  const pid_t pid = PidFile();
  EXPECT_EQ(LinesAt(pid, nested).empty(), geteuid() != 0)
      << ReadFileOrEmpty("/proc/" + std::to_string(pid) + "/cgroup");
  EXPECT_TRUE(LinesAt(pid, leaf).empty());
  ASSERT_EQ(Oci({"delete", "--force", "g5"}), 0) << Err();
  EXPECT_EQ(ReapInit(pid), 128 + SIGKILL);
  for (int i = 0; i < 500 && AnyHierarchyHas(nested); ++i) usleep(10000);
  EXPECT_FALSE(AnyHierarchyHas(nested));
}

}  // namespace
}  // namespace ward::test
