// Threat class A, read secrets (RS01..RS13): each technique is denied on the default profile,
// with a positive control proving the probe would see the secret if it were reachable.
#include <unistd.h>

#include "harness.h"

namespace ward::test {
namespace {

class ReadSecrets : public SandboxTest {};

// RS01: credential files in HOME; RS02: not even their existence leaks through metadata calls.
TEST_F(ReadSecrets, RS01_RS02_HomeCredentialFilesDoNotExist) {
  for (const char* rel : {".ssh/id_ed25519", ".aws/credentials", ".config/gh/hosts.yml", ".netrc",
                          ".git-credentials"}) {
    std::string p = home_ + "/" + rel;
    EXPECT_EQ(Probe({"read", p}).out, "err ENOENT open\n") << rel;
    EXPECT_EQ(Probe({"stat", p}).out, "err ENOENT " + p + "\n") << rel;
    EXPECT_EQ(Probe({"access", p}).out, "err ENOENT " + p + "\n") << rel;
    EXPECT_EQ(Probe({"readlink", p}).out, "err ENOENT " + p + "\n") << rel;
  }
  EXPECT_EQ(Probe({"ls", home_ + "/.ssh"}).out, "err ENOENT " + home_ + "/.ssh\n");
  // Positive control: the same probe reads a HOME file the policy names.
  RunResult r = Probe({"read", home_ + "/notes.txt"}, {"-r", home_ + "/notes.txt"});
  EXPECT_NE(r.out.find(kCanarySecret), std::string::npos) << r.out << r.err;
}

// RS03: API keys of the caller's environment are not in the sandbox's.
TEST_F(ReadSecrets, RS03_ApiKeysAreNotInherited) {
  EXPECT_EQ(Probe({"getenv", "ANTHROPIC_API_KEY"}).out, "err ENOENT ANTHROPIC_API_KEY\n");
  EXPECT_EQ(Probe({"scan-proc", kCanaryApiKey}).status, 1);
  // Positive control: the same name passes when the profile (here a flag) names it.
  EXPECT_EQ(Probe({"getenv", "ANTHROPIC_API_KEY"}, {"-e", "ANTHROPIC_API_KEY"}).out,
            std::string("ok ") + kCanaryApiKey + "\n");
}

// RS04: /proc/1 (ward-init) shows neither the caller's environment nor ward's argv.
TEST_F(ReadSecrets, RS04_InitEnvironAndCmdlineAreClean) {
  RunResult r = Probe({"read", "/proc/1/cmdline"}, {"-e", "IRRELEVANT=cmdline-secret-551"});
  EXPECT_EQ(r.out.find("cmdline-secret-551"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("ward-init"), std::string::npos) << r.out;  // positive: readable
  r = Probe({"read", "/proc/1/environ"});
  EXPECT_EQ(r.out, "err EACCES open\n");
  EXPECT_EQ(Probe({"scan-proc", kCanaryApiKey}).status, 1);
}

// RS05: memory of the parent or init.
TEST_F(ReadSecrets, RS05_ProcessMemoryOfOthers) {
  EXPECT_EQ(Probe({"vmread", "1"}).out, "err EPERM process_vm_readv\n");
  EXPECT_EQ(Probe({"proc-mem", "1"}).out, "err EACCES /proc/1/mem\n");
  EXPECT_EQ(Probe({"ptrace", "1"}).out, "err EPERM attach\n");
  EXPECT_EQ(RunProgram({ProbeBin(), "ptrace-child"}).out, "ok attach child\n");  // control
}

// RS06: leaked descriptors.
TEST_F(ReadSecrets, RS06_NoLeakedDescriptors) {
  RunResult r = Probe({"fds"});
  int count = 0;
  for (char c : r.out) count += c == '=';
  EXPECT_EQ(count, 3) << r.out;
  EXPECT_EQ(Probe({"openat-dotdot"}).status, 1);
}

// RS08: the kernel keyring.
TEST_F(ReadSecrets, RS08_Keyrings) {
  EXPECT_EQ(Probe({"keyctl"}).out, "err EPERM keyctl\n");
  EXPECT_EQ(Probe({"add_key"}).out, "err EPERM add_key\n");
  // Control: outside the sandbox the call reaches the kernel.
  EXPECT_EQ(RunProgram({ProbeBin(), "keyctl"}).status, 0);
}

// RS09: host information: dmesg, kallsyms, /sys, host pids.
TEST_F(ReadSecrets, RS09_HostInformation) {
  EXPECT_EQ(Probe({"syslog"}).out, "err EPERM syslog\n");
  EXPECT_EQ(Probe({"stat", "/sys"}).out, "err ENOENT /sys\n");
  RunResult r = Probe({"read", "/proc/kallsyms"});
  EXPECT_TRUE(r.out == "ok \n" || r.out.rfind("err ", 0) == 0) << r.out;  // empty or refused
  r = Probe({"ls", "/proc"});
  // Only the sandbox's own pids (1 and the probe), not the host's.
  EXPECT_EQ(r.out.find(std::to_string(getpid()) + ","), std::string::npos);
}

// RS10: core dumps.
TEST_F(ReadSecrets, RS10_NoCoreDumps) {
  EXPECT_EQ(Probe({"rlimit-core"}).out, "ok soft=0 hard=0\n");
  EXPECT_EQ(Probe({"raise-core"}).out, "err EPERM setrlimit\n");
}

// RS11: supplementary groups (dropped when invoked as root; an unprivileged caller's stay
// unmapped by the kernel's rules, and nothing group-readable of the host is mounted).
TEST_F(ReadSecrets, RS11_SingleGroup) {
  RunResult r = Probe({"id"});
  ASSERT_EQ(r.status, 0);
  std::string groups = r.out.substr(r.out.find("groups=") + 7);
  if (RunningAsRoot()) {
    EXPECT_EQ(groups, "\n");
  } else {
    EXPECT_EQ(groups.find(','), std::string::npos) << groups;  // the test user has one group
  }
  EXPECT_EQ(Probe({"stat", "/dev/vcs1"}).out, "err ENOENT /dev/vcs1\n");
  EXPECT_EQ(Probe({"stat", "/var/log"}).out, "err ENOENT /var/log\n");
}

// RS12: no controlling terminal of the user's.
TEST_F(ReadSecrets, RS12_NoHostTerminal) {
  EXPECT_EQ(Probe({"dev-tty"}).out, "err ENXIO /dev/tty\n");
}

// RS13: abstract sockets of the host (X11 and friends).
TEST_F(ReadSecrets, RS13_AbstractSocketsAreOutOfReach) {
  EXPECT_EQ(Probe({"abstract-connect", "tmp/.X11-unix/X0"}).out.rfind("err ", 0), 0u);
}

}  // namespace
}  // namespace ward::test
