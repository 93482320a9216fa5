// What ward does with the Landlock this kernel has, run on every kernel of the matrix
// (tests/kernels/): without Landlock a run is refused unless --allow-degraded=landlock says
// otherwise, and then it says what it runs without; with Landlock it runs, and `ward explain`
// names the ABI.
#include <nlohmann/json.hpp>

#include "enforce/probe.h"
#include "harness.h"

namespace ward::test {
namespace {

class KernelLayersTest : public SandboxTest {
 protected:
  int Abi() { return enforce::ProbeKernel(false).landlock_abi; }
};

TEST_F(KernelLayersTest, WithoutLandlockARunIsRefusedUnlessAllowed) {
  RunResult plain = Probe({"exit", "0"});
  if (Abi() > 0) {
    // This kernel has Landlock: the run goes ahead (the refusal is proven on the matrix's
    // kernel without it).
    EXPECT_EQ(plain.status, 0) << plain.err;
    EXPECT_EQ(plain.err.find("degraded"), std::string::npos) << plain.err;
    return;
  }
  EXPECT_EQ(plain.status, 125) << plain.err;
  EXPECT_NE(plain.err.find("Landlock is not available on this kernel"), std::string::npos)
      << plain.err;
  EXPECT_NE(plain.err.find("--allow-degraded=landlock"), std::string::npos) << plain.err;
  // Allowed explicitly, it runs and says what it runs without.
  RunResult allowed = Probe({"exit", "0"}, {"--allow-degraded=landlock"});
  EXPECT_EQ(allowed.status, 0) << allowed.err;
  EXPECT_NE(allowed.err.find("degraded: landlock"), std::string::npos) << allowed.err;
  // The other layers still hold: a file outside the view is not there.
  RunResult outside = Probe({"read", "/etc/shadow"}, {"--allow-degraded=landlock"});
  EXPECT_NE(outside.status, 0) << outside.out;
}

TEST_F(KernelLayersTest, ExplainNamesTheLandlockAbi) {
  RunResult r = RunWard({"explain", "--json", "--", "true"}, Defaults());
  const int abi = Abi();
  if (abi == 0) {
    EXPECT_NE(r.err.find("--allow-degraded=landlock"), std::string::npos) << r.out << r.err;
    return;
  }
  EXPECT_EQ(r.status, 0) << r.err;
  nlohmann::json j = nlohmann::json::parse(r.out, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << r.out << r.err;
  EXPECT_NE(r.out.find("\"landlock_abi\": " + std::to_string(abi)), std::string::npos) << r.out;
}

}  // namespace
}  // namespace ward::test
