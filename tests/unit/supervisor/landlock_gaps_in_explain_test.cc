// `ward explain` on the Landlock ABIs of the kernels users have: the landlock layer's line names
// each right the kernel lacks and the layer that covers it, in text and in JSON.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <map>
#include <string>

#include "enforce/probe.h"
#include "policy/loader.h"
#include "supervisor/explain.h"

namespace ward::supervisor {
namespace {

class LandlockGapsInExplainTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/ward-explain-gaps-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    char real[PATH_MAX];
    ASSERT_NE(realpath(tmpl, real), nullptr);
    dir_ = real;
    for (const char* d : {"/home", "/ws"}) ASSERT_EQ(mkdir((dir_ + d).c_str(), 0755), 0) << d;
  }
  void TearDown() override {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }

  // The default profile explained for a kernel with `abi`.
  Result<nlohmann::json> ExplainOn(int abi) {
    policy::RunFlags flags;
    policy::Context ctx{dir_ + "/home", dir_ + "/ws", dir_ + "/ws", ""};
    Result<policy::Policy> pol = policy::LoadPolicy(
        flags, ctx, [](const std::string& p) -> Result<std::string> { return NotFound(p); });
    EXPECT_TRUE(pol.ok()) << pol.status().ToString();
    if (!pol.ok()) return pol.status();
    policy_ = std::move(pol).value();
    enforce::KernelFeatures f = enforce::ProbeKernel(false);
    f.landlock_abi = abi;
    f.seccomp = true;
    f.seccomp_user_notif = true;
    f.mount_api = true;
    f.userns_mounts = true;
    ExplainInput in;
    in.policy = &policy_;
    in.argv = {"true"};
    return Explain(in, f);
  }

  static std::string LandlockLine(const std::string& text) {
    size_t at = text.find("landlock: ABI");
    if (at == std::string::npos) return "";
    return text.substr(at, text.find('\n', at) - at);
  }

  std::string dir_;
  policy::Policy policy_;
};

TEST_F(LandlockGapsInExplainTest, TheLandlockLineNamesWhatCoversEachMissingRight) {
  const std::map<int, std::vector<std::string>> want = {
      {1,
       {"ABI 1: ", "this kernel lacks refer (ABI 2: stricter without it",
        "truncate (ABI 3: covered by read-only mounts)",
        "tcp (ABI 4: covered by the network namespace)",
        "ioctl_dev (ABI 5: covered by the minimal /dev and seccomp)",
        "scope (ABI 6: covered by the pid and network namespaces)", "log (ABI 7: audit only)"}},
      {2, {"ABI 2: ", "this kernel lacks truncate (ABI 3: covered by read-only mounts)"}},
      {4,
       {"ABI 4: ", "TCP connect only to the ports of the proxy",
        "this kernel lacks ioctl_dev (ABI 5: covered by the minimal /dev and seccomp)"}},
      {6, {"ABI 6: ", "signals scoped", "this kernel lacks log (ABI 7: audit only)"}},
  };
  for (const auto& [abi, parts] : want) {
    Result<nlohmann::json> j = ExplainOn(abi);
    ASSERT_TRUE(j.ok()) << "ABI " << abi << ": " << j.status().ToString();
    const std::string line = LandlockLine(RenderExplain(*j));
    ASSERT_FALSE(line.empty()) << RenderExplain(*j);
    for (const std::string& p : parts) {
      EXPECT_NE(line.find(p), std::string::npos) << "ABI " << abi << ": " << p << " in " << line;
    }
    const nlohmann::json& gaps = (*j)["landlock_gaps"];
    ASSERT_TRUE(gaps.is_array());
    for (const auto& g : gaps) {
      EXPECT_GT(g["abi"].get<int>(), abi);
      EXPECT_NE(g["decision"].get<std::string>(), "refused") << g.dump();
      EXPECT_FALSE(g["covered_by"].get<std::string>().empty()) << g.dump();
    }
  }
  // ABI 2's list in JSON, right by right.
  Result<nlohmann::json> j = ExplainOn(2);
  ASSERT_TRUE(j.ok());
  const nlohmann::json& gaps = (*j)["landlock_gaps"];
  ASSERT_EQ(gaps.size(), 5u) << gaps.dump();
  EXPECT_EQ(gaps[0]["right"], "truncate");
  EXPECT_EQ(gaps[0]["abi"], 3);
  EXPECT_EQ(gaps[0]["kernel"], "6.2");
  EXPECT_EQ(gaps[0]["covered_by"], "read-only mounts");
  EXPECT_EQ(gaps[1]["right"], "tcp");
  EXPECT_EQ(gaps[1]["covered_by"], "the network namespace");
  // Positive control: the newest ABI lacks nothing, and says nothing of it.
  j = ExplainOn(7);
  ASSERT_TRUE(j.ok());
  EXPECT_TRUE((*j)["landlock_gaps"].empty());
  EXPECT_EQ(LandlockLine(RenderExplain(*j)).find("lacks"), std::string::npos);
}

}  // namespace
}  // namespace ward::supervisor
