// Redactor: secrets never survive, wherever they are; harmless values are kept.
#include "audit/redactor.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>

namespace ward::audit {
namespace {

TEST(RedactorTest, ScrubsSecretsInsideLongerStrings) {
  Redactor r;
  r.AddSecret("sk-live-1234567890");
  EXPECT_EQ(r.Scrub("Authorization: Bearer sk-live-1234567890"),
            "Authorization: Bearer [redacted]");
  EXPECT_EQ(r.Scrub("sk-live-1234567890sk-live-1234567890"), "[redacted]");
  EXPECT_EQ(r.Scrub("a sk-live-1234567890 b sk-live-1234567890 c"), "a [redacted] b [redacted] c");
  EXPECT_EQ(r.Scrub("sk-live-123456789"), "sk-live-123456789");  // a prefix is not the secret
  EXPECT_EQ(r.Scrub(""), "");
}

TEST(RedactorTest, OverlappingSecretsLeaveNoFragment) {
  Redactor r;
  r.AddSecret("abcdef");
  r.AddSecret("defghi");
  EXPECT_EQ(r.Scrub("xxabcdefghixx"), "xx[redacted]xx");
  r.AddSecret("cde");  // nested inside the first
  EXPECT_EQ(r.Scrub("abcdef cde"), "[redacted] [redacted]");
}

TEST(RedactorTest, EmptySecretIsIgnored) {
  Redactor r;
  r.AddSecret("");
  EXPECT_EQ(r.Scrub("anything"), "anything");
}

TEST(RedactorTest, ApplyWalksValuesKeysArraysAndNesting) {
  Redactor r;
  const std::string secret = "TOPSECRET-value";
  r.AddSecret(secret);
  nlohmann::json in = {
      {"plain", "hello"},
      {"n", 42},
      {"flag", true},
      {"list", {"x", "y" + secret, {{"k", secret}}}},
      {"obj", {{"deeper", {{"deepest", "pre-" + secret + "-post"}}}}},
      {"key-" + secret, 1},
  };
  nlohmann::json out = r.Apply(in);
  std::string dumped = out.dump();
  EXPECT_EQ(dumped.find(secret), std::string::npos) << dumped;
  EXPECT_EQ(out["plain"], "hello");
  EXPECT_EQ(out["n"], 42);
  EXPECT_EQ(out["flag"], true);
  EXPECT_EQ(out["list"][1], "y[redacted]");
  EXPECT_EQ(out["list"][2]["k"], "[redacted]");
  EXPECT_EQ(out["obj"]["deeper"]["deepest"], "pre-[redacted]-post");
  EXPECT_TRUE(out.contains("key-[redacted]"));
}

TEST(RedactorTest, KeysThatCollideAfterScrubbingAreAllKept) {
  Redactor r;
  r.AddSecret("AAAA");
  r.AddSecret("BBBB");
  nlohmann::json out = r.Apply({{"AAAA", 1}, {"BBBB", 2}});
  EXPECT_EQ(out.size(), 2u);
  EXPECT_EQ(out.dump().find("AAAA"), std::string::npos);
  EXPECT_EQ(out.dump().find("BBBB"), std::string::npos);
}

TEST(RedactorTest, EnvValuesOfSecretLookingNamesAreRedacted) {
  Redactor r;
  nlohmann::json in = {
      {"env",
       {{"GITHUB_TOKEN", "ghp_x"},
        {"AWS_SECRET_ACCESS_KEY", "aws"},
        {"OPENAI_API_KEY", "sk"},
        {"DB_PASSWORD", "pw"},
        {"PATH", "/usr/bin"},
        {"LANG", "C.UTF-8"},
        {"GIT_AUTHOR_NAME", "Ada"},
        {"HOME", "/home/u"},
        {"EMPTY_TOKEN", nullptr}}},
      {"nested", {{"env", {"NPM_TOKEN=npm_x", "TERM=xterm", "BROKEN"}}}},
      {"not_env", {{"GITHUB_TOKEN", "kept: this is not an environment"}}},
  };
  nlohmann::json out = r.Apply(in);
  EXPECT_EQ(out["env"]["GITHUB_TOKEN"], "[redacted]");
  EXPECT_EQ(out["env"]["AWS_SECRET_ACCESS_KEY"], "[redacted]");
  EXPECT_EQ(out["env"]["OPENAI_API_KEY"], "[redacted]");
  EXPECT_EQ(out["env"]["DB_PASSWORD"], "[redacted]");
  EXPECT_EQ(out["env"]["PATH"], "/usr/bin");
  EXPECT_EQ(out["env"]["LANG"], "C.UTF-8");
  EXPECT_EQ(out["env"]["GIT_AUTHOR_NAME"], "Ada");
  EXPECT_EQ(out["env"]["HOME"], "/home/u");
  EXPECT_TRUE(out["env"]["EMPTY_TOKEN"].is_null());  // "unset" is not a secret
  EXPECT_EQ(out["nested"]["env"][0], "NPM_TOKEN=[redacted]");
  EXPECT_EQ(out["nested"]["env"][1], "TERM=xterm");
  EXPECT_EQ(out["nested"]["env"][2], "BROKEN");
  EXPECT_EQ(out["not_env"]["GITHUB_TOKEN"], "kept: this is not an environment");
}

TEST(RedactorTest, NameLooksSecret) {
  for (const char* name :
       {"GITHUB_TOKEN", "gh_token", "ANTHROPIC_API_KEY", "AWS_SECRET_ACCESS_KEY", "PASSWORD",
        "MYSQL_PWD_PASS", "PGPASSWORD", "SSH_PASSPHRASE", "GOOGLE_APPLICATION_CREDENTIALS",
        "HTTP_AUTH", "AUTHORIZATION", "AUTH_HEADER", "SESSION_COOKIE", "PRIVATE_KEY_PEM",
        "SENTRY_DSN", "DATABASE_URL", "FTP_PASS", "ADMIN_PW", "Npm_Config__Auth"}) {
    EXPECT_TRUE(Redactor::NameLooksSecret(name)) << name;
  }
  for (const char* name : {"PATH", "HOME", "LANG", "TERM", "USER", "PWD", "SHELL", "EDITOR",
                           "GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL", "LC_ALL", "TZ", ""}) {
    EXPECT_FALSE(Redactor::NameLooksSecret(name)) << name;
  }
}

TEST(RedactorTest, UrlPasswordsAreRemoved) {
  Redactor r;
  EXPECT_EQ(r.Scrub("https://user:hunter2@example.com/x"), "https://user:[redacted]@example.com/x");
  EXPECT_EQ(r.Scrub("proxy=http://a:b@h:8080 and postgres://u:p%40ss@db/x"),
            "proxy=http://a:[redacted]@h:8080 and postgres://u:[redacted]@db/x");
  EXPECT_EQ(r.Scrub("https://example.com:8443/path@x"), "https://example.com:8443/path@x");
  EXPECT_EQ(r.Scrub("https://user@example.com/"), "https://user@example.com/");
  EXPECT_EQ(r.Scrub("://"), "://");
  EXPECT_EQ(r.Scrub("x://:@"), "x://:@");
}

TEST(RedactorTest, TooDeepNestingIsCutNotRecursedForever) {
  Redactor r;
  nlohmann::json deep = "leaf";
  for (int i = 0; i < 10000; ++i) {
    nlohmann::json outer = nlohmann::json::array();  // moved, not copied: copies recurse
    outer.push_back(std::move(deep));
    deep = std::move(outer);
  }
  nlohmann::json out = r.Apply(std::move(deep));
  EXPECT_NE(out.dump().find("[too deep]"), std::string::npos);
  EXPECT_EQ(out.dump().find("leaf"), std::string::npos);
}

TEST(RedactorTest, BinaryValuesAreNotWrittenRaw) {
  Redactor r;
  nlohmann::json in = {{"b", nlohmann::json::binary({1, 2, 3})}};
  EXPECT_EQ(r.Apply(in)["b"], "[binary]");
}

TEST(RedactorTest, ConcurrentAddAndApply) {
  Redactor r;
  std::atomic<bool> stop{false};
  std::thread adder([&] {
    for (int i = 0; i < 2000; ++i) r.AddSecret("secret-number-" + std::to_string(i));
    stop = true;
  });
  int rounds = 0;
  while (!stop || rounds < 10) {
    nlohmann::json out = r.Apply({{"v", "secret-number-0 is here"}});
    ASSERT_TRUE(out["v"].is_string());
    ++rounds;
  }
  adder.join();
  EXPECT_EQ(r.Scrub("x secret-number-1999 y"), "x [redacted] y");
}

}  // namespace
}  // namespace ward::audit
