// Threat class D, host / kernel attack surface (HK01..HK12).
#include <unistd.h>

#include "harness.h"

namespace ward::test {
namespace {

class KernelSurface : public SandboxTest {};

TEST_F(KernelSurface, HK01_NestedUserNamespaces) {
  EXPECT_EQ(Probe({"userns"}).out, "err EPERM unshare(CLONE_NEWUSER)\n");
  EXPECT_EQ(Probe({"clone-userns"}).out, "err EPERM clone(CLONE_NEWUSER)\n");
  EXPECT_EQ(Probe({"mountns"}).out, "err EPERM unshare(CLONE_NEWNS)\n");
  EXPECT_EQ(Probe({"setns"}).out, "err EPERM setns\n");
  EXPECT_EQ(RunProgram({ProbeBin(), "userns"}).status, 0);  // control: allowed outside
}

TEST_F(KernelSurface, HK02_Clone3) {
  EXPECT_EQ(Probe({"clone3"}).out, "err ENOSYS clone3\n");
  EXPECT_EQ(RunProgram({ProbeBin(), "clone3"}).out, "ok clone3\n");
}

TEST_F(KernelSurface, HK03_MountFamily) {
  EXPECT_EQ(Probe({"mount"}).out, "err EPERM mount\n");
  EXPECT_EQ(Probe({"umount", "/usr"}).out, "err EPERM umount\n");
  EXPECT_EQ(Probe({"chroot"}).out, "err EPERM chroot\n");
  EXPECT_EQ(Probe({"pivot_root"}).out, "err EPERM pivot_root\n");
}

TEST_F(KernelSurface, HK04_IoUring) {
  EXPECT_EQ(Probe({"io_uring"}).out, "err EPERM io_uring_setup\n");
  EXPECT_EQ(RunProgram({ProbeBin(), "io_uring"}).out, "ok io_uring_setup\n");
}

TEST_F(KernelSurface, HK05_HighRiskSyscalls) {
  EXPECT_EQ(Probe({"bpf"}).out, "err EPERM bpf\n");
  EXPECT_EQ(Probe({"perf"}).out, "err EPERM perf_event_open\n");
  EXPECT_EQ(Probe({"userfaultfd"}).out, "err EPERM userfaultfd\n");
  EXPECT_EQ(Probe({"open_by_handle_at"}).out, "err EPERM open_by_handle_at\n");
  EXPECT_EQ(Probe({"reboot"}).out, "err EPERM reboot\n");
  // Control: outside, perf_event_open with a NULL attr reaches the kernel (EFAULT), so the
  // EPERM above is the filter's.
  EXPECT_EQ(RunProgram({ProbeBin(), "perf"}).out, "err EFAULT perf_event_open\n");
}

TEST_F(KernelSurface, HK08_Personality) {
  EXPECT_EQ(Probe({"personality", "0x40000"}).out, "err EPERM personality\n");  // ADDR_NO_RANDOMIZE
  EXPECT_EQ(Probe({"personality", "0x400000"}).out,
            "err EPERM personality\n");                       // READ_IMPLIES_EXEC
  EXPECT_EQ(Probe({"personality", "0xffffffff"}).status, 0);  // query: allowed
  EXPECT_EQ(Probe({"personality", "0"}).status, 0);
}

TEST_F(KernelSurface, HK09_SetuidHasNoEffect) {
  std::string setuid_probe = StageDir() + "/ward-probe-setuid";
  if (!PathExists(setuid_probe)) GTEST_SKIP() << "no setuid probe staged (stage as root)";
  if (RunningAsRoot()) {
    // setuid-root gives root nothing new; what matters is that every bind is nosuid.
    RunResult m = Probe({"read", "/proc/self/mounts"});
    ASSERT_EQ(m.status, 0);
    size_t at = m.out.find(" " + StageDir() + " ");
    ASSERT_NE(at, std::string::npos) << m.out;
    EXPECT_NE(m.out.substr(at, 120).find("nosuid"), std::string::npos) << m.out.substr(at, 120);
    return;
  }
  RunResult r = Probe({"exec", setuid_probe, "id"});
  ASSERT_EQ(r.status, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("euid=" + std::to_string(geteuid())), std::string::npos) << r.out;
  // Control: outside the sandbox the bit works.
  EXPECT_NE(RunProgram({setuid_probe, "id"}).out.find("euid=0"), std::string::npos);
}

TEST_F(KernelSurface, HK10_MinimalDevices) {
  for (const char* dev : {"/dev/mem", "/dev/kmsg", "/dev/kvm", "/dev/sda", "/dev/vda",
                          "/dev/console", "/dev/tty0", "/dev/vcs1", "/dev/fuse", "/dev/net/tun"}) {
    EXPECT_EQ(Probe({"stat", dev}).out, std::string("err ENOENT ") + dev + "\n");
  }
  EXPECT_EQ(Probe({"mknod-char", ws_ + "/mem"}).out.rfind("err E", 0), 0u);
}

TEST_F(KernelSurface, HK12_ProcKnobsAreReadOnly) {
  for (const char* knob : {"/proc/sys/kernel/core_pattern", "/proc/sys/kernel/hostname",
                           "/proc/sys/vm/drop_caches", "/proc/sysrq-trigger"}) {
    RunResult r = Probe({"proc-write", knob, "1"});
    // Read-only (EROFS), not ours (EACCES), or absent on this kernel (ENOENT): never written.
    EXPECT_TRUE(r.out == "err EROFS open\n" || r.out == "err EACCES open\n" ||
                r.out == "err ENOENT open\n")
        << knob << r.out;
  }
  // Control: the sandbox's own /proc entries stay writable where Linux allows.
  EXPECT_EQ(Probe({"proc-write", "/proc/self/comm", "probe"}).status, 0);
}

}  // namespace
}  // namespace ward::test
