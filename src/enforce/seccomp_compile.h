// The seccomp filter's compile: libseccomp (and a few hand-written blocks) to classic BPF. It
// runs when ward is built, not at each run: ward_seccomp_gen (seccomp_gen.cc) compiles one
// program per SeccompSpec into the table seccomp.cc serves them from, so a run neither pays
// for the compile (~0.3-0.5 ms of CPU on every start) nor carries libseccomp. The tests
// compile afresh and compare.
#pragma once

#include <linux/filter.h>

#include <vector>

#include "common/status.h"
#include "enforce/seccomp.h"

namespace ward::enforce {

// The program for `spec`, as the kernel will get it: the hand-written value allow lists first,
// then libseccomp's program (arch check, denials, traps). Not checked: PrepareSeccomp checks
// what it serves.
Result<std::vector<sock_filter>> CompileSeccompFilter(const SeccompSpec& spec);

// Every SeccompSpec there is, each once: the programs the build compiles.
std::vector<SeccompSpec> AllSeccompSpecs();

}  // namespace ward::enforce
