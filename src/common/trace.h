// Start-up timing marks for performance work: with WARD_TRACE_TIMING=1 in the environment,
// each mark prints "ward: +<ms> <what>" to stderr, measured from process start.
#pragma once

namespace ward {

void TraceMark(const char* what);

}  // namespace ward
