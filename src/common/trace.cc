#include "common/trace.h"

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
  double start;
  TraceState() {
    const char* v = std::getenv("WARD_TRACE_TIMING");
    enabled = v && v[0] == '1';
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

void TraceMark(const char* what) {
  TraceState& s = State();
  if (s.enabled) std::fprintf(stderr, "ward: +%.3f ms %s\n", NowMs() - s.start, what);
}

}  // namespace ward
