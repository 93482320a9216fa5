#include "common/trace.h"

#include <sys/resource.h>
#include <time.h>

#include <cstdio>
#include <cstdlib>

namespace ward {
namespace {

double NowMs() {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

struct TraceState {
  bool enabled;
  bool absolute;  // WARD_TRACE_TIMING=2: also print the clock, to line marks up with an outside
                  // timer
  double start;
  TraceState() {
    const char* v = std::getenv("WARD_TRACE_TIMING");
    enabled = v && (v[0] == '1' || v[0] == '2');
    absolute = enabled && v[0] == '2';
    start = NowMs();
  }
};

TraceState& State() {
  static TraceState s;
  return s;
}

// Initialised before main() so the first mark measures static initialisation too.
[[maybe_unused]] const TraceState& kEarly = State();

}  // namespace

bool TraceEnabled() { return State().enabled; }

void TraceMark(const char* what) {
  TraceState& s = State();
  if (!s.enabled) return;
  const double now = NowMs();
  if (s.absolute) {
    std::fprintf(stderr, "ward: +%.3f ms %s (CLOCK_MONOTONIC %.3f ms)\n", now - s.start, what, now);
  } else {
    struct rusage ru;
    getrusage(RUSAGE_THREAD, &ru);
    std::fprintf(stderr, "ward: +%.3f ms %s [%ld]\n", now - s.start, what, ru.ru_minflt);
  }
}

}  // namespace ward
