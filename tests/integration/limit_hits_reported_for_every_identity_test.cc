// A limit the run ran into is said on stderr (`ward: limit: ...`) and recorded as `limit.hit`
// in the audit trail the same way for root and for an unprivileged user, wherever ward can
// observe it whatever the mechanism: the file size limit (RLIMIT_FSIZE, SIGXFSZ) and the
// timeout (the supervisor's timer). What cannot be observed without a cgroup (a memory rlimit's
// ENOMEM, a pids rlimit's EAGAIN) is listed in docs/profiles.md; the cgroup cases are in
// limits_test.cc.
#include <gtest/gtest.h>

#include <csignal>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "harness.h"

namespace ward::test {
namespace {

class LimitHitsEveryIdentityTest : public SandboxTest {
 protected:
  // The limit.hit records of the last session.
  std::vector<nlohmann::json> Hits() {
    RunResult r = RunWard({"audit", "show", "last", "--type", "limit.", "--json"}, Defaults());
    EXPECT_EQ(r.status, 0) << r.err;
    std::vector<nlohmann::json> hits;
    std::istringstream in(r.out);
    for (std::string line; std::getline(in, line);) {
      nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
      EXPECT_FALSE(j.is_discarded()) << line;
      if (!j.is_discarded() && j["type"] == "limit.hit") hits.push_back(j["data"]);
    }
    return hits;
  }
};

TEST_F(LimitHitsEveryIdentityTest, FileSizeLimitIsSaidAndRecorded) {
  RunResult r = Probe({"fill", "big", "64"}, {"--file-size", "2M"});
  EXPECT_EQ(r.status, 128 + SIGXFSZ) << r.out << r.err;
  EXPECT_EQ(r.err, "ward: limit: the file size limit of 2 MiB was exceeded (SIGXFSZ)\n");
  std::vector<nlohmann::json> hits = Hits();
  ASSERT_EQ(hits.size(), 1u);
  EXPECT_EQ(hits[0]["limit"], "file_size");
  EXPECT_EQ(hits[0]["limit_bytes"], 2u << 20);
}

TEST_F(LimitHitsEveryIdentityTest, TimeoutIsRecorded) {
  RunResult r = RunWard({"run", "--timeout", "1s", "--", "/bin/sleep", "30"}, Defaults());
  EXPECT_EQ(r.status, 124) << r.err;
  std::vector<nlohmann::json> hits = Hits();
  ASSERT_EQ(hits.size(), 1u);
  EXPECT_EQ(hits[0]["limit"], "timeout");
  EXPECT_EQ(hits[0]["timeout_ms"], 1000);
  EXPECT_EQ(hits[0]["origin"], "command line (--timeout)");
}

TEST_F(LimitHitsEveryIdentityTest, AWriteWithinTheLimitRecordsNothing) {
  RunResult r = Probe({"fill", "small", "1"}, {"--file-size", "2M"});
  EXPECT_EQ(r.status, 0) << r.out << r.err;
  EXPECT_EQ(r.err, "");
  EXPECT_TRUE(Hits().empty());
}

}  // namespace
}  // namespace ward::test
