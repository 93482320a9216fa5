// Threat class I, CD03: sandbox init (pid 1 inside) and the guard agent it forks act beside the
// command, so neither may be less confined than the command or reachable from it. Both run
// under a seccomp filter, no_new_privs and no capabilities; neither can be written, traced or
// (Landlock ABI >= 6) signalled by the command; below ABI 6 a killed agent makes creations fail
// closed. Positive controls: the probe traces a process it may reach outside a sandbox; the
// agent still serves after the attempts.
#include <string>

#include "enforce/landlock.h"
#include "harness.h"

namespace ward::test {
namespace {

class SandboxInitConfined : public SandboxTest {};

TEST_F(SandboxInitConfined, InitRunsUnderItsOwnFilterWithNothingToGain) {
  RunResult r = Probe({"pid1-status"});
  EXPECT_EQ(r.out, "ok seccomp=2 nnp=1 capeff=0000000000000000\n") << r.err;
}

TEST_F(SandboxInitConfined, TheCommandCannotWriteTraceOrReadInit) {
  RunResult r = Probe({"pid1"});
  EXPECT_EQ(r.out,
            "ok mem=EACCES root=EACCES fd=EACCES environ=EACCES ptrace=EPERM vm_writev=EPERM\n")
      << r.err;
  // Control: outside a sandbox the probe does trace a process it may reach.
  EXPECT_EQ(RunProgram({ProbeBin(), "ptrace-child"}).out, "ok attach child\n");
}

TEST_F(SandboxInitConfined, TheGuardAgentIsConfinedAndOutOfReach) {
  RunResult r = Probe({"guard-agent"});
  ASSERT_EQ(r.out.rfind("ok ", 0), 0u) << r.out << r.err;
  EXPECT_NE(r.out.find("seccomp=2 nnp=1 capeff=0000000000000000 "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("mem=EACCES ptrace=EPERM vm_writev=EPERM "), std::string::npos) << r.out;
  if (enforce::LandlockAbi() >= 6) {
    EXPECT_NE(r.out.find("signal=EPERM "), std::string::npos) << r.out;
  }
  EXPECT_NE(r.out.find("again=ok"), std::string::npos) << r.out;  // it still serves
}

// Below Landlock ABI 6 the command can kill the guard agent: every creation after that is
// refused (EACCES), never made, and the agent is not restarted (docs/kernels.md). From ABI 6 on
// the kill itself is refused.
TEST_F(SandboxInitConfined, AKilledGuardAgentMakesCreationsFailClosed) {
  RunResult r = Probe({"guard-agent-kill"});
  if (enforce::LandlockAbi() >= 6) {
    EXPECT_EQ(r.out, "ok kill=EPERM again=ok exists=yes\n") << r.err;
  } else {
    EXPECT_EQ(r.out, "ok kill=ok again=EACCES exists=no\n") << r.err;
  }
}

}  // namespace
}  // namespace ward::test
