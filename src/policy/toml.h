// toml++, as policy includes it. The text it parses is untrusted (the sandbox writes the
// workspace's .ward.toml). toml++ 3.3 states some of its expectations about the input as
// assertions: a table header whose key starts with a character no key starts with ("[/x]",
// "[\0x]") reaches one in parse_key, which has the error path for it right after. In a build
// without NDEBUG (Debug, ASan) that assertion would abort `ward run`; here it is what the
// release build makes of it, so the input gets toml++'s own parse error instead. (A release
// build with clang turns the same assertions into __builtin_assume: build ward with GCC, as the
// Makefile does, or with a toml++ whose parser checks that character.)
#pragma once

#ifndef NDEBUG
#define TOML_ASSERT(expr) static_assert(true)
#endif
#include <toml++/toml.h>
