#include "enforce/plan.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "enforce/probe.h"
#include "enforce/seccomp.h"
#include "enforce/syscalls.h"
#include "policy/loader.h"

namespace ward::enforce {
namespace {

class PlanTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/ward-plan-test-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    char real[PATH_MAX];
    ASSERT_NE(realpath(tmpl, real), nullptr);
    dir_ = real;
    for (const char* d : {"/home", "/ws", "/a", "/a/b", "/a-b", "/a.b", "/ab"}) {
      ASSERT_EQ(mkdir((dir_ + d).c_str(), 0755), 0) << d;
    }
  }
  void TearDown() override {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }

  Result<LaunchPlan> Plan(const std::vector<std::string>& read,
                          const std::vector<std::string>& write, WorkspaceLayer layer = {}) {
    return PlanOn(ProbeKernel(false), read, write, {}, nullptr, layer);
  }

  // A plan for a kernel described by `features` (what `ward check` would probe there).
  Result<LaunchPlan> PlanOn(const KernelFeatures& features, const std::vector<std::string>& read,
                            const std::vector<std::string>& write,
                            const std::vector<std::string>& allow_degraded, PlanNotes* out,
                            WorkspaceLayer layer = {}) {
    policy::RunFlags flags;
    flags.read = read;
    flags.write = write;
    flags.allow_degraded = allow_degraded;
    policy::Context ctx{dir_ + "/home", dir_ + "/ws", dir_ + "/ws", ""};
    Result<policy::Policy> pol = policy::LoadPolicy(
        flags, ctx, [](const std::string& p) -> Result<std::string> { return NotFound(p); });
    EXPECT_TRUE(pol.ok()) << pol.status().ToString();
    if (!pol.ok()) return pol.status();
    PlanInput input;
    input.argv = {"true"};
    input.prepare_seccomp = false;
    input.workspace_layer = layer;
    input.truncatable_stdio = truncatable_stdio_;
    PlanNotes notes;
    Result<LaunchPlan> plan = PlanLaunch(*pol, features, input, &notes);
    if (out) *out = notes;
    return plan;
  }

  const MountOp* BindAt(const LaunchPlan& plan, const std::string& target) {
    for (const MountOp& op : plan.mount.ops) {
      if (op.kind == MountOp::Kind::kBind && op.target == target) return &op;
    }
    return nullptr;
  }

  // The targets of the plan's binds below the test directory, in the plan's order.
  std::vector<std::string> BindsBelowDir(const std::vector<std::string>& read,
                                         const std::vector<std::string>& write) {
    Result<LaunchPlan> plan = Plan(read, write);
    EXPECT_TRUE(plan.ok()) << plan.status().ToString();
    if (!plan.ok()) return {};
    std::vector<std::string> out;
    for (const MountOp& op : plan->mount.ops) {
      if (op.kind == MountOp::Kind::kBind && PathIsWithin(op.target, dir_) &&
          op.target.rfind(dir_ + "/ws", 0) != 0 && op.target.rfind(dir_ + "/home", 0) != 0) {
        out.push_back(op.target.substr(dir_.size()));
      }
    }
    return out;
  }

  std::string dir_;
  std::vector<std::string> truncatable_stdio_;  // PlanInput::truncatable_stdio of PlanOn
};

TEST_F(PlanTest, MountsSortComponentByComponentSoADirectoryComesRightBeforeWhatIsBelowIt) {
  // Byte order would put "/a-b" and "/a.b" ('-' and '.' sort before '/') between "/a" and
  // "/a/b". (/a/b is writable, so that it is a bind of its own inside the read-only /a.)
  const std::vector<std::string> want = {"/a", "/a/b", "/a-b", "/a.b", "/ab"};
  EXPECT_EQ(
      BindsBelowDir({dir_ + "/ab", dir_ + "/a.b", dir_ + "/a-b", dir_ + "/a"}, {dir_ + "/a/b"}),
      want);
  EXPECT_EQ(
      BindsBelowDir({dir_ + "/a", dir_ + "/a-b", dir_ + "/ab", dir_ + "/a.b"}, {dir_ + "/a/b"}),
      want);
}

TEST_F(PlanTest, ALateFileTakesItsPlaceInTheMountOrderOnTopOfTheBindThatHoldsIt) {
  Result<LaunchPlan> plan = Plan({dir_ + "/a", dir_ + "/a-b"}, {dir_ + "/a/b"});
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(LateFileTarget(*plan), "");
  ASSERT_TRUE(PlanLateFile(dir_ + "/a/b/bundle.pem", "a test's late file", &*plan).ok());
  EXPECT_TRUE(plan->await_late_setup);
  EXPECT_EQ(LateFileTarget(*plan), dir_ + "/a/b/bundle.pem");
  std::vector<std::string> order;
  for (const MountOp& op : plan->mount.ops) {
    if (PathIsWithin(op.target, dir_ + "/a") || PathIsWithin(op.target, dir_ + "/a-b")) {
      order.push_back(op.target.substr(dir_.size()));
    }
  }
  const std::vector<std::string> want = {"/a", "/a/b", "/a/b/bundle.pem", "/a-b"};
  EXPECT_EQ(order, want);
  const MountOp& late = plan->mount.ops.at(plan->late_file_op);
  EXPECT_EQ(late.kind, MountOp::Kind::kFile);
  EXPECT_EQ(late.mode, 0444u);
  EXPECT_TRUE(late.content.empty());  // sent after the clone (SendLateSetup)
  // One per plan: a second is refused rather than replacing the first.
  EXPECT_FALSE(PlanLateFile(dir_ + "/a/other.pem", "a second", &*plan).ok());
  EXPECT_EQ(LateFileTarget(*plan), dir_ + "/a/b/bundle.pem");
}

TEST_F(PlanTest, RulesInTheWorkspaceAreMarkedToBeBoundFromIt) {
  const std::string ws = dir_ + "/ws";
  ASSERT_EQ(mkdir((ws + "/sub").c_str(), 0755), 0);
  // Read-only inside the writable workspace: a bind of its own.
  Result<LaunchPlan> plan = Plan({ws + "/sub", dir_ + "/a"}, {});
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->mount.workspace, ws);
  const MountOp* sub = BindAt(*plan, ws + "/sub");
  ASSERT_NE(sub, nullptr);
  EXPECT_TRUE(sub->beneath_workspace);
  EXPECT_FALSE(sub->writable);
  const MountOp* whole = BindAt(*plan, ws);
  ASSERT_NE(whole, nullptr);
  EXPECT_TRUE(whole->beneath_workspace);
  const MountOp* outside = BindAt(*plan, dir_ + "/a");
  ASSERT_NE(outside, nullptr);
  EXPECT_FALSE(outside->beneath_workspace);
}

TEST_F(PlanTest, ASymlinkInTheWorkspaceIsNeverFollowed) {
  const std::string ws = dir_ + "/ws";
  // What a sandboxed command can leave behind: links to a host directory, absolute, relative,
  // in the last component or in the middle of the rule's path.
  ASSERT_EQ(symlink((dir_ + "/a").c_str(), (ws + "/sec").c_str()), 0);
  ASSERT_EQ(symlink("../a", (ws + "/rel").c_str()), 0);
  ASSERT_EQ(mkdir((ws + "/d").c_str(), 0755), 0);
  ASSERT_EQ(symlink("../..", (ws + "/d/up").c_str()), 0);
  struct Case {
    std::string rule, link;
  };
  for (const Case& c : {Case{ws + "/sec", ws + "/sec"}, Case{ws + "/sec/b", ws + "/sec"},
                        Case{ws + "/rel", ws + "/rel"}, Case{ws + "/d/up/a", ws + "/d/up"}}) {
    for (bool write : {true, false}) {
      Result<LaunchPlan> plan = write ? Plan({}, {c.rule}) : Plan({c.rule}, {});
      ASSERT_FALSE(plan.ok()) << c.rule;
      EXPECT_EQ(plan.status().code(), Code::kPermissionDenied);
      EXPECT_NE(plan.status().message().find(c.link + " is a symbolic link inside the workspace"),
                std::string::npos)
          << plan.status().message();
    }
  }
  // Positive control: the directory the links point to is bound when named itself.
  Result<LaunchPlan> plan = Plan({}, {dir_ + "/a"});
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_NE(BindAt(*plan, dir_ + "/a"), nullptr);
}

TEST_F(PlanTest, ReviewModeMountsTheWorkspaceAsAnOverlayOrItsCopy) {
  const std::string ws = dir_ + "/ws";
  WorkspaceLayer overlay;
  overlay.kind = WorkspaceLayer::Kind::kOverlay;
  overlay.upper = dir_ + "/a/upper";
  overlay.work = dir_ + "/a/work";
  Result<LaunchPlan> plan = Plan({}, {}, overlay);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  const MountOp* w = BindAt(*plan, ws);
  ASSERT_NE(w, nullptr);
  EXPECT_EQ(w->source, ws);  // the lower layer
  EXPECT_EQ(w->overlay_upper, overlay.upper);
  EXPECT_EQ(w->overlay_work, overlay.work);
  EXPECT_TRUE(w->writable);
  EXPECT_EQ(plan->mount.protect.roots, std::vector<std::string>{ws});
  // Never folded into a writable bind around it, which would show the host's directory.
  plan = Plan({}, {dir_}, overlay);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  w = BindAt(*plan, ws);
  ASSERT_NE(w, nullptr);
  EXPECT_EQ(w->overlay_upper, overlay.upper);

  WorkspaceLayer copy;
  copy.kind = WorkspaceLayer::Kind::kCopy;
  copy.copy = dir_ + "/a/copy";
  plan = Plan({}, {}, copy);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  w = BindAt(*plan, ws);
  ASSERT_NE(w, nullptr);
  EXPECT_EQ(w->source, copy.copy);
  EXPECT_FALSE(w->beneath_workspace);
  EXPECT_TRUE(w->overlay_upper.empty());
}

TEST_F(PlanTest, ReviewModeRefusesAWritableBindOfTheHostBelowTheWorkspace) {
  const std::string ws = dir_ + "/ws";
  ASSERT_EQ(mkdir((ws + "/ro").c_str(), 0755), 0);
  ASSERT_EQ(mkdir((ws + "/ro/out").c_str(), 0755), 0);
  WorkspaceLayer overlay;
  overlay.kind = WorkspaceLayer::Kind::kOverlay;
  overlay.upper = dir_ + "/a/upper";
  overlay.work = dir_ + "/a/work";
  Result<LaunchPlan> plan = Plan({ws + "/ro"}, {ws + "/ro/out"}, overlay);
  ASSERT_FALSE(plan.ok());
  EXPECT_NE(plan.status().message().find("is writable below the workspace"), std::string::npos)
      << plan.status().message();
  // Direct mode: the same rules are fine; and a writable rule folded into the workspace is too.
  EXPECT_TRUE(Plan({ws + "/ro"}, {ws + "/ro/out"}).ok());
  EXPECT_TRUE(Plan({}, {ws + "/ro/out"}, overlay).ok());
}

TEST_F(PlanTest, AWorkspaceReachedThroughASymlinkOutsideItIsStillResolvedBeneath) {
  const std::string ws = dir_ + "/ws";
  ASSERT_EQ(mkdir((ws + "/sub").c_str(), 0755), 0);
  ASSERT_EQ(symlink(ws.c_str(), (dir_ + "/to-ws").c_str()), 0);
  Result<LaunchPlan> plan = Plan({dir_ + "/to-ws/sub"}, {});
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  const MountOp* sub = BindAt(*plan, ws + "/sub");
  ASSERT_NE(sub, nullptr);
  EXPECT_TRUE(sub->beneath_workspace);
  ASSERT_EQ(symlink((dir_ + "/a").c_str(), (ws + "/sec").c_str()), 0);
  plan = Plan({dir_ + "/to-ws/sec"}, {});
  ASSERT_FALSE(plan.ok());
  EXPECT_EQ(plan.status().code(), Code::kPermissionDenied);
}

// A kernel with every layer, as the tests' own may not be.
KernelFeatures FullKernel() {
  KernelFeatures f = ProbeKernel(false);
  f.landlock_abi = 6;
  f.seccomp = true;
  f.seccomp_user_notif = true;
  f.mount_api = true;
  f.userns_mounts = true;
  return f;
}

bool HasNote(const PlanNotes& notes, const std::string& text) {
  for (const std::string& d : notes.degraded) {
    if (d.find(text) != std::string::npos) return true;
  }
  return false;
}

TEST_F(PlanTest, WithoutUserNotificationProtectedPathsNeedTheSeccompLayerDegraded) {
  KernelFeatures f = FullKernel();
  PlanNotes notes;
  // Positive control: with user notification the creation guard is planned.
  Result<LaunchPlan> plan = PlanOn(f, {}, {}, {}, &notes);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_TRUE(plan->seccomp_spec.notify_creations);
  EXPECT_FALSE(plan->seccomp_spec.no_user_notif);
  EXPECT_FALSE(HasNote(notes, "creation guard"));

  f.seccomp_user_notif = false;
  plan = PlanOn(f, {}, {}, {"landlock", "limits"}, &notes);
  ASSERT_FALSE(plan.ok());
  EXPECT_EQ(plan.status().code(), Code::kFailedPrecondition);
  EXPECT_NE(plan.status().message().find("--allow-degraded=seccomp"), std::string::npos)
      << plan.status().message();

  plan = PlanOn(f, {}, {}, {"seccomp"}, &notes);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_FALSE(plan->seccomp_spec.notify_creations);
  EXPECT_TRUE(plan->seccomp_spec.no_user_notif);  // memfd_create: ENOSYS, nothing trapped
  EXPECT_TRUE(plan->seccomp_enabled);             // the filter itself stays
  EXPECT_TRUE(HasNote(notes,
                      "creation guard: no seccomp user notification; protected names "
                      "that do not exist can be created during the run and are "
                      "quarantined after it"));
}

TEST_F(PlanTest, WithoutTheMountApiTheRootIsBuiltByPath) {
  KernelFeatures f = FullKernel();
  PlanNotes notes;
  Result<LaunchPlan> plan = PlanOn(f, {}, {}, {}, &notes);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_FALSE(plan->mount.by_path);
  EXPECT_TRUE(plan->user_ns);

  f.mount_api = false;
  plan = PlanOn(f, {}, {}, {}, &notes);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_TRUE(plan->mount.by_path);
  EXPECT_TRUE(plan->user_ns);
  EXPECT_TRUE(HasNote(notes, "mounts: no mount API"));
  for (const Sysctl& s : plan->mount.sysctls) EXPECT_TRUE(s.optional) << s.path;

  // gVisor: no mount in a new user namespace. Root keeps init in its own; others cannot run.
  f.userns_mounts = false;
  plan = PlanOn(f, {}, {}, {}, &notes);
  if (geteuid() == 0) {
    ASSERT_TRUE(plan.ok()) << plan.status().ToString();
    EXPECT_FALSE(plan->user_ns);
    EXPECT_TRUE(HasNote(notes, "user namespace: mounts are refused in a new one here"));
  } else {
    ASSERT_FALSE(plan.ok());
    EXPECT_NE(plan.status().message().find("Run ward as root inside this outer wall"),
              std::string::npos)
        << plan.status().message();
  }
}

TEST(PlanPathsTest, NormalizePathIsLexical) {
  EXPECT_EQ(NormalizePath("/a//b/./c/../d"), "/a/b/d");
  EXPECT_EQ(NormalizePath("/"), "/");
  EXPECT_EQ(NormalizePath(""), "/");
  EXPECT_EQ(NormalizePath("/.."), "/");
  EXPECT_EQ(NormalizePath("/a/.."), "/");
  EXPECT_EQ(NormalizePath("/a/b/../../../c"), "/c");
  EXPECT_EQ(NormalizePath("/a/b/"), "/a/b");
  EXPECT_EQ(NormalizePath("//a///b//"), "/a/b");
  EXPECT_EQ(NormalizePath("/a/./b/."), "/a/b");
  EXPECT_EQ(NormalizePath("/a/..b/.c/..."), "/a/..b/.c/...");
  EXPECT_EQ(NormalizePath("/usr/lib/../bin"), "/usr/bin");
}

TEST(PlanPathsTest, PathIsWithinMeansAtOrBelow) {
  EXPECT_TRUE(PathIsWithin("/a/b", "/a"));
  EXPECT_TRUE(PathIsWithin("/a", "/a"));
  EXPECT_TRUE(PathIsWithin("/a", "/"));
  EXPECT_FALSE(PathIsWithin("/ab", "/a"));
  EXPECT_FALSE(PathIsWithin("/a", "/a/b"));
}

// No privilege bits leave a run: a set-id mode is trapped (and performed without the bits)
// where the kernel has user notification; without it the filter refuses such modes with EPERM,
// and the plan says so.
TEST_F(PlanTest, SetidModesAreTrappedOrRefusedAndSaidSo) {
  const std::string bare = dir_ + "/bare.toml";
  policy::RunFlags flags;
  flags.profile = bare;  // no protected names: nothing else needs user notification
  policy::Context ctx{dir_ + "/home", dir_ + "/ws", dir_ + "/ws", ""};
  Result<policy::Policy> pol =
      policy::LoadPolicy(flags, ctx, [&](const std::string& p) -> Result<std::string> {
        if (p == bare) return std::string("[workspace]\naccess = \"write\"\n");
        return NotFound(p);
      });
  ASSERT_TRUE(pol.ok()) << pol.status().ToString();
  PlanInput input;
  input.argv = {"true"};
  for (bool notif : {true, false}) {
    KernelFeatures f = ProbeKernel(false);
    if (!f.seccomp) GTEST_SKIP() << "no seccomp";
    f.seccomp_user_notif = notif;
    PlanNotes notes;
    Result<LaunchPlan> plan = PlanLaunch(*pol, f, input, &notes);
    ASSERT_TRUE(plan.ok()) << plan.status().ToString();
    EXPECT_EQ(plan->seccomp_spec.no_user_notif, !notif);
    EXPECT_FALSE(plan->seccomp_spec.notify_creations);
    // The program the plan took gives a set-id chmod the verdict the spec names.
    seccomp_data d = {};
    d.nr = NativeSyscallNumber("fchmodat");
    d.arch = NativeAuditArch();
    d.args[2] = 04755;
    EXPECT_EQ(EvaluateSeccomp(plan->seccomp, d),
              notif ? SECCOMP_RET_USER_NOTIF : (SECCOMP_RET_ERRNO | EPERM));
    std::string said;
    for (const std::string& n : notes.degraded) said += n + "\n";
    EXPECT_EQ(said.find("setuid or setgid bit fail with EPERM") != std::string::npos, !notif)
        << said;
  }
}

}  // namespace
}  // namespace ward::enforce

namespace ward::enforce {
namespace {

// Every run has the proxy and the DNS stub, so that what the command tries to reach is answered
// with a reason and recorded, a host allowed or not; only inside gVisor, whose init cannot join
// the namespace they listen in, a run without a host keeps only its own lo.
TEST_F(PlanTest, TheProxyAndTheStubAreInEveryRunButOneInsideGvisor) {
  KernelFeatures f = FullKernel();
  Result<LaunchPlan> plan = PlanOn(f, {}, {}, {}, nullptr);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_TRUE(plan->net.enabled);
  EXPECT_EQ(plan->landlock.connect_tcp, (std::vector<uint16_t>{plan->net.proxy_port, 53}));
  bool stub_named = false;
  for (const MountOp& op : plan->mount.ops) {
    if (op.kind == MountOp::Kind::kFile && op.why == "DNS stub") {
      stub_named = op.content.find("nameserver 127.0.0.1\n") != std::string::npos;
    }
  }
  EXPECT_TRUE(stub_named);
  const std::string proxy = "HTTPS_PROXY=http://127.0.0.1:" + std::to_string(plan->net.proxy_port);
  EXPECT_NE(std::find(plan->process.env.begin(), plan->process.env.end(), proxy),
            plan->process.env.end());

  f.outer_wall = "gvisor";
  f.landlock_abi = 0;
  plan = PlanOn(f, {}, {}, {"landlock"}, nullptr);
  if (!plan.ok()) GTEST_SKIP() << "no plan inside gVisor here: " << plan.status().ToString();
  EXPECT_FALSE(plan->net.enabled);
  EXPECT_TRUE(plan->landlock.connect_tcp.empty());
  for (const std::string& e : plan->process.env) EXPECT_NE(e.rfind("HTTPS_PROXY=", 0), 0u) << e;
}

// The default profile on the Landlock ABIs of the kernels users have (Ubuntu 22.04's 5.15: 1,
// Debian 12's 6.1: 2, 6.8: 4, Debian 13's 6.12: 6): it plans fully enforced, every right the
// kernel lacks covered by another layer and named in the notes.
TEST_F(PlanTest, TheDefaultProfilePlansOnEveryLandlockAbiWithTheGapsNamed) {
  const std::map<int, std::vector<std::string>> gaps = {
      {1, {"refer", "truncate", "tcp", "ioctl_dev", "scope", "log"}},
      {2, {"truncate", "tcp", "ioctl_dev", "scope", "log"}},
      {4, {"ioctl_dev", "scope", "log"}},
      {6, {"log"}},
  };
  for (const auto& [abi, rights] : gaps) {
    KernelFeatures f = FullKernel();
    f.landlock_abi = abi;
    PlanNotes notes;
    Result<LaunchPlan> plan = PlanOn(f, {}, {}, {}, &notes);
    ASSERT_TRUE(plan.ok()) << "ABI " << abi << ": " << plan.status().ToString();
    EXPECT_TRUE(plan->landlock.enabled);
    EXPECT_EQ(plan->landlock.abi, abi);
    EXPECT_FALSE(HasNote(notes, "landlock")) << "ABI " << abi << ": nothing runs degraded";
    std::vector<std::string> got;
    for (const LandlockGap& g : notes.landlock_gaps) {
      got.push_back(g.feature->right);
      EXPECT_NE(g.decision, LandlockGapDecision::kRefused) << g.feature->right;
    }
    EXPECT_EQ(got, rights) << "ABI " << abi;
    // The plan's own writable mounts all have Landlock write rules: truncation outside them
    // meets a read-only mount.
    EXPECT_EQ(WritableMountOutsideLandlockWrites(plan->mount, plan->landlock), "");
  }
}

TEST_F(PlanTest, WithoutTruncateAHostFileAtStdinRefusesTheRunNamingTheRight) {
  KernelFeatures f = FullKernel();
  f.landlock_abi = 2;
  f.kernel_release = "6.1.0-18-amd64";
  truncatable_stdio_ = {"stdin"};
  PlanNotes notes;
  Result<LaunchPlan> plan = PlanOn(f, {}, {}, {}, &notes);
  ASSERT_FALSE(plan.ok());
  EXPECT_EQ(plan.status().code(), Code::kFailedPrecondition);
  const std::string& msg = plan.status().message();
  for (const char* part : {"Landlock ABI 2 (Linux 6.1.0-18-amd64) lacks the truncate right of "
                           "ABI 3 (Linux 6.2)",
                           "stdin", "--allow-degraded=landlock"}) {
    EXPECT_NE(msg.find(part), std::string::npos) << part << " in " << msg;
  }
  // Allowed degraded: it runs, and says what it runs without.
  plan = PlanOn(f, {}, {}, {"landlock"}, &notes);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_TRUE(plan->landlock.enabled);
  EXPECT_TRUE(HasNote(notes, "landlock: ABI 2 lacks truncate (ABI 3, Linux 6.2)"));
  // Positive control: ABI 3 refuses the truncation itself, so the same stdin runs.
  f.landlock_abi = 3;
  plan = PlanOn(f, {}, {}, {}, &notes);
  EXPECT_TRUE(plan.ok()) << plan.status().ToString();
}

TEST_F(PlanTest, ApprovalsWithoutTruncateAreRefusedNamingTheRight) {
  KernelFeatures f = FullKernel();
  f.landlock_abi = 1;
  policy::RunFlags flags;
  flags.approvals = true;
  policy::Context ctx{dir_ + "/home", dir_ + "/ws", dir_ + "/ws", ""};
  Result<policy::Policy> pol = policy::LoadPolicy(
      flags, ctx, [](const std::string& p) -> Result<std::string> { return NotFound(p); });
  ASSERT_TRUE(pol.ok()) << pol.status().ToString();
  ASSERT_TRUE(pol->approvals.enabled);
  PlanInput input;
  input.argv = {"true"};
  input.prepare_seccomp = false;
  PlanNotes notes;
  Result<LaunchPlan> plan = PlanLaunch(*pol, f, input, &notes);
  ASSERT_FALSE(plan.ok());
  EXPECT_NE(plan.status().message().find("lacks the truncate right"), std::string::npos)
      << plan.status().message();
  EXPECT_NE(plan.status().message().find("files granted by --ask"), std::string::npos)
      << plan.status().message();
  f.landlock_abi = 3;  // positive control
  plan = PlanLaunch(*pol, f, input, &notes);
  EXPECT_TRUE(plan.ok()) << plan.status().ToString();
}

}  // namespace
}  // namespace ward::enforce
