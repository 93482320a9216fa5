// policy/toml.h: toml++ as policy includes it, for text the sandbox writes.
#include "policy/toml.h"

#include <gtest/gtest.h>

#include <string>
#include <string_view>

namespace ward::policy {
namespace {

// Whatever text reaches toml++'s unreachable points ends ward with a message, not undefined
// behaviour (policy/toml.h); the loader's refusal of such text (workspace_file_test.cc) keeps
// files from getting there.
TEST(TomlDeathTest, TomlsUnreachablePointsStopWard) {
  EXPECT_DEATH((void)toml::parse(std::string_view("a = \"2G\"\xd0\xaa\n")),
               "toml\\+\\+\\) reached a point it takes for unreachable");
}

// Positive control: the same value followed by a comment parses.
TEST(Toml, TheSameValueWithACommentParses) {
  toml::table t = toml::parse(std::string_view("a = \"2G\" # \xd0\xaa\n"));
  EXPECT_EQ(t["a"].value_or(std::string()), "2G");
}

}  // namespace
}  // namespace ward::policy
