// An rlimit the config asks for above the hard limit ward may set is clamped to it, and said;
// one within it is kept as asked (the control); with CAP_SYS_RESOURCE nothing is clamped; an
// unknown name is refused.
#include <gtest/gtest.h>

#include "oci/rlimits.h"

namespace ward::oci {
namespace {

bool Current(int resource, rlimit* l) {
  if (resource != RLIMIT_NOFILE && resource != RLIMIT_NPROC) return false;
  l->rlim_cur = 1024;
  l->rlim_max = 524288;
  return true;
}

TEST(OciRlimits, AboveTheHardLimitIsClampedAndSaid) {
  Result<std::vector<PlannedRlimit>> p = PlanRlimits(
      {{"RLIMIT_NOFILE", 1048576, 1048576}, {"RLIMIT_NPROC", 1024, 4096}}, Current, false);
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  ASSERT_EQ(p->size(), 2u);
  EXPECT_TRUE((*p)[0].clamped);
  EXPECT_EQ((*p)[0].soft, 524288u);
  EXPECT_EQ((*p)[0].hard, 524288u);
  EXPECT_EQ(DescribeClamp((*p)[0]),
            "RLIMIT_NOFILE 1048576:1048576 clamped to 524288:524288 (the hard limit ward may set "
            "here: raising it needs CAP_SYS_RESOURCE)");
  EXPECT_FALSE((*p)[1].clamped);  // within the hard limit: as asked
  EXPECT_EQ((*p)[1].soft, 1024u);
  EXPECT_EQ((*p)[1].hard, 4096u);
}

TEST(OciRlimits, UnlimitedIsClampedTooAndWithTheCapabilityNothingIs) {
  Result<std::vector<PlannedRlimit>> p =
      PlanRlimits({{"RLIMIT_NOFILE", 1024, RLIM_INFINITY}}, Current, false);
  ASSERT_TRUE(p.ok());
  EXPECT_TRUE((*p)[0].clamped);
  EXPECT_EQ((*p)[0].soft, 1024u);
  EXPECT_EQ((*p)[0].hard, 524288u);
  Result<std::vector<PlannedRlimit>> raised =
      PlanRlimits({{"RLIMIT_NOFILE", 1048576, 1048576}}, Current, true);
  ASSERT_TRUE(raised.ok());
  EXPECT_FALSE((*raised)[0].clamped);
  EXPECT_EQ((*raised)[0].hard, 1048576u);
}

TEST(OciRlimits, AnUnknownNameIsRefused) {
  Result<std::vector<PlannedRlimit>> p = PlanRlimits({{"RLIMIT_BOGUS", 1, 1}}, Current, false);
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.status().ToString().find("RLIMIT_BOGUS"), std::string::npos);
}

}  // namespace
}  // namespace ward::oci
