// Threat class F, resource exhaustion (RE01..RE05): the sandbox runs out, the host does not.
// Root runs use a cgroup (v1 on the test machines); unprivileged runs use rlimits and sized
// tmpfs. What the rlimits backend cannot bound is skipped with the reason.
#include <dirent.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>
#include <string>
#include <thread>

#include "harness.h"

namespace ward::test {
namespace {

class Resources : public SandboxTest {
 protected:
  std::string Backend() {
    RunResult r = RunWard({"check", "--json"}, Defaults());
    nlohmann::json j = nlohmann::json::parse(r.out, nullptr, false);
    EXPECT_FALSE(j.is_discarded()) << r.out;
    return j.is_discarded() ? "" : j["limits"]["backend"].get<std::string>();
  }
  static long Field(const std::string& out, const std::string& key) {
    size_t p = out.find(key + "=");
    return p == std::string::npos ? -1 : std::strtol(out.c_str() + p + key.size() + 1, nullptr, 10);
  }
  static std::string Marker() {
    std::random_device rd;
    return "ward-re-" + std::to_string(rd()) + std::to_string(rd());
  }
  static bool Gone(const std::string& needle) {
    for (int i = 0; i < 100; ++i) {
      if (CountHostProcesses(needle) == 0) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return false;
  }
};

TEST_F(Resources, RE01_ForkBombStopsAtTheDefaultPidsLimit) {
  // No flags: the default profile's pids = 1024 holds (cgroup, or RLIMIT_NPROC counted in
  // the sandbox's own user namespace).
  std::string marker = Marker();
  RunResult r = Probe({"forkbomb", marker});
  EXPECT_EQ(r.out.rfind("err EAGAIN forked=", 0), 0u) << r.out << r.err;
  EXPECT_GT(Field(r.out, "forked"), 100) << r.out;  // forking works until the limit
  EXPECT_LE(Field(r.out, "forked"), 1024) << r.out;
  EXPECT_TRUE(Gone(marker));
  EXPECT_EQ(RunProgram({ProbeBin(), "fork"}).out, "ok fork\n");  // the host still forks
}

TEST_F(Resources, RE02_MemoryBombEndsInsideOnly) {
  RunResult r = Probe({"alloc", "2048"}, {"--memory", "64M"});
  if (Backend() == "rlimits") {
    EXPECT_EQ(r.out.rfind("err ENOMEM allocated=", 0), 0u) << r.out << r.err;
  } else {
    EXPECT_EQ(r.status, 137) << r.out << r.err;  // the cgroup's OOM killer, inside
  }
  EXPECT_EQ(RunProgram({ProbeBin(), "alloc", "256"}).out, "ok allocated=256\n");
  // Positive control: the same probe allocates that much when allowed.
  EXPECT_EQ(Probe({"alloc", "256"}, {"--memory", "1G"}).out, "ok allocated=256\n");
}

TEST_F(Resources, RE03_SharedMemoryIsChargedAndDiesWithTheRun) {
  if (Backend() == "rlimits") {
    GTEST_SKIP() << "without a cgroup, SysV shared memory and memfd are not bounded: "
                    "RLIMIT_DATA counts private memory of each process only. The segments still "
                    "die with the sandbox's IPC namespace (tests/integration/limits_test.cc)";
  }
  std::ifstream before_in("/proc/sysvipc/shm");
  std::string before((std::istreambuf_iterator<char>(before_in)), std::istreambuf_iterator<char>());
  RunResult r = Probe({"shm-bomb", "1024"}, {"--memory", "64M"});
  // Charged to the sandbox's memory cgroup: the OOM killer ends it, or shmget/shmat fails.
  if (r.status != 137) {
    EXPECT_EQ(r.out.rfind("err ", 0), 0u) << r.out << r.err;
    EXPECT_LE(Field(r.out, "segments"), 64) << r.out;
  }
  std::ifstream after_in("/proc/sysvipc/shm");
  std::string after((std::istreambuf_iterator<char>(after_in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(before, after) << "segments reached the host's IPC namespace";
  // Positive control: within the limit the segments are made.
  EXPECT_EQ(Probe({"shm-bomb", "16"}, {"--memory", "256M"}).out, "ok segments=16\n");
}

TEST_F(Resources, RE04_DiskFillStopsAtTheTmpfsAndFileSize) {
  std::string name = Marker();
  RunResult r = Probe({"fill", "/tmp/" + name, "512"}, {"--tmp-size", "8M"});
  EXPECT_EQ(r.out.rfind("err ENOSPC written=", 0), 0u) << r.out << r.err;
  EXPECT_FALSE(PathExists("/tmp/" + name));
  r = Probe({"fill", home_ + "/" + name, "512"}, {"--tmp-size", "8M"});
  EXPECT_EQ(r.out.rfind("err ENOSPC written=", 0), 0u) << r.out << r.err;
  // The workspace is the host's disk: --file-size bounds each file there (SIGXFSZ).
  r = Probe({"fill", name, "512"}, {"--file-size", "1M"});
  EXPECT_EQ(r.status, 128 + SIGXFSZ) << r.out << r.err;
  EXPECT_EQ(ReadFile(ws_ + "/" + name).size(), 1u << 20);
  // Positive control: unbounded by --file-size, the same write goes further.
  r = Probe({"fill", name, "3"});
  EXPECT_EQ(r.out, "ok written=3\n") << r.err;
}

TEST_F(Resources, RE05_WallClockAndCpu) {
  std::string marker = Marker();
  auto t0 = std::chrono::steady_clock::now();
  RunResult r = Probe({"hang", marker}, {"--timeout", "500ms"});
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_EQ(r.status, 124) << r.err;
  EXPECT_LT(secs, 6.0);
  EXPECT_TRUE(Gone(marker));
  if (Backend() == "rlimits") {
    // No cgroup: a CPU limit cannot be enforced, so it is refused rather than ignored.
    r = Probe({"exit", "0"}, {"--cpu", "0.25"});
    EXPECT_EQ(r.status, 125);
    EXPECT_NE(r.err.find("--allow-degraded=limits"), std::string::npos) << r.err;
    return;
  }
  r = Probe({"spin", "2", "2"}, {"--cpu", "0.25"});
  ASSERT_EQ(r.status, 0) << r.err;
  double ratio = std::stod(r.out.substr(r.out.find("cpu=") + 4));
  EXPECT_LT(ratio, 0.4) << r.out;
}

}  // namespace
}  // namespace ward::test
