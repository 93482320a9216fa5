// config.toml: the user's retention policy for the audit trail, parsed strictly.
#include <gtest/gtest.h>

#include "policy/user_config.h"

namespace ward::policy {
namespace {

const std::string kPath = "/home/u/.config/ward/config.toml";

TEST(UserConfigTest, AnEmptyFileKeepsTheDefaults) {
  Result<UserConfig> c = ParseUserConfig("", kPath);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->audit.keep_days, 30u);
  EXPECT_EQ(c->audit.keep_sessions, 10000u);
}

TEST(UserConfigTest, AuditKeysSetTheRetention) {
  Result<UserConfig> c = ParseUserConfig("[audit]\nkeep_days = 7\nkeep_sessions = 0\n", kPath);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->audit.keep_days, 7u);
  EXPECT_EQ(c->audit.keep_sessions, 0u);
}

TEST(UserConfigTest, MistakesNameTheFileLineAndKey) {
  EXPECT_EQ(ParseUserConfig("[audit]\nkeep_days = -1\n", kPath).status().ToString(),
            kPath +
                ":2: audit.keep_days: expected a whole number >= 0 (0 turns this bound off)");
  EXPECT_EQ(ParseUserConfig("[audit]\nkeep_days = \"30d\"\n", kPath).status().ToString(),
            kPath +
                ":2: audit.keep_days: expected a whole number >= 0 (0 turns this bound off)");
  EXPECT_EQ(ParseUserConfig("\n[audit]\nkeep_session = 5\n", kPath).status().ToString(),
            kPath +
                ":3: audit.keep_session: unknown key (did you mean 'keep_sessions'?) (known: "
                "keep_days, keep_sessions)");
  EXPECT_EQ(ParseUserConfig("[audti]\n", kPath).status().ToString(),
            kPath +
                ":1: audti: unknown key (did you mean 'audit'?) (known: audit, oci)");
  EXPECT_EQ(ParseUserConfig("audit = 3\n", kPath).status().ToString(),
            kPath + ":1: audit: expected a table ([audit])");
  Result<UserConfig> bad = ParseUserConfig("[audit\n", kPath);
  EXPECT_EQ(bad.status().code(), Code::kInvalidArgument);
  EXPECT_EQ(bad.status().ToString().find(kPath + ":1: invalid TOML: "),
            0u)
      << bad.status().ToString();
}

// The node's [oci] defaults for `ward oci`: what a container that says nothing gets.
TEST(UserConfigTest, OciKeysSetTheNodesDefaults) {
  Result<UserConfig> none = ParseUserConfig("", kPath);
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(none->oci.profile, "default");
  EXPECT_EQ(none->oci.approver, "");
  Result<UserConfig> c = ParseUserConfig(
      "[oci]\nprofile = \"agent\"\naudit_dir = \"/var/log/ward\"\n"
      "credentials_dir = \"/etc/ward/credentials\"\napprover = \"https://approve.example.org/\"\n"
      "upstream_ca = [\"/etc/ward/corp-ca.pem\"]\n",
      kPath);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->oci.profile, "agent");
  EXPECT_EQ(c->oci.audit_dir, "/var/log/ward");
  EXPECT_EQ(c->oci.credentials_dir, "/etc/ward/credentials");
  EXPECT_EQ(c->oci.approver, "https://approve.example.org/");
  EXPECT_EQ(c->oci.upstream_ca, std::vector<std::string>{"/etc/ward/corp-ca.pem"});
  EXPECT_EQ(ParseUserConfig("[oci]\nupstream_ca = \"/ca.pem\"\n", kPath).status().ToString(),
            kPath + ":2: oci.upstream_ca: expected an array of CA files (absolute paths)");
  EXPECT_EQ(ParseUserConfig("[oci]\nupstream_ca = [\"ca.pem\"]\n", kPath).status().ToString(),
            kPath + ":2: oci.upstream_ca: expected an absolute path");
  EXPECT_EQ(ParseUserConfig("[oci]\naudit_dir = \"logs\"\n", kPath).status().ToString(),
            kPath + ":2: oci.audit_dir: expected an absolute path");
  EXPECT_EQ(ParseUserConfig("[oci]\napprover = \"terminal\"\n", kPath).status().ToString(),
            kPath + ":2: oci.approver: expected a webhook URL (https://...): a node has no terminal");
  EXPECT_EQ(ParseUserConfig("[oci]\nprofiel = \"x\"\n", kPath).status().ToString(),
            kPath + ":2: oci.profiel: unknown key (did you mean 'profile'?) (known: profile, "
                    "audit_dir, credentials_dir, approver, upstream_ca)");
}

}  // namespace
}  // namespace ward::policy
