#include "common/cpu.h"

#include <gtest/gtest.h>
#include <sched.h>
#include <unistd.h>

#include <atomic>

namespace ward {
namespace {

cpu_set_t MyCpus() {
  cpu_set_t s;
  CPU_ZERO(&s);
  EXPECT_EQ(sched_getaffinity(0, sizeof s, &s), 0);
  return s;
}

TEST(CpuPlacementTest, OthersAreTheAllowedCpusButThisOne) {
  CpuPlacement p = CurrentCpuPlacement();
  cpu_set_t mine = MyCpus();
  EXPECT_TRUE(CPU_EQUAL(&p.allowed, &mine));
  EXPECT_EQ(p.has_others, CPU_COUNT(&mine) > 1);
  if (p.has_others) {
    EXPECT_EQ(CPU_COUNT(&p.others), CPU_COUNT(&mine) - 1);
  }
}

TEST(ElsewhereThreadTest, RunsOffTheCreatorsCpuAndLeavesTheCreatorAlone) {
  const cpu_set_t before = MyCpus();
  for (int i = 0; i < 20; ++i) {
    std::atomic<int> count{-1};
    ElsewhereThread t([&count] {
      cpu_set_t s = MyCpus();
      count = CPU_COUNT(&s);
    });
    // A thread that has already ended when its creator looks at it: the creator's own CPUs
    // must not change (pinning an ended thread by its tid, 0 by then, pins the caller).
    usleep(i % 2 ? 0 : 2000);
    t.Join();
    const int n = CPU_COUNT(&before);
    EXPECT_EQ(count.load(), n > 1 ? n - 1 : n);
    cpu_set_t after = MyCpus();
    EXPECT_TRUE(CPU_EQUAL(&before, &after)) << "iteration " << i;
  }
}

}  // namespace
}  // namespace ward
