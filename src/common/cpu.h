// Where work started from this thread runs. A new thread or process starts on its parent's CPU,
// and the scheduler may take a millisecond to move it while the parent keeps that CPU busy: on a
// small machine, work meant to overlap with the parent's then runs after it instead. Such work
// is started off the current CPU (best effort; nothing depends on it but speed).
#pragma once

#include <pthread.h>
#include <sched.h>

#include <atomic>
#include <cstddef>
#include <functional>

namespace ward {

struct CpuPlacement {
  cpu_set_t allowed;  // every CPU this thread may use
  cpu_set_t others;   // the same without the CPU it is on now
  int here = -1;      // the CPU it is on now
  bool has_others = false;
};

// The calling thread's CPUs; has_others is false on a single allowed CPU or on an error.
CpuPlacement CurrentCpuPlacement();

// Narrows the calling thread's affinity to the CPU it is on now, until Release() or the
// destructor puts its affinity back. For a child started vfork-style (the caller sleeps until
// it execs or exits): the child inherits this CPU, which is about to be idle, rather than being
// queued behind a busy one; a new task counts as cache-hot for the scheduler's first half
// millisecond and is not moved to the idle CPU meanwhile. The child widens its own affinity
// again to allowed() when it should have every CPU. Best effort; nothing depends on it but speed.
class StayOnThisCpu {
 public:
  StayOnThisCpu();
  ~StayOnThisCpu() { Release(); }
  StayOnThisCpu(const StayOnThisCpu&) = delete;
  StayOnThisCpu& operator=(const StayOnThisCpu&) = delete;
  void Release();
  // The affinity before, or nullptr when nothing was narrowed (one CPU, or an error).
  const cpu_set_t* allowed() const { return pinned_ ? &placement_.allowed : nullptr; }

 private:
  CpuPlacement placement_;
  bool pinned_ = false;
};

// A thread that starts on another CPU than its creator's (its affinity is set before it runs,
// through pthread attributes; on one CPU it is an ordinary thread), for work the creator needs
// later. Whoever comes first runs the function: the thread when it starts, or the creator, in
// Wait() or Settle(), when the thread has not started yet. A small machine's other CPU may be
// slow to wake (a microVM's idle vCPU halts, and the host schedules it back when it can) or busy:
// waiting for it could cost several milliseconds, doing the work costs what it costs.
class ElsewhereThread {
 public:
  explicit ElsewhereThread(std::function<void()> fn);
  ~ElsewhereThread();
  ElsewhereThread(const ElsewhereThread&) = delete;
  ElsewhereThread& operator=(const ElsewhereThread&) = delete;

  // Returns once the function has returned; runs it here when the thread has not begun it. The
  // thread may still be ending. When the thread has it and a CPU of its own, polls for up to
  // kWaitPollNs before sleeping: waking a sleeping thread from another CPU can cost more than the
  // wait itself (about 50 µs per wakeup, measured in a microVM whose idle CPUs halt).
  void Wait();

  // Wait(), then makes sure the thread can no longer touch anything a child made now with a raw
  // clone (no fork handlers) could need, such as malloc's locks: it joins a thread that ran the
  // function. One that found the work taken only leaves: it has allocated nothing and takes no
  // lock on its way out (the destructor joins it, once it has had a CPU).
  void Settle();

  // Settle(), and the thread is gone.
  void Join();

  // Whether the thread ran the function (false: the creator did); for tests. After Wait().
  bool RanOnThread() const { return state_.load(std::memory_order_acquire) == kDoneOnThread; }

  static constexpr long kWaitPollNs = 2'000'000;
  // The thread's stack (its own mapping, see the constructor): 1 MiB of address space, of
  // which only the pages it touches are memory; the lowest page is a guard.
  static constexpr size_t kStackSize = 1 << 20;
  static constexpr size_t kGuardSize = 4096;

 private:
  static void* Trampoline(void* self);
  void JoinThread();  // once: Wait, Settle, Join and the destructor may each get there
  enum : int { kPending, kRunningOnThread, kDoneOnThread, kTakenByCreator };
  std::function<void()> fn_;
  pthread_t thread_{};
  bool joinable_ = false;
  bool elsewhere_ = false;  // placed on other CPUs than the creator's
  void* stack_ = nullptr;   // its mapping (with the guard page), unmapped after the join
  std::atomic<int> state_{kPending};
};

}  // namespace ward
