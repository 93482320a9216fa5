// Small ASCII helpers shared by the net parsers. Pure.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace ward::net {

inline char AsciiLower(char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c + 32) : c; }
std::string AsciiLower(std::string_view s);
bool EqualsIgnoreCase(std::string_view a, std::string_view b);
bool StartsWithIgnoreCase(std::string_view s, std::string_view prefix);
// HTTP "token" characters (RFC 9110 tchar).
bool IsTokenChar(char c);
// Strips spaces and horizontal tabs at both ends.
std::string_view TrimOws(std::string_view s);

// Untrusted text made safe for an error message or a log line: at most max_len bytes,
// non-printable bytes as \xNN, then "..." when cut. Never contains quotes it did not escape.
std::string QuoteUntrusted(std::string_view s, size_t max_len = 64);

}  // namespace ward::net
