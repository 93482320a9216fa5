// Start-up timing marks for performance work: with WARD_TRACE_TIMING=1 in the environment,
// each mark prints "ward: +<ms> <what> [<faults>]" to stderr, measured from process start, with
// the calling thread's minor page faults so far (getrusage; a process's count survives exec). With
// WARD_TRACE_TIMING=2 it also prints CLOCK_MONOTONIC, to line the marks up with a timer outside
// (how long exec and the dynamic loader took before main, how long the exit took after it).
#pragma once

namespace ward {

void TraceMark(const char* what);
// Whether marks are printed (WARD_TRACE_TIMING is set).
bool TraceEnabled();

}  // namespace ward
