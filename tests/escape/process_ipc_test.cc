// Threat class E, process / IPC (PI01..PI10).
#include <dirent.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <thread>

#include "harness.h"

namespace ward::test {
namespace {

class ProcessIpc : public SandboxTest {};

TEST_F(ProcessIpc, PI01_PI02_TerminalInjection) {
  EXPECT_EQ(Probe({"tiocsti"}).out, "err EPERM TIOCSTI\n");
  EXPECT_EQ(Probe({"tiocsti-high"}).out, "err EPERM TIOCSTI|1<<32\n");
  EXPECT_EQ(RunProgram({ProbeBin(), "tiocsti"}).out, "err ENOTTY TIOCSTI\n");
}

TEST_F(ProcessIpc, PI04_SignalsCannotLeaveTheSandbox) {
  // kill(-1) reaches only the sandbox, where nothing but init (exempt) and the caller live:
  // ESRCH, and the supervisor survives to report the probe's own exit status.
  RunResult r = Probe({"kill-all"});
  EXPECT_EQ(r.out, "err ESRCH kill(-1)\n");
  EXPECT_EQ(r.status, 1);
  RunResult k = Probe({"kill", "1", "9"});
  EXPECT_EQ(k.out, KillInitResult());
  EXPECT_EQ(k.status, k.out == "ok kill\n" ? 0 : 1) << k.err;  // init survived either way
  EXPECT_EQ(Probe({"kill", std::to_string(getpid()), "0"}).out, "err ESRCH kill\n");
}

TEST_F(ProcessIpc, PI06_CodeInjection) {
  EXPECT_EQ(Probe({"ptrace-parent"}).out, "err EPERM attach\n");
  EXPECT_EQ(Probe({"vmread", "1"}).out, "err EPERM process_vm_readv\n");
  EXPECT_EQ(Probe({"open-write", "/proc/1/mem"}).out, "err EACCES /proc/1/mem\n");
}

TEST_F(ProcessIpc, PI08_HostUnixSockets) {
  for (const char* p : {"/run/docker.sock", "/var/run/docker.sock", "/run/dbus/system_bus_socket",
                        "/tmp/.X11-unix/X0"}) {
    EXPECT_EQ(Probe({"unix-connect", p}).out, "err ENOENT connect\n") << p;
  }
}

TEST_F(ProcessIpc, PI10_NothingOutlivesTheSession) {
  std::string marker = "ward-pi10-" + std::to_string(getpid());
  EXPECT_EQ(Probe({"daemon", marker}).out, "ok spawned\n");
  bool gone = false;
  for (int i = 0; i < 100 && !gone; ++i) {
    gone = CountHostProcesses(marker) == 0;
    if (!gone) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_TRUE(gone);
}

}  // namespace
}  // namespace ward::test
