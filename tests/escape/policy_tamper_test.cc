// Threat class G, policy tampering / self-escalation (PT01, PT02, PT04, PT05, PT06, PT10).
#include <unistd.h>

#include "harness.h"

namespace ward::test {
namespace {

class PolicyTamper : public SandboxTest {};

TEST_F(PolicyTamper, PT01_AgentSettingsAreReadOnly) {
  MakeDirs(ws_ + "/.claude");
  WriteFile(ws_ + "/.claude/settings.json", "{}");
  EXPECT_EQ(Probe({"write", ws_ + "/.claude/settings.json", "{\"sandbox\":false}"}).out,
            "err EROFS open\n");
  EXPECT_EQ(ReadFile(ws_ + "/.claude/settings.json"), "{}");
  EXPECT_EQ(Probe({"write", ws_ + "/.ward.toml", "[filesystem]\nwrite=[\"/\"]\n"}).out,
            "err EROFS open\n");
}

TEST_F(PolicyTamper, PT02_MalformedWorkspaceConfigFailsClosed) {
  WriteFile(ws_ + "/.ward.toml", "[filesystem\nwrite = ");
  RunResult r = Probe({"exit", "0"});
  EXPECT_EQ(r.status, 125);
  EXPECT_NE(r.err.find(".ward.toml"), std::string::npos) << r.err;
  WriteFile(ws_ + "/.ward.toml", "[filesystem]\nwrite = [\"/etc\"]\n");  // widening
  r = Probe({"exit", "0"});
  EXPECT_EQ(r.status, 125);
  EXPECT_NE(r.err.find("narrow"), std::string::npos) << r.err;
  WriteFile(ws_ + "/.ward.toml", "[filesystem]\ndeny = [\"" + ws_ + "/private\"]\n");
  MakeDirs(ws_ + "/private");
  WriteFile(ws_ + "/private/x", "secret");
  r = Probe({"read", ws_ + "/private/x"});
  EXPECT_NE(r.status, 0) << r.out;  // narrowing applies
  EXPECT_EQ(Probe({"exit", "0"}).status, 0);
}

TEST_F(PolicyTamper, PT04_McpAndAgentSpecsCannotBePlanted) {
  EXPECT_EQ(Probe({"write", ws_ + "/.mcp.json", "{\"mcpServers\":{}}"}).out, "err EROFS open\n");
  EXPECT_EQ(Probe({"mkdir", ws_ + "/.codex"}).out, "err EROFS " + ws_ + "/.codex\n");
  EXPECT_FALSE(PathExists(ws_ + "/.mcp.json"));
}

TEST_F(PolicyTamper, PT05_NoFilterOrPolicyFilesInside) {
  RunResult r = Probe({"ls", "/"});
  ASSERT_EQ(r.status, 0);
  EXPECT_EQ(r.out.find("ward"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find(".ward-empty"), std::string::npos) << r.out;
}

TEST_F(PolicyTamper, PT06_InitBinaryCannotBeOverwritten) {
  RunResult r = Probe({"open-write", "/proc/1/exe"});
  EXPECT_EQ(r.status, 1) << r.out;
  EXPECT_TRUE(r.out == "err EACCES /proc/1/exe\n" || r.out == "err ETXTBSY /proc/1/exe\n" ||
              r.out == "err ENOENT /proc/1/exe\n")
      << r.out;
}

TEST_F(PolicyTamper, PT10_StaticBinaryWithEmptyEnvironmentIsConfined) {
  // The probe is static and ward gives it a clean environment: still every layer.
  RunResult r = Probe({"caps"});
  EXPECT_NE(r.out.find("Seccomp: 2"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("NoNewPrivs: 1"), std::string::npos);
  EXPECT_EQ(Probe({"read", home_ + "/.ssh/id_ed25519"}).out, "err ENOENT open\n");
}

}  // namespace
}  // namespace ward::test
