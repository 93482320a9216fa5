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
  // The length of the longest suffix of the input so far that begins some pattern: a match
  // that is not complete yet starts within these last bytes.
  size_t depth(State s) const { return depth_[s]; }
  bool matches(State s) const { return own_[s] >= 0 || dict_[s] >= 0; }
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
  std::vector<State> next_;     // states x classes
  std::vector<uint32_t> depth_;
  std::vector<int32_t> own_;    // the pattern that ends exactly here, or -1
  std::vector<int32_t> dict_;   // the nearest state on the failure chain with own_ >= 0, or -1
};

}  // namespace ward::net
