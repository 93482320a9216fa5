// The hunks of a unified diff between two texts, line by line (Myers' O(ND) algorithm, after
// the common prefix and suffix are set aside). Pure. Past `max_edits` differing lines the
// script is no longer minimal: what is left in between is shown removed and added as a whole.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace ward {

struct TextLines {
  std::vector<std::string_view> lines;  // without their '\n'
  bool missing_final_newline = false;   // the text does not end with '\n' (and is not empty)
};

// Splits `text` into lines (views into it: it must outlive the result).
TextLines SplitLines(std::string_view text);

// "@@ -a,b +c,d @@" hunks with `context` lines around each change; each line of a hunk is
// `render(line)` after its ' ', '-' or '+'. "" when the texts are equal.
std::string UnifiedHunks(const TextLines& a, const TextLines& b, int context,
                         std::string (*render)(std::string_view line), size_t max_edits = 1000);

}  // namespace ward
