// The strict session-id check for ids handed in from outside (`ward run --session-id`, which
// `ward serve` uses to know each exec's approval socket): exactly NewSessionId's shape.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <string>

#include "audit/session_log.h"

namespace ward::audit {
namespace {

TEST(SessionIdFormatTest, AcceptsWhatNewSessionIdMakes) {
  for (int i = 0; i < 200; ++i) {
    std::string id = NewSessionId();
    EXPECT_TRUE(IsNewSessionIdFormat(id)) << id;
    EXPECT_TRUE(IsValidSessionId(id)) << id;
  }
  // The stamp is the UTC time of the call (a TZ that differs from UTC must not show).
  setenv("TZ", "Asia/Kolkata", 1);
  for (int attempt = 0; attempt < 3; ++attempt) {  // the second may turn between the two reads
    time_t now = time(nullptr);
    std::string id = NewSessionId();
    struct tm tm {};
    gmtime_r(&now, &tm);
    char want[80];
    snprintf(want, sizeof want, "%04d%02d%02dT%02d%02d%02dZ", tm.tm_year + 1900, tm.tm_mon + 1,
             tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec);
    if (time(nullptr) != now) continue;
    EXPECT_EQ(id.substr(0, 16), want);
    break;
  }
  unsetenv("TZ");
  EXPECT_TRUE(IsNewSessionIdFormat("20261130T162233Z-3f9a1c2e"));
  EXPECT_TRUE(IsNewSessionIdFormat("19700101T000000Z-00000000"));
}

TEST(SessionIdFormatTest, RefusesEverythingElse) {
  for (const char* bad : {
           "",
           "20261130T162233Z-3f9a1c2",      // 7 hex digits
           "20261130T162233Z-3f9a1c2e0",    // 9
           "20261130T162233Z-3F9A1C2E",     // upper-case hex
           "20261130T162233Z-3f9a1c2g",     // not hex
           "20261130t162233Z-3f9a1c2e",     // lower-case T
           "20261130T162233z-3f9a1c2e",     // lower-case Z
           "20261130T162233Z_3f9a1c2e",     // wrong separator
           "2026113XT162233Z-3f9a1c2e",     // a letter among the digits
           "20261130T16223Z-3f9a1c2ee",     // shifted
           "../../../../etc/passwd-xxxxx",  // a path
           "20261130T162233Z-3f9a1c2e/",    // trailing slash
           "20261130T162233Z-3f9a1c/e",     // slash inside
           " 20261130T162233Z-3f9a1c2e",    // leading space
           "20261130T162233Z-3f9a1c2e\n",   // trailing newline
           "my-session",                    // IsValidSessionId accepts this one
       }) {
    EXPECT_FALSE(IsNewSessionIdFormat(bad)) << bad;
  }
  std::string nul = "20261130T162233Z-3f9a1c2e";
  nul[5] = '\0';
  EXPECT_FALSE(IsNewSessionIdFormat(nul));
}

}  // namespace
}  // namespace ward::audit
