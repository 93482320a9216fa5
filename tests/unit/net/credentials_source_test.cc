// Secret sources on the host: env, file (ownership and mode checked), command (exit status,
// timeout, stdin closed, output bounded); errors are clear and never carry the secret.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <map>
#include <string>

#include "credentials_test_util.h"
#include "net/broker/source.h"

namespace ward::net {
namespace {

using policy::CredentialSource;
using testing::TempDir;

CredentialSource Env(const std::string& v) { return {CredentialSource::Kind::kEnv, v}; }
CredentialSource File(const std::string& v) { return {CredentialSource::Kind::kFile, v}; }
CredentialSource Command(const std::string& v) { return {CredentialSource::Kind::kCommand, v}; }

SecretSourceOptions WithEnv(std::map<std::string, std::string> env) {
  SecretSourceOptions o;
  o.getenv = [env](const std::string& k) -> std::optional<std::string> {
    auto it = env.find(k);
    if (it == env.end()) return std::nullopt;
    return it->second;
  };
  return o;
}

TEST(SecretSourceTest, EnvironmentVariable) {
  auto o = WithEnv({{"TOKEN", "  ghp_secretvalue\n"}, {"EMPTY", ""}});
  auto v = FetchSecret(Env("TOKEN"), o);
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(*v, "ghp_secretvalue");
  auto missing = FetchSecret(Env("NOPE"), o);
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), Code::kNotFound);
  EXPECT_NE(missing.status().message().find("$NOPE is not set"), std::string::npos);
  EXPECT_FALSE(FetchSecret(Env("EMPTY"), o).ok());
  // The default reads the real environment.
  ::setenv("WARD_TEST_SECRET_SOURCE", "from-the-env", 1);
  v = FetchSecret(Env("WARD_TEST_SECRET_SOURCE"));
  ::unsetenv("WARD_TEST_SECRET_SOURCE");
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(*v, "from-the-env");
}

TEST(SecretSourceTest, FileIsTrimmedAndChecked) {
  TempDir dir;
  auto v = FetchSecret(File(dir.Write("token", "file-secret-123\n")));
  ASSERT_TRUE(v.ok()) << v.status().ToString();
  EXPECT_EQ(*v, "file-secret-123");

  auto missing = FetchSecret(File(dir.path() + "/nope"));
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().ToString().find("No such file"), std::string::npos);

  for (int mode : {0620, 0602, 0666}) {
    auto r = FetchSecret(File(dir.Write("loose", "secret-in-a-loose-file", mode)));
    ASSERT_FALSE(r.ok()) << std::oct << mode;
    EXPECT_EQ(r.status().code(), Code::kPermissionDenied);
    EXPECT_NE(r.status().message().find("writable by group or others"), std::string::npos);
    EXPECT_EQ(r.status().message().find("secret-in-a-loose-file"), std::string::npos);
  }
  EXPECT_TRUE(FetchSecret(File(dir.Write("readable", "ok-value", 0644))).ok());

  auto two_lines = FetchSecret(File(dir.Write("two", "line-one\nline-two\n")));
  ASSERT_FALSE(two_lines.ok());
  EXPECT_NE(two_lines.status().message().find("more than one line"), std::string::npos);
  EXPECT_EQ(two_lines.status().message().find("line-one"), std::string::npos);
  EXPECT_FALSE(FetchSecret(File(dir.Write("blank", " \n\t\n"))).ok());
  EXPECT_FALSE(FetchSecret(File(dir.Write("nul", std::string("a\0b", 3)))).ok());
  EXPECT_FALSE(FetchSecret(File(dir.path())).ok());  // a directory
  EXPECT_FALSE(FetchSecret(File("relative/path")).ok());
  SecretSourceOptions small;
  small.max_bytes = 16;
  EXPECT_FALSE(FetchSecret(File(dir.Write("big", std::string(17, 'x'))), small).ok());
  // Symlinks are followed, and the target is what gets checked.
  std::string link = dir.path() + "/link";
  ASSERT_EQ(::symlink((dir.path() + "/token").c_str(), link.c_str()), 0);
  EXPECT_TRUE(FetchSecret(File(link)).ok());
}

TEST(SecretSourceTest, FileOwnedBySomeoneElseIsRefused) {
  if (::getuid() != 0) GTEST_SKIP() << "needs root to give a file to another user";
  TempDir dir;
  std::string path = dir.Write("foreign", "foreign-secret");
  ASSERT_EQ(::chown(path.c_str(), 65534, 65534), 0);
  auto r = FetchSecret(File(path));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Code::kPermissionDenied);
  EXPECT_NE(r.status().message().find("owned by uid 65534"), std::string::npos);
}

TEST(SecretSourceTest, CommandOutputIsTheSecret) {
  auto v = FetchSecret(Command("printf '  cmd-secret-456  \\n'"));
  ASSERT_TRUE(v.ok()) << v.status().ToString();
  EXPECT_EQ(*v, "cmd-secret-456");
  // stdin is closed (/dev/null): a command that would prompt reads EOF instead of hanging.
  v = FetchSecret(Command("read line || echo stdin-was-empty"));
  ASSERT_TRUE(v.ok()) << v.status().ToString();
  EXPECT_EQ(*v, "stdin-was-empty");
}

TEST(SecretSourceTest, FailingCommandIsAClearError) {
  auto r = FetchSecret(Command("echo not logged in >&2; printf 'partial-%s' output; exit 3"));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("exited with status 3"), std::string::npos)
      << r.status().message();
  EXPECT_NE(r.status().message().find("not logged in"), std::string::npos);
  EXPECT_EQ(r.status().message().find("partial-output"), std::string::npos);

  r = FetchSecret(Command("kill -9 $$"));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("signal 9"), std::string::npos) << r.status().message();

  r = FetchSecret(Command("true"));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("empty"), std::string::npos);

  r = FetchSecret(Command("/nonexistent/tool --token"));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("status 127"), std::string::npos);
}

TEST(SecretSourceTest, CommandTimeoutKillsTheWholeGroup) {
  TempDir dir;
  std::string marker = dir.path() + "/still-running";
  SecretSourceOptions o;
  o.command_timeout = std::chrono::milliseconds(300);
  auto start = std::chrono::steady_clock::now();
  // A background child keeps stdout open; both must go at the deadline.
  auto r = FetchSecret(Command("(sleep 1; touch " + marker + ") & sleep 30"), o);
  auto took = std::chrono::steady_clock::now() - start;
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Code::kTimeout);
  EXPECT_NE(r.status().message().find("no answer within 300 ms"), std::string::npos);
  EXPECT_LT(took, std::chrono::seconds(5));
  ::usleep(1500 * 1000);
  EXPECT_NE(::access(marker.c_str(), F_OK), 0) << "the background child survived the timeout";
}

TEST(SecretSourceTest, CommandOutputIsBounded) {
  SecretSourceOptions o;
  o.max_bytes = 1024;
  auto r = FetchSecret(Command("yes x | head -c 100000"), o);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("more than 1024 bytes"), std::string::npos);
}

TEST(SecretSourceTest, CleanSecretRejectsWhatCannotGoInAHeader) {
  EXPECT_EQ(*CleanSecret("\r\n abc \r\n"), "abc");
  EXPECT_FALSE(CleanSecret("a\r\nInjected: 1").ok());
  EXPECT_FALSE(CleanSecret(std::string("a\x01b")).ok());
  EXPECT_FALSE(CleanSecret("a\x7f").ok());
  EXPECT_FALSE(CleanSecret("").ok());
  EXPECT_TRUE(CleanSecret("with inner space").ok());
}

}  // namespace
}  // namespace ward::net
