#include "common/cpu.h"

#include <gtest/gtest.h>
#include <pthread.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
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
  const int n = CPU_COUNT(&before);
  int on_thread = 0;
  for (int i = 0; i < 20; ++i) {
    std::atomic<int> count{-1};
    ElsewhereThread t([&count] {
      cpu_set_t s = MyCpus();
      count = CPU_COUNT(&s);
    });
    // A thread that has already ended when its creator looks at it: the creator's own CPUs
    // must not change (pinning an ended thread by its tid, 0 by then, pins the caller). The
    // thread has had 20 ms to start; one that has not (a busy host) leaves the function to Join.
    usleep(i % 2 ? 0 : 20000);
    t.Join();
    if (t.RanOnThread()) {
      EXPECT_EQ(count.load(), n > 1 ? n - 1 : n) << "iteration " << i;
      ++on_thread;
    } else {
      EXPECT_EQ(count.load(), n) << "iteration " << i;  // the creator's CPUs, unchanged
    }
    cpu_set_t after = MyCpus();
    EXPECT_TRUE(CPU_EQUAL(&before, &after)) << "iteration " << i;
  }
  EXPECT_GT(on_thread, 0) << "no function ran on its thread in 20 ms, ten times";
}

TEST(ElsewhereThreadTest, WaitReturnsOnceTheFunctionHasReturnedAndSeesWhatItWrote) {
  // Quick functions (Wait polls) and one longer than the polling (Wait sleeps in a join), each
  // begun by the thread before the creator waits (else the creator would run it itself).
  for (long us : {0L, 200L, ElsewhereThread::kWaitPollNs / 1000 + 3000}) {
    std::atomic<bool> begun{false};
    std::vector<int> written;  // plain memory: Wait must order it
    ElsewhereThread t([&written, &begun, us] {
      begun = true;
      usleep(static_cast<useconds_t>(us));
      written.assign(1000, 7);
    });
    while (!begun) usleep(50);
    t.Wait();
    ASSERT_EQ(written.size(), 1000u) << us << " µs";
    EXPECT_EQ(written.back(), 7);
    EXPECT_TRUE(t.RanOnThread());
    t.Wait();  // again, and after it the join: both return at once
    t.Join();
  }
}

// Settle, Join and the destructor called while the thread still runs the function, longer than
// Wait polls (so Wait itself joins it): each returns once it is done, and the thread is joined
// once. Also with every thread on one CPU, where Wait does not poll.
TEST(ElsewhereThreadTest, SettleAndJoinWhileTheFunctionStillRunsWaitForItAndJoinOnce) {
  cpu_set_t before = MyCpus();
  for (bool one_cpu : {false, true}) {
    if (one_cpu) {
      cpu_set_t one;
      CPU_ZERO(&one);
      CPU_SET(sched_getcpu(), &one);
      ASSERT_EQ(sched_setaffinity(0, sizeof one, &one), 0);
    }
    for (int how = 0; how < 3; ++how) {
      std::atomic<bool> begun{false}, finished{false};
      {
        ElsewhereThread t([&] {
          begun = true;
          usleep(static_cast<useconds_t>(ElsewhereThread::kWaitPollNs / 1000 + 3000));
          finished = true;
        });
        while (!begun) usleep(100);
        if (how == 0) t.Settle();
        if (how == 1) t.Join();
        if (how < 2) {
          EXPECT_TRUE(finished) << how;
          EXPECT_TRUE(t.RanOnThread());
          t.Settle();  // again: nothing left to join
          t.Join();
        }
      }  // how == 2: the destructor
      EXPECT_TRUE(finished) << how;
    }
  }
  ASSERT_EQ(sched_setaffinity(0, sizeof before, &before), 0);
}

pid_t Tid() { return static_cast<pid_t>(syscall(SYS_gettid)); }

// Whoever comes first runs the function, exactly once: the creator when the thread has not
// started it, or the thread, which the creator then waits for.
// The thread runs on a stack of its own mapping (not one from glibc's cache of joined
// threads' stacks), which is gone once the thread is joined: a child cloned afterwards copies
// nothing of it. Its lowest page is a guard.
TEST(ElsewhereThreadTest, TheThreadsStackIsItsOwnMappingAndIsUnmappedOnceJoined) {
  const long page = sysconf(_SC_PAGESIZE);
  auto mapped = [page](uintptr_t addr) {
    unsigned char vec;
    void* p = reinterpret_cast<void*>(addr & ~static_cast<uintptr_t>(page - 1));
    return mincore(p, static_cast<size_t>(page), &vec) == 0;  // ENOMEM: nothing mapped there
  };
  int on_thread = 0;
  for (int i = 0; i < 50 && on_thread < 3; ++i) {
    std::atomic<bool> begun{false};
    std::atomic<uintptr_t> local{0};
    std::atomic<uintptr_t> low{0}, high{0};
    ElsewhereThread t([&] {
      local = reinterpret_cast<uintptr_t>(__builtin_frame_address(0));
      pthread_attr_t attr;
      void* addr = nullptr;
      size_t size = 0;
      if (pthread_getattr_np(pthread_self(), &attr) == 0) {
        pthread_attr_getstack(&attr, &addr, &size);
        pthread_attr_destroy(&attr);
      }
      low = reinterpret_cast<uintptr_t>(addr);
      high = low + size;
      begun = true;
      usleep(5000);
    });
    for (int spin = 0; spin < 200 && !begun; ++spin) usleep(100);
    t.Join();
    if (!t.RanOnThread()) continue;  // the creator ran it: there was no thread stack to see
    ++on_thread;
    ASSERT_NE(local.load(), 0u);
    EXPECT_GE(local.load(), low.load());
    EXPECT_LT(local.load(), high.load());
    EXPECT_EQ(high.load() - low.load(), ElsewhereThread::kStackSize - ElsewhereThread::kGuardSize)
        << "not the thread's own stack";
    EXPECT_FALSE(mapped(local.load())) << "the stack is still mapped after the join";
    EXPECT_FALSE(mapped(low.load() - ElsewhereThread::kGuardSize)) << "the guard page is left";
  }
  EXPECT_GT(on_thread, 0) << "no function ran on its thread";
}

TEST(ElsewhereThreadTest, TheFunctionRunsOnceOnTheThreadOrOnTheCreatorWhoeverComesFirst) {
  const pid_t me = Tid();
  int by_creator = 0, by_thread = 0;
  // The creator asks at once: the thread has yet to be woken on another CPU (or, on one CPU, to
  // be scheduled at all), so the creator finds the work untaken in nearly every iteration.
  for (int i = 0; i < 1000 && by_creator < 20; ++i) {
    std::atomic<int> runs{0};
    std::atomic<pid_t> ran_on{0};
    {
      ElsewhereThread t([&] {
        ran_on = Tid();
        runs.fetch_add(1);
      });
      t.Wait();
      ASSERT_EQ(runs.load(), 1) << "iteration " << i;
      EXPECT_EQ(t.RanOnThread(), ran_on.load() != me);
      (ran_on.load() == me ? by_creator : by_thread)++;
      t.Settle();
      t.Wait();
    }  // joined here, after the thread found the work taken
    EXPECT_EQ(runs.load(), 1) << "iteration " << i;
  }
  EXPECT_GE(by_creator, 20) << "the creator never ran a function the thread had not started";

  // A function the thread has begun is not run again: the creator waits for it.
  for (int i = 0; i < 5; ++i) {
    std::atomic<bool> begun{false};
    std::atomic<int> runs{0};
    std::atomic<pid_t> ran_on{0};
    ElsewhereThread t([&] {
      begun = true;
      usleep(20000);
      ran_on = Tid();
      runs.fetch_add(1);
    });
    while (!begun) usleep(100);
    t.Settle();  // joins a thread that ran it
    EXPECT_EQ(runs.load(), 1);
    EXPECT_NE(ran_on.load(), me);
    EXPECT_TRUE(t.RanOnThread());
    ++by_thread;
  }
}

}  // namespace
}  // namespace ward
