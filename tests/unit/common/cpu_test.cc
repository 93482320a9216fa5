#include "common/cpu.h"

#include <gtest/gtest.h>
#include <sched.h>
#include <unistd.h>

#include <atomic>
#include <vector>

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

TEST(ElsewhereThreadTest, WaitReturnsOnceTheFunctionHasReturnedAndSeesWhatItWrote) {
  // Quick functions (Wait polls) and one longer than the polling (Wait sleeps in a join).
  for (long us : {0L, 200L, ElsewhereThread::kWaitPollNs / 1000 + 3000}) {
    std::vector<int> written;  // plain memory: Wait must order it
    ElsewhereThread t([&written, us] {
      usleep(static_cast<useconds_t>(us));
      written.assign(1000, 7);
    });
    t.Wait();
    ASSERT_EQ(written.size(), 1000u) << us << " µs";
    EXPECT_EQ(written.back(), 7);
    t.Wait();  // again, and after it the join: both return at once
    t.Join();
  }
}

}  // namespace
}  // namespace ward
