// Transparent capture's part of the plan: on when a name is allowed, with the names' ports
// opened to Landlock's connect rule, off when the policy says so or nothing needs it.
#include "supervisor/egress_capture.h"

#include <gtest/gtest.h>

#include <algorithm>

namespace ward::supervisor {
namespace {

struct Planned {
  std::string why_off;
  enforce::LaunchPlan plan;
};

Planned PlanFor(std::vector<std::string> allow, bool transparent = true, bool egress = true) {
  policy::Policy p;
  for (auto& a : allow) p.network.allow.push_back({a, {"test", 1, "network.allow"}});
  p.network.transparent = transparent;
  p.network.transparent_origin = {"t.toml", 4, "network.transparent"};
  Planned out;
  out.plan.net.enabled = egress;
  out.plan.landlock.connect_tcp = out.plan.net.tcp_ports();
  auto rules = net::EgressRules::Compile(p.network);
  EXPECT_TRUE(rules.ok());
  out.why_off = PlanTransparentCapture(p, *rules, &out.plan);
  return out;
}

bool Has(const std::vector<uint16_t>& v, uint16_t p) {
  return std::find(v.begin(), v.end(), p) != v.end();
}

TEST(EgressCapturePlanTest, AnAllowedNameTurnsItOnWithItsPorts) {
  Planned r = PlanFor({"a.test", "b.test:22", "10.0.0.0/8:5432"});
  EXPECT_EQ(r.why_off, "");
  EXPECT_EQ(r.plan.net.capture_port, kCapturePort);
  EXPECT_EQ(r.plan.net.capture_v4_len, 15);
  EXPECT_EQ(r.plan.net.capture_v4[0], 198);
  EXPECT_EQ(r.plan.net.capture_v6_len, 64);
  const auto& c = r.plan.landlock.connect_tcp;
  for (uint16_t p : {22, 80, 443, 3128, 53}) EXPECT_TRUE(Has(c, p)) << p;
  EXPECT_FALSE(Has(c, 5432));  // an address rule: nothing is captured for it
  EXPECT_FALSE(Has(c, kCapturePort));  // reached through the redirect, never directly
  EXPECT_FALSE(r.plan.landlock.connect_any);
  EXPECT_TRUE(Has(r.plan.net.tcp_ports(), kCapturePort));  // ward's own: never exposed
}

TEST(EgressCapturePlanTest, EveryPortOfANameLeavesConnectUnrestricted) {
  Planned r = PlanFor({"a.test:*"});
  EXPECT_EQ(r.plan.net.capture_port, kCapturePort);
  EXPECT_TRUE(r.plan.landlock.connect_any);
}

TEST(EgressCapturePlanTest, OffWhenTurnedOffOrNotNeeded) {
  Planned r = PlanFor({"a.test"}, /*transparent=*/false);
  EXPECT_EQ(r.plan.net.capture_port, 0);
  EXPECT_NE(r.why_off.find("t.toml:4"), std::string::npos) << r.why_off;
  EXPECT_FALSE(Has(r.plan.landlock.connect_tcp, 443));
  EXPECT_EQ(PlanFor({"10.0.0.5"}).plan.net.capture_port, 0);
  EXPECT_EQ(PlanFor({}).plan.net.capture_port, 0);
  EXPECT_EQ(PlanFor({"a.test"}, true, /*egress=*/false).plan.net.capture_port, 0);
}

}  // namespace
}  // namespace ward::supervisor
