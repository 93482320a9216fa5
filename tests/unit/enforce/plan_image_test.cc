// A container's plan (PlanInput::image): the image's top-level entries bound beneath the rootfs
// (ward's own /proc, /dev and /tmp, and no /sys, in their place), its top-level symlinks made as
// themselves, the bundle's binds and tmpfs at their destinations, the bundle's rlimits only
// lowering ward's, init a sibling of the supervisor; a policy that names host paths is refused.
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "enforce/plan.h"
#include "enforce/probe.h"
#include "policy/loader.h"

namespace ward::enforce {
namespace {

class PlanImageTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/ward-plan-image-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = std::filesystem::canonical(tmpl);
    rootfs_ = dir_ + "/rootfs";
    for (const char* d : {"", "/usr", "/etc", "/proc", "/dev", "/tmp", "/sys", "/data"}) {
      std::filesystem::create_directories(rootfs_ + d);
    }
    std::ofstream(rootfs_ + "/etc/resolv.conf") << "nameserver 192.0.2.1\n";
    std::ofstream(rootfs_ + "/file") << "x";
    std::filesystem::create_symlink("usr/bin", rootfs_ + "/bin");
    std::filesystem::create_directories(dir_ + "/host-data");
  }
  void TearDown() override {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }

  static policy::Policy ContainerPolicy(const std::vector<std::string>& allow_net = {}) {
    policy::RunFlags flags;
    flags.allow_net = allow_net;
    policy::Context ctx{"/root", "/", "/", ""};
    Result<policy::Policy> pol = policy::LoadPolicy(
        flags, ctx, [](const std::string& p) -> Result<std::string> { return NotFound(p); });
    EXPECT_TRUE(pol.ok()) << pol.status().ToString();
    policy::Policy p = *pol;
    p.paths.clear();
    p.workspace = "";
    p.workspace_access.reset();
    p.home = "";
    return p;
  }

  ImageRoot Image() const {
    ImageRoot image;
    image.rootfs = rootfs_;
    image.binds = {{dir_ + "/host-data", "/data", false, "config.json: mounts[0]"}};
    image.tmpfs = {"/run"};
    image.workdir = "/usr";
    image.hostname = "box";
    image.rlimits = {{RLIMIT_NOFILE, 512, 1024}};
    return image;
  }

  Result<LaunchPlan> Plan(const policy::Policy& pol, const ImageRoot& image) {
    PlanInput input;
    input.argv = {"/bin/sh"};
    input.prepare_seccomp = false;
    input.image = image;
    PlanNotes notes;
    return PlanLaunch(pol, ProbeKernel(false), input, &notes);
  }

  static const MountOp* Op(const LaunchPlan& plan, const std::string& target) {
    for (const MountOp& op : plan.mount.ops) {
      if (op.target == target) return &op;
    }
    return nullptr;
  }

  std::string dir_, rootfs_;
};

TEST_F(PlanImageTest, TheImageIsTheRootAndTheBundleAddsItsMounts) {
  Result<LaunchPlan> plan = Plan(ContainerPolicy(), Image());
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_TRUE(plan->container_init);
  EXPECT_EQ(plan->mount.workspace, rootfs_);  // what beneath-binds are opened from
  for (const char* top : {"/usr", "/etc", "/file"}) {
    const MountOp* op = Op(*plan, top);
    ASSERT_NE(op, nullptr) << top;
    EXPECT_EQ(op->kind, MountOp::Kind::kBind) << top;
    EXPECT_EQ(op->source, rootfs_ + top);
    EXPECT_TRUE(op->beneath_workspace) << top;
    EXPECT_TRUE(op->writable) << top;
  }
  EXPECT_FALSE(Op(*plan, "/file")->is_dir);
  // ward's own, never the image's; and no /sys at all.
  EXPECT_EQ(Op(*plan, "/proc")->kind, MountOp::Kind::kProc);
  EXPECT_EQ(Op(*plan, "/dev")->kind, MountOp::Kind::kDev);
  EXPECT_EQ(Op(*plan, "/tmp")->kind, MountOp::Kind::kTmpfs);
  EXPECT_EQ(Op(*plan, "/sys"), nullptr);
  const MountOp* bin = Op(*plan, "/bin");
  ASSERT_NE(bin, nullptr);
  EXPECT_EQ(bin->kind, MountOp::Kind::kSymlink);
  EXPECT_EQ(bin->source, "usr/bin");
  const MountOp* data = Op(*plan, "/data");
  ASSERT_NE(data, nullptr);
  EXPECT_EQ(data->source, dir_ + "/host-data");
  EXPECT_FALSE(data->writable);
  EXPECT_FALSE(data->beneath_workspace);
  EXPECT_EQ(Op(*plan, "/run")->kind, MountOp::Kind::kTmpfs);
  EXPECT_TRUE(std::any_of(plan->landlock.paths.begin(), plan->landlock.paths.end(),
                          [](const LandlockPath& p) { return p.path == "/run" && p.writable; }));
  EXPECT_EQ(plan->mount.workdir, "/usr");
  EXPECT_EQ(plan->process.workdir, "/usr");
  EXPECT_EQ(plan->mount.hostname, "box");
  // The bundle's rlimit lowers ward's own: one entry, at most what either says (two entries
  // would be set in turn, and the second could not raise what the first lowered).
  const auto nofile = std::count_if(plan->process.rlimits.begin(), plan->process.rlimits.end(),
                                    [](const ProcessSpec::Rlimit& r) { return r.resource == RLIMIT_NOFILE; });
  EXPECT_EQ(nofile, 1);
  for (const ProcessSpec::Rlimit& r : plan->process.rlimits) {
    if (r.resource != RLIMIT_NOFILE) continue;
    EXPECT_LE(r.soft, 512u);
    EXPECT_LE(r.hard, 1024u);
  }
}

TEST_F(PlanImageTest, AReadOnlyRootBindsTheImageReadOnly) {
  ImageRoot image = Image();
  image.readonly = true;
  Result<LaunchPlan> plan = Plan(ContainerPolicy(), image);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_FALSE(Op(*plan, "/usr")->writable);
  EXPECT_FALSE(std::any_of(plan->landlock.paths.begin(), plan->landlock.paths.end(),
                           [](const LandlockPath& p) { return p.path == "/usr" && p.writable; }));
}

TEST_F(PlanImageTest, TheDnsStubStandsInTheContainersResolvConf) {
  Result<LaunchPlan> plan = Plan(ContainerPolicy({"registry.example.org"}), Image());
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  const MountOp* rc = Op(*plan, "/etc/resolv.conf");
  ASSERT_NE(rc, nullptr);
  EXPECT_EQ(rc->kind, MountOp::Kind::kFile);
  EXPECT_NE(rc->content.find("nameserver 127.0.0.1"), std::string::npos);
  // Control: an image without one gets none (there is no mount point to cover).
  std::filesystem::remove(rootfs_ + "/etc/resolv.conf");
  Result<LaunchPlan> without = Plan(ContainerPolicy({"registry.example.org"}), Image());
  ASSERT_TRUE(without.ok());
  EXPECT_EQ(Op(*without, "/etc/resolv.conf"), nullptr);
}

TEST_F(PlanImageTest, APolicyWithHostPathsIsRefused) {
  policy::Policy pol = ContainerPolicy();
  pol.paths.push_back({"/usr", policy::Access::kRead, false, {}});
  Result<LaunchPlan> plan = Plan(pol, Image());
  ASSERT_FALSE(plan.ok());
  EXPECT_NE(plan.status().message().find("sees its image"), std::string::npos);
}

}  // namespace
}  // namespace ward::enforce
