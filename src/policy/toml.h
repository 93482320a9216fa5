// toml++, as policy includes it. The text it parses is untrusted (the sandbox writes the
// workspace's .ward.toml), and toml++ 3.3 states some of its expectations about that text as
// assertions and "unreachable" points that the text can reach:
// - a table header whose key starts with a character no key starts with ("[/x]", "[\0x]")
//   reaches an assertion in parse_key, which has the error path for it right after. In a build
//   without NDEBUG (Debug, ASan) that assertion would abort `ward run`; here it is what the
//   release build makes of it, so the input gets toml++'s own parse error instead. (A release
//   build with clang turns the same assertions into __builtin_assume: build ward with GCC, as
//   the Makefile does, or with a toml++ whose parser checks that character.)
// - some characters after a value ("2G"Ъ: U+00A1-U+0499 and others) reach TOML_UNREACHABLE in
//   its whitespace table, which the compiler is told cannot happen: undefined behaviour. Here
//   an unreachable point that is reached ends ward with a message instead; the loader refuses
//   such characters where TOML allows none (outside strings and comments) before parsing, with
//   the line, so a file never gets that far in practice.
#pragma once

#ifndef NDEBUG
#define TOML_ASSERT(expr) static_assert(true)
#endif
#include <toml++/impl/preprocessor.h>

namespace ward::policy {
[[noreturn]] void TomlUnreachable();
}  // namespace ward::policy

#undef TOML_UNREACHABLE
#define TOML_UNREACHABLE ::ward::policy::TomlUnreachable()
#include <toml++/toml.h>
