// The supervisor's side of the credential broker in `ward run`: what happens before the clone
// touches no secret (the plan only waits for its late setup), a caller value of an `env:`
// source under another variable is withheld, and the late setup turns it into the phantom.
#include "supervisor/run_credentials.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <map>
#include <string>
#include <vector>

namespace ward::supervisor {
namespace {

using policy::Credential;
using policy::CredentialSource;

class CredentialsRunTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/ward-creds-unit.XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    bundle_ = dir_ + "/bundle.pem";
    std::ofstream(bundle_) << "# the host's roots\n";
    var_ = "WARD_UNIT_CREDS_" + std::to_string(getpid());
    setenv(var_.c_str(), secret_.c_str(), 1);
    Credential c;
    c.enabled = true;
    c.from = {CredentialSource::Kind::kEnv, var_};
    c.hosts = {"api.example.test"};
    c.inject = {policy::CredentialInject::Kind::kHeader, "Authorization", "Bearer {secret}"};
    c.env = "TOKEN_INSIDE";
    policy_.credentials["example"] = c;
    plan_.net.enabled = true;
    plan_.net.proxy_port = 3128;
    options_.system_bundle_path = bundle_;
  }
  void TearDown() override {
    unsetenv(var_.c_str());
    std::remove(bundle_.c_str());
    rmdir(dir_.c_str());
  }

  std::string dir_, bundle_, var_;
  const std::string secret_ = "sk-unit-theRealValue0123456789abcdefABCDEF";
  policy::Policy policy_;
  enforce::LaunchPlan plan_;
  RunCredentialsOptions options_;
};

TEST_F(CredentialsRunTest, PlanningWaitsForTheLateSetupWithAPlaceholderBundle) {
  ASSERT_TRUE(PlanRunCredentials(policy_, options_, &plan_).ok());
  EXPECT_TRUE(plan_.await_late_setup);
  ASSERT_GE(plan_.late_file_op, 0);
  const enforce::MountOp& op = plan_.mount.ops.at(plan_.late_file_op);
  EXPECT_EQ(op.kind, enforce::MountOp::Kind::kFile);
  EXPECT_EQ(op.target, bundle_);
  EXPECT_TRUE(op.content.empty());  // no CA exists before the clone
}

TEST_F(CredentialsRunTest, PlanningWithoutEgressIsRefused) {
  plan_.net.enabled = false;
  Status st = PlanRunCredentials(policy_, options_, &plan_);
  EXPECT_FALSE(st.ok());
  EXPECT_NE(st.ToString().find("egress"), std::string::npos) << st.ToString();
  EXPECT_FALSE(plan_.await_late_setup);
}

TEST_F(CredentialsRunTest, ACallerValueUnderAnotherNameIsWithheldThenBecomesThePhantom) {
  std::vector<std::string> env = {"PATH=/usr/bin", "GH_COPY=" + secret_,
                                  "BOTH=x:" + secret_ + ":" + secret_};
  WithholdCredentialValues(policy_, &env);
  for (const std::string& e : env) {
    EXPECT_EQ(e.find(secret_), std::string::npos) << e;
  }
  EXPECT_EQ(env[0], "PATH=/usr/bin");

  ASSERT_TRUE(PlanRunCredentials(policy_, options_, &plan_).ok());
  plan_.process.env = env;
  Result<net::CredentialSetup> setup = PrepareRunCredentials(policy_, plan_, options_);
  ASSERT_TRUE(setup.ok()) << setup.status().ToString();
  std::vector<std::string> rewritten = ApplyCredentialsToPlan(*setup, &plan_);
  const std::string phantom = setup->broker->credentials().at(0).phantom;
  std::map<std::string, std::string> got;
  for (const std::string& e : plan_.process.env) {
    EXPECT_EQ(e.find(secret_), std::string::npos) << e;
    EXPECT_EQ(e.find("\x1b"), std::string::npos) << "a marker was left: " << e;
    got[e.substr(0, e.find('='))] = e.substr(e.find('=') + 1);
  }
  EXPECT_EQ(got["GH_COPY"], phantom);
  EXPECT_EQ(got["BOTH"], "x:" + phantom + ":" + phantom);
  EXPECT_EQ(got["TOKEN_INSIDE"], phantom);
  EXPECT_EQ(got["PATH"], "/usr/bin");
  EXPECT_EQ(rewritten, (std::vector<std::string>{"GH_COPY", "BOTH"}));
  // The late file's content is the merged bundle: the host's roots and the session CA.
  const std::string& bundle = setup->ca_bundle;
  EXPECT_EQ(bundle.rfind("# the host's roots\n", 0), 0u);
  EXPECT_NE(bundle.find(setup->broker->ca_pem()), std::string::npos);
}

TEST_F(CredentialsRunTest, ValuesOfOtherSourcesAreNotTouched) {
  policy_.credentials["example"].from = {CredentialSource::Kind::kFile, dir_ + "/absent"};
  std::vector<std::string> env = {"GH_COPY=" + secret_};
  WithholdCredentialValues(policy_, &env);
  EXPECT_EQ(env[0], "GH_COPY=" + secret_);
}

}  // namespace
}  // namespace ward::supervisor
