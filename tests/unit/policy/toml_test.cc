// policy/toml.h: toml++ as policy includes it, for text the sandbox writes.
#include "policy/toml.h"

#include <gtest/gtest.h>

#include <string>
#include <string_view>

namespace ward::policy {
namespace {

// Characters toml++'s tables do not list reached their "unreachable" default (found by
// tests/fuzz): after a value, at a line's start, and in a multi-line string after a line-ending
// backslash. Each is now a parse error or text, never undefined behaviour or an abort.
TEST(Toml, CharactersItsTablesDoNotListAreNoneOfTheirs) {
  for (const char* text :
       {"a = \"2G\"\xd0\xaa\n", "\xd0\xaa = 1\n", "a = 1\xe2\xb4\x80\n", "a = 1\xef\xbc\x80\n"}) {
    EXPECT_THROW((void)toml::parse(std::string_view(text)), toml::parse_error) << text;
  }
  for (const char* text :
       {"a = \"\"\"x\\\n\xd0\xaa\"\"\"\n", "a = \"\"\"x\\  \n  \xd0\xaa\"\"\"\n"}) {
    toml::table t = toml::parse(std::string_view(text));
    EXPECT_EQ(t["a"].value_or(std::string()), "x\xd0\xaa") << text;
  }
}

// Positive control: the tables still know their own characters, by the table and by the
// branch that reached "unreachable" before; and a value followed by a comment parses.
TEST(Toml, TheTablesKeepTheirOwnCharacters) {
  EXPECT_TRUE(toml::impl::is_non_ascii_horizontal_whitespace(U'\u3000'));
  EXPECT_TRUE(toml::impl::is_non_ascii_horizontal_whitespace(U'\u2003'));
  EXPECT_TRUE(toml::impl::is_non_ascii_horizontal_whitespace(U'\u1680'));
  EXPECT_FALSE(toml::impl::is_non_ascii_horizontal_whitespace(U'\u042a'));
  toml::table t = toml::parse(std::string_view("a = \"2G\" # \xd0\xaa\n"));
  EXPECT_EQ(t["a"].value_or(std::string()), "2G");
}

}  // namespace
}  // namespace ward::policy
