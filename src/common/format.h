// Sizes and durations for people to read in messages and explanations (not the profile syntax:
// policy/units.h parses that).
#pragma once

#include <cstdint>
#include <string>

namespace ward {

// Whole seconds in seconds ("N s"), anything else in milliseconds ("N ms").
std::string FormatMs(uint64_t ms);

// "1 byte", "1023 bytes", "1 KiB", "1.5 GiB": binary units, four significant digits.
std::string FormatSize(uint64_t bytes);

}  // namespace ward
