// A container's run.ward/ annotations and linux.resources become the flags `ward run` would take,
// and the policy loader accepts them as it accepts the command line's: the allow list, the
// limits and the profile reach the policy; a container that names no profile gets the node's.
#include <gtest/gtest.h>

#include "oci/run_flags.h"

namespace ward::oci {
namespace {

Bundle Sample() {
  Bundle b;
  b.ward.allow_net = {"registry.example.org", "api.example.org:443"};
  b.ward.deny_net = {"evil.example.org"};
  b.config.resources.memory_limit = 256 << 20;
  b.config.resources.pids_limit = 64;
  b.config.resources.cpu_quota_us = 50000;
  b.config.resources.cpu_period_us = 100000;
  return b;
}

TEST(OciRunFlags, AnnotationsAndResourcesBecomeFlags) {
  policy::RunFlags f = ChoicesFor(Sample(), policy::OciDefaults()).flags;
  EXPECT_EQ(f.profile, "default");
  EXPECT_EQ(f.allow_net, (std::vector<std::string>{"registry.example.org", "api.example.org:443"}));
  EXPECT_EQ(f.deny_net, std::vector<std::string>{"evil.example.org"});
  EXPECT_EQ(f.memory, std::to_string(256 << 20));
  EXPECT_EQ(f.pids, "64");
  EXPECT_EQ(f.cpu, "0.5");
  EXPECT_FALSE(f.approvals.has_value());
  Bundle named = Sample();
  named.ward.profile = "agent";
  named.ward.approver = "https://approver.example.org/hook";
  policy::RunFlags g = ChoicesFor(named, policy::OciDefaults()).flags;
  EXPECT_EQ(g.profile, "agent");
  EXPECT_EQ(g.approvals, true);
  // The node's defaults fill what the container leaves out; its approver turns approvals on.
  policy::OciDefaults node;
  node.profile = "minimal";
  node.approver = "https://node.example.org/hook";
  node.audit_dir = "/var/log/ward";
  ContainerChoices from_node = ChoicesFor(Sample(), node);
  EXPECT_EQ(from_node.flags.profile, "minimal");
  EXPECT_EQ(from_node.flags.approvals, true);
  EXPECT_EQ(from_node.approver, "https://node.example.org/hook");
  EXPECT_EQ(from_node.audit_dir, "/var/log/ward");
  EXPECT_EQ(ChoicesFor(named, node).approver, "https://approver.example.org/hook");
}

TEST(OciRunFlags, ThePolicyLoaderTakesThem) {
  policy::Context ctx{"/home/u", "/ws", "/ws", ""};
  Result<policy::Policy> p = policy::LoadPolicy(
      ChoicesFor(Sample(), policy::OciDefaults()).flags, ctx,
      [](const std::string& path) -> Result<std::string> { return NotFound(path); });
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  std::vector<std::string> allow;
  for (const policy::HostRule& h : p->network.allow) allow.push_back(h.pattern);
  EXPECT_EQ(allow, (std::vector<std::string>{"registry.example.org", "api.example.org:443"}));
  EXPECT_EQ(p->limits.memory_bytes, 256ull << 20);
  EXPECT_EQ(p->limits.pids, 64u);
  EXPECT_DOUBLE_EQ(*p->limits.cpu_cores, 0.5);
  // An allow rule the loader refuses (everything) is refused for a container too.
  Bundle wide = Sample();
  wide.ward.allow_net = {"*"};
  EXPECT_FALSE(policy::LoadPolicy(ChoicesFor(wide, policy::OciDefaults()).flags, ctx,
                                  [](const std::string& path) -> Result<std::string> {
                                    return NotFound(path);
                                  })
                   .ok());
}

}  // namespace
}  // namespace ward::oci
