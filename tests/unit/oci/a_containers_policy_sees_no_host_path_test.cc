// A container's policy: the profile and the annotations through the loader, then nothing of the
// host's file system (no path, no workspace, no HOME), and with the node's credentials_dir the
// credentials the container enables read their secrets from the file of their name there.
#include <gtest/gtest.h>

#include "oci/container_view.h"

namespace ward::oci {
namespace {

ContainerChoices Codex() {
  ContainerChoices c;
  c.flags.profile = "codex";
  c.flags.credentials = {"openai"};
  c.flags.allow_net = {"registry.example.org"};
  return c;
}

TEST(OciContainerPolicy, NoHostPathNoWorkspaceNoHome) {
  Result<policy::Policy> p = ContainerPolicy(Codex(), "");
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_TRUE(p->paths.empty());
  EXPECT_FALSE(p->workspace_access.has_value());
  EXPECT_EQ(p->home, "");
  // The rest of the profile and the annotations stay.
  EXPECT_FALSE(p->network.allow.empty());
  ASSERT_EQ(p->credentials.count("openai"), 1u);
  EXPECT_TRUE(p->credentials.at("openai").enabled);
  // Without a credentials directory, the profile's source.
  EXPECT_EQ(p->credentials.at("openai").from.kind, policy::CredentialSource::Kind::kEnv);
}

TEST(OciContainerPolicy, TheNodesCredentialsDirectoryHoldsTheSecrets) {
  Result<policy::Policy> p = ContainerPolicy(Codex(), "/etc/ward/credentials/");
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  const policy::Credential& c = p->credentials.at("openai");
  EXPECT_EQ(c.from.kind, policy::CredentialSource::Kind::kFile);
  EXPECT_EQ(c.from.value, "/etc/ward/credentials/openai");
  // A credential the container does not enable keeps its source (and stays off).
  for (const auto& [name, cred] : p->credentials) {
    if (name != "openai") {
      EXPECT_FALSE(cred.enabled) << name;
      EXPECT_NE(cred.from.value.rfind("/etc/ward/credentials", 0), 0u) << name;
    }
  }
}

TEST(OciContainerPolicy, AnAllowEverythingRuleIsStillRefused) {
  ContainerChoices c = Codex();
  c.flags.allow_net = {"*"};
  EXPECT_FALSE(ContainerPolicy(c, "").ok());
}

}  // namespace
}  // namespace ward::oci
