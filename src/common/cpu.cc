#include "common/cpu.h"

#include <errno.h>
#include <sys/mman.h>
#include <time.h>

#include <system_error>

namespace ward {

CpuPlacement CurrentCpuPlacement() {
  CpuPlacement p;
  CPU_ZERO(&p.allowed);
  CPU_ZERO(&p.others);
  if (sched_getaffinity(0, sizeof p.allowed, &p.allowed) != 0) return p;
  const int here = sched_getcpu();
  if (here < 0 || !CPU_ISSET(here, &p.allowed)) return p;
  p.here = here;
  p.others = p.allowed;
  CPU_CLR(here, &p.others);
  p.has_others = CPU_COUNT(&p.others) > 0;
  return p;
}

StayOnThisCpu::StayOnThisCpu() : placement_(CurrentCpuPlacement()) {
  if (!placement_.has_others) return;
  cpu_set_t here;
  CPU_ZERO(&here);
  CPU_SET(placement_.here, &here);
  pinned_ = sched_setaffinity(0, sizeof here, &here) == 0;
}

void StayOnThisCpu::Release() {
  if (!pinned_) return;
  sched_setaffinity(0, sizeof placement_.allowed, &placement_.allowed);
  pinned_ = false;
}

ElsewhereThread::ElsewhereThread(std::function<void()> fn) : fn_(std::move(fn)) {
  const CpuPlacement cpus = CurrentCpuPlacement();
  // A stack of its own, unmapped once the thread is joined: glibc keeps the stacks of joined
  // threads for later ones, and a child cloned afterwards (sandbox init) would copy this one's
  // pages and page tables and tear them down again at its exit. The lowest page is the guard.
  void* stack = mmap(nullptr, kStackSize, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK | MAP_NORESERVE, -1, 0);
  if (stack != MAP_FAILED && mprotect(stack, kGuardSize, PROT_NONE) == 0) {
    stack_ = stack;
  } else if (stack != MAP_FAILED) {
    munmap(stack, kStackSize);
  }
  auto create = [&](bool place) {
    pthread_attr_t attr;
    int rc = pthread_attr_init(&attr);
    if (rc != 0) return rc;
    if (stack_) {
      rc = pthread_attr_setstack(&attr, static_cast<char*>(stack_) + kGuardSize,
                                 kStackSize - kGuardSize);
    }
    // Not pthread_setaffinity_np on a running thread: one that already ended has a tid of 0,
    // which would pin the caller instead.
    if (rc == 0 && place) rc = pthread_attr_setaffinity_np(&attr, sizeof cpus.others, &cpus.others);
    if (rc == 0) rc = pthread_create(&thread_, &attr, &Trampoline, this);
    pthread_attr_destroy(&attr);
    return rc;
  };
  int rc = cpus.has_others ? create(true) : EAGAIN;
  elsewhere_ = rc == 0;
  if (rc != 0) rc = create(false);
  if (rc != 0) {
    if (stack_) munmap(stack_, kStackSize);
    stack_ = nullptr;
    throw std::system_error(rc, std::generic_category(), "pthread_create");
  }
  joinable_ = true;
}

ElsewhereThread::~ElsewhereThread() { Join(); }

void ElsewhereThread::JoinThread() {
  if (!joinable_) return;
  pthread_join(thread_, nullptr);
  joinable_ = false;
  if (stack_) munmap(stack_, kStackSize);
  stack_ = nullptr;
}

void ElsewhereThread::Join() {
  Wait();  // the function has run when this returns, whoever ran it (and may have joined)
  JoinThread();
}

void ElsewhereThread::Settle() {
  Wait();
  if (state_.load(std::memory_order_acquire) == kDoneOnThread) JoinThread();
}

void ElsewhereThread::Wait() {
  if (!joinable_) return;
  int expected = kPending;
  if (state_.compare_exchange_strong(expected, kTakenByCreator, std::memory_order_acq_rel)) {
    fn_();  // the thread has not started it: it will find it taken
    return;
  }
  if (expected == kTakenByCreator) return;
  if (elsewhere_) {
    // Only while the thread has a CPU of its own: polling on a shared one would delay it.
    struct timespec start, now;
    clock_gettime(CLOCK_MONOTONIC, &start);
    do {
      if (state_.load(std::memory_order_acquire) == kDoneOnThread) return;
      clock_gettime(CLOCK_MONOTONIC, &now);
    } while ((now.tv_sec - start.tv_sec) * 1'000'000'000L + (now.tv_nsec - start.tv_nsec) <
             kWaitPollNs);
  }
  JoinThread();
}

void* ElsewhereThread::Trampoline(void* self) {
  auto* t = static_cast<ElsewhereThread*>(self);
  int expected = kPending;
  if (t->state_.compare_exchange_strong(expected, kRunningOnThread, std::memory_order_acq_rel)) {
    t->fn_();
    t->state_.store(kDoneOnThread, std::memory_order_release);
  }
  return nullptr;
}

}  // namespace ward
