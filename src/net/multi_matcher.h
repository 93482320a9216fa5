// Many byte strings found at once in a stream (Aho-Corasick, compiled into a full transition
// table over the byte classes the strings use): one table lookup per input byte, whatever the
// number of strings and whatever the input, so hostile text cannot make a scan slower than
// linear. Pure.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace ward::net {

class MultiMatcher {
 public:
  using State = uint32_t;
  static constexpr State kStart = 0;

  // Empty strings are ignored; equal strings match under the lowest index.
  explicit MultiMatcher(const std::vector<std::string>& patterns);

  State Step(State s, unsigned char c) const {
    return next_[static_cast<size_t>(s) * classes_ + class_of_[c]];
  }
  // Runs the automaton over data from state *s and returns the offset just past the first
  // byte that completes a match (*s is then that state), or data.size() (*s: the final state).
  // In the start state it skips ahead to the next pair of bytes that begins some pattern (a
  // bitmap lookup per byte with no dependency between bytes): ordinary text costs little.
  size_t Scan(State* s, std::string_view data) const {
    const State* next = next_.data();
    const uint16_t* cls = class_of_;
    const uint8_t* accepting = accepting_.data();
    const uint8_t* pairs = pair_starts_.data();
    const size_t classes = classes_;
    const unsigned char* p = reinterpret_cast<const unsigned char*>(data.data());
    const size_t n = data.size();
    State st = *s;
    size_t i = 0;
    while (i < n) {
      if (st == kStart && skip_) {
        auto starts = [&](size_t k) {
          const unsigned pair = (static_cast<unsigned>(p[k]) << 8) | p[k + 1];
          return (pairs[pair >> 3] >> (pair & 7)) & 1u;
        };
        // Eight positions at a time, without a branch per byte; then the exact one.
        while (i + 8 < n && (starts(i) | starts(i + 1) | starts(i + 2) | starts(i + 3) |
                             starts(i + 4) | starts(i + 5) | starts(i + 6) | starts(i + 7)) == 0) {
          i += 8;
        }
        while (i + 1 < n && !starts(i)) ++i;
      }
      st = next[static_cast<size_t>(st) * classes + cls[p[i]]];
      ++i;
      if (accepting[st]) {
        *s = st;
        return i;
      }
    }
    *s = st;
    return n;
  }

  // The length of the longest suffix of the input so far that begins some pattern: a match
  // that is not complete yet starts within these last bytes.
  size_t depth(State s) const { return depth_[s]; }
  bool matches(State s) const { return accepting_[s] != 0; }
  // Calls f(pattern index) for every pattern that ends at the input byte that led to s,
  // the longest first.
  template <typename F>
  void ForEachMatch(State s, F&& f) const {
    if (own_[s] >= 0) f(static_cast<size_t>(own_[s]));
    for (int32_t t = dict_[s]; t >= 0; t = dict_[t]) f(static_cast<size_t>(own_[t]));
  }

  size_t states() const { return depth_.size(); }
  size_t table_bytes() const { return next_.size() * sizeof(State); }

 private:
  uint16_t class_of_[256] = {};  // 0: a byte no pattern uses
  size_t classes_ = 1;
  std::vector<State> next_;  // states x classes
  std::vector<uint32_t> depth_;
  std::vector<int32_t> own_;        // the pattern that ends exactly here, or -1
  std::vector<int32_t> dict_;       // the nearest state on the failure chain with own_ >= 0, or -1
  std::vector<uint8_t> accepting_;  // some pattern ends here
  // Bit (a << 8 | b): some pattern begins with the bytes a, b. Only used (skip_) when every
  // pattern has two bytes at least.
  std::vector<uint8_t> pair_starts_ = std::vector<uint8_t>(8192);
  bool skip_ = true;
};

}  // namespace ward::net
