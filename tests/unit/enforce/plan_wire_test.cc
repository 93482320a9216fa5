#include "enforce/plan_wire.h"

#include <gtest/gtest.h>
#include <linux/filter.h>

#include <cstdint>
#include <cstring>
#include <string>

namespace ward::enforce {
namespace {

// A plan with every field init reads set to something other than its default.
LaunchPlan FullPlan() {
  LaunchPlan p;
  p.uid = 1234;
  p.gid = 5678;
  p.privileged = true;
  MountOp tmpfs;
  tmpfs.kind = MountOp::Kind::kTmpfs;
  tmpfs.target = "/tmp";
  tmpfs.size = 64u << 20;
  tmpfs.mode = 01777;
  MountOp bind;
  bind.kind = MountOp::Kind::kBind;
  bind.source = "/home/u/work space";
  bind.target = "/home/u/work space";
  bind.writable = true;
  bind.beneath_workspace = true;
  bind.overlay_upper = "/home/u/.local/state/ward/review/x/upper";
  bind.overlay_work = "/home/u/.local/state/ward/review/x/work";
  bind.why = "workspace";
  MountOp file;
  file.kind = MountOp::Kind::kFile;
  file.target = "/etc/resolv.conf";
  file.content = std::string("nameserver 127.0.0.1\n\0binary", 29);
  file.is_dir = false;
  p.mount.ops = {tmpfs, bind, file};
  p.mount.masks = {{"/home/u/work space/.env*", "deny (cli)"}};
  p.mount.protect.roots = {"/home/u/work space", "/tmp"};
  p.mount.protect.relpaths = {".git/hooks", ".envrc"};
  p.mount.protect.nested_repo_depth = 5;
  p.mount.workdir = "/home/u/work space";
  p.mount.workspace = "/home/u/work space";
  p.mount.hostname = "box";
  p.mount.sysctls = {{"user/max_user_namespaces", "0", false}, {"kernel/x", "1", true}};
  p.landlock.enabled = true;
  p.landlock.abi = 7;
  p.landlock.paths = {{"/usr", false, false, false},
                      {"/dev/null", true, true, false},
                      {"/proc", true, false, true}};
  p.landlock.connect_tcp = {3128, 53};
  p.landlock.bind_tcp = {8080};
  p.seccomp_enabled = true;
  p.seccomp.insns = {BPF_STMT(BPF_LD | BPF_W | BPF_ABS, 4), BPF_STMT(BPF_RET | BPF_K, 0x7fff0000)};
  p.process.argv = {"sh", "-c", "echo 'a b'"};
  p.process.env = {"PATH=/usr/bin", "HOME=/home/u", "EMPTY="};
  p.process.workdir = "/home/u/work space";
  p.process.rlimits = {{RLIMIT_NOFILE, 1024, 4096}, {RLIMIT_FSIZE, RLIM_INFINITY, RLIM_INFINITY}};
  p.container_init = true;
  p.await_late_setup = true;
  p.late_file_op = 2;
  p.cgroup_after_clone = true;
  p.tty[0] = true;
  p.tty[2] = true;
  p.has_termios = true;
  p.termios.c_lflag = ECHO | ICANON;
  p.termios.c_cc[VINTR] = 3;
  p.has_winsize = true;
  p.winsize.ws_row = 40;
  p.winsize.ws_col = 132;
  return p;
}

TEST(PlanWireTest, RoundTripsEveryFieldInitReads) {
  const LaunchPlan in = FullPlan();
  InitLaunch launch;
  launch.unshare_cgroup_ns = true;
  const std::string bytes = EncodeInitPlan(in, launch);

  LaunchPlan out;
  InitLaunch got;
  ASSERT_TRUE(DecodeInitPlan(bytes, &out, &got).ok());
  EXPECT_TRUE(got.unshare_cgroup_ns);
  EXPECT_EQ(out.uid, 1234u);
  EXPECT_EQ(out.gid, 5678u);
  EXPECT_TRUE(out.privileged);
  ASSERT_EQ(out.mount.ops.size(), 3u);
  EXPECT_EQ(out.mount.ops[0].kind, MountOp::Kind::kTmpfs);
  EXPECT_EQ(out.mount.ops[0].size, 64u << 20);
  EXPECT_EQ(out.mount.ops[0].mode, 01777u);
  EXPECT_EQ(out.mount.ops[1].source, "/home/u/work space");
  EXPECT_TRUE(out.mount.ops[1].writable);
  EXPECT_TRUE(out.mount.ops[1].beneath_workspace);
  EXPECT_FALSE(out.mount.ops[0].beneath_workspace);
  EXPECT_EQ(out.mount.ops[1].why, "workspace");
  EXPECT_EQ(out.mount.ops[1].overlay_upper, in.mount.ops[1].overlay_upper);
  EXPECT_EQ(out.mount.ops[1].overlay_work, in.mount.ops[1].overlay_work);
  EXPECT_TRUE(out.mount.ops[0].overlay_upper.empty());
  EXPECT_EQ(out.mount.ops[2].content, in.mount.ops[2].content);  // an embedded NUL survives
  EXPECT_FALSE(out.mount.ops[2].is_dir);
  ASSERT_EQ(out.mount.masks.size(), 1u);
  EXPECT_EQ(out.mount.masks[0].target, "/home/u/work space/.env*");
  EXPECT_EQ(out.mount.protect.roots, in.mount.protect.roots);
  EXPECT_EQ(out.mount.protect.relpaths, in.mount.protect.relpaths);
  EXPECT_EQ(out.mount.protect.nested_repo_depth, 5);
  EXPECT_EQ(out.mount.workspace, "/home/u/work space");
  EXPECT_EQ(out.mount.hostname, "box");
  ASSERT_EQ(out.mount.sysctls.size(), 2u);
  EXPECT_TRUE(out.mount.sysctls[1].optional);
  EXPECT_EQ(out.landlock.abi, 7);
  ASSERT_EQ(out.landlock.paths.size(), 3u);
  EXPECT_TRUE(out.landlock.paths[1].device);
  EXPECT_TRUE(out.landlock.paths[2].proc);
  EXPECT_EQ(out.landlock.connect_tcp, (std::vector<uint16_t>{3128, 53}));
  EXPECT_EQ(out.landlock.bind_tcp, (std::vector<uint16_t>{8080}));
  ASSERT_EQ(out.seccomp.insns.size(), 2u);
  EXPECT_EQ(out.seccomp.insns[1].k, 0x7fff0000u);
  EXPECT_EQ(out.process.argv, in.process.argv);
  EXPECT_EQ(out.process.env, in.process.env);
  ASSERT_EQ(out.process.rlimits.size(), 2u);
  EXPECT_EQ(out.process.rlimits[0].resource, RLIMIT_NOFILE);
  EXPECT_EQ(out.process.rlimits[0].hard, 4096u);
  EXPECT_EQ(out.process.rlimits[1].soft, RLIM_INFINITY);
  EXPECT_TRUE(out.container_init);
  EXPECT_TRUE(out.await_late_setup);
  EXPECT_EQ(out.late_file_op, 2);
  EXPECT_TRUE(out.cgroup_after_clone);
  EXPECT_TRUE(out.tty[0]);
  EXPECT_FALSE(out.tty[1]);
  EXPECT_TRUE(out.tty[2]);
  EXPECT_EQ(out.termios.c_cc[VINTR], 3);
  EXPECT_EQ(out.winsize.ws_col, 132);
  // Nothing init reads is lost: encoding what was decoded gives the same bytes.
  EXPECT_EQ(EncodeInitPlan(out, got), bytes);
}

TEST(PlanWireTest, DefaultPlanRoundTrips) {
  const LaunchPlan in;
  const std::string bytes = EncodeInitPlan(in, InitLaunch{});
  LaunchPlan out;
  InitLaunch got;
  ASSERT_TRUE(DecodeInitPlan(bytes, &out, &got).ok());
  EXPECT_FALSE(got.unshare_cgroup_ns);
  EXPECT_EQ(out.late_file_op, -1);
  EXPECT_EQ(EncodeInitPlan(out, got), bytes);
}

TEST(PlanWireTest, EveryTruncationIsRefused) {
  const std::string bytes = EncodeInitPlan(FullPlan(), InitLaunch{});
  for (size_t n = 0; n < bytes.size(); ++n) {
    LaunchPlan out;
    InitLaunch got;
    Status st = DecodeInitPlan(std::string_view(bytes).substr(0, n), &out, &got);
    ASSERT_FALSE(st.ok()) << "accepted the first " << n << " of " << bytes.size() << " bytes";
    EXPECT_NE(st.message().find("launch plan: "), std::string::npos) << st.message();
  }
}

// Offsets in the encoding: magic (4), unshare_cgroup_ns (1), uid (4), gid (4), privileged (1),
// then the mount ops' count (8) and the first op's kind; after it the first op's source (8 + 0),
// target (8 + "/tmp"), writable (1), is_dir (1) and beneath_workspace.
constexpr size_t kPrivileged = 13, kOpsCount = 14, kFirstKind = 22, kFirstBeneath = 45;

std::string Refusal(const std::string& bytes) {
  LaunchPlan out;
  InitLaunch got;
  Status st = DecodeInitPlan(bytes, &out, &got);
  return st.ok() ? "accepted" : st.message();
}

TEST(PlanWireTest, CorruptionIsRefusedNamingTheField) {
  const std::string good = EncodeInitPlan(FullPlan(), InitLaunch{});
  ASSERT_EQ(Refusal(good), "accepted");

  EXPECT_EQ(Refusal(good + "x"), "launch plan: end: trailing bytes");

  std::string bad = good;
  bad[0] ^= 1;
  EXPECT_EQ(Refusal(bad), "launch plan: magic: not a launch plan");

  bad = good;
  bad[kPrivileged] = 2;
  EXPECT_EQ(Refusal(bad), "launch plan: privileged: not a boolean");

  bad = good;
  const uint64_t huge = uint64_t{1} << 60;
  std::memcpy(bad.data() + kOpsCount, &huge, sizeof huge);
  EXPECT_EQ(Refusal(bad), "launch plan: mount.ops: count larger than the message");

  bad = good;
  bad[kFirstKind] = 6;  // one past kFile
  EXPECT_EQ(Refusal(bad), "launch plan: mount.ops.kind: unknown kind");

  bad = good;
  ASSERT_EQ(bad[kFirstBeneath], 0);
  bad[kFirstBeneath] = 2;
  EXPECT_EQ(Refusal(bad), "launch plan: mount.ops.beneath_workspace: not a boolean");

  // A late file op that names no mount op.
  LaunchPlan plan = FullPlan();
  plan.late_file_op = 3;
  EXPECT_EQ(Refusal(EncodeInitPlan(plan, InitLaunch{})),
            "launch plan: late_file_op: not a mount op");
  plan.late_file_op = -2;
  EXPECT_EQ(Refusal(EncodeInitPlan(plan, InitLaunch{})),
            "launch plan: late_file_op: not a mount op");
}

}  // namespace
}  // namespace ward::enforce
