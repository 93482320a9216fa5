// A setup failure in the sandbox's child processes, reported to the supervisor as
// {stage, errno, detail} and turned into exit status 125 with a message naming both.
#pragma once

#include <cstring>
#include <initializer_list>

namespace ward::enforce {

struct ChildError {
  char stage[32] = {};    // "mount", "landlock", "seccomp", "exec", ...
  int err = 0;            // errno
  char detail[224] = {};  // the path or operation that failed

  bool Set(const char* s, int e, const char* d1 = "", const char* d2 = "") {
    std::strncpy(stage, s, sizeof(stage) - 1);
    err = e;
    size_t n = 0;
    for (const char* d : {d1, d2}) {
      for (; d && *d && n + 1 < sizeof(detail); ++d) detail[n++] = *d;
    }
    detail[n] = '\0';
    return false;
  }
};

}  // namespace ward::enforce
