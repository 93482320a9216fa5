#include "net/multi_matcher.h"

#include <limits>

namespace ward::net {

namespace {
constexpr MultiMatcher::State kNone = std::numeric_limits<MultiMatcher::State>::max();
}  // namespace

MultiMatcher::MultiMatcher(const std::vector<std::string>& patterns) {
  // Byte classes: one per byte some pattern uses, one (0) for all the others.
  for (const std::string& p : patterns) {
    for (char c : p) {
      uint16_t& cls = class_of_[static_cast<unsigned char>(c)];
      if (cls == 0) cls = static_cast<uint16_t>(classes_++);
    }
  }
  auto add_state = [&](uint32_t depth) {
    next_.resize(next_.size() + classes_, kNone);
    depth_.push_back(depth);
    own_.push_back(-1);
    dict_.push_back(-1);
    return static_cast<State>(depth_.size() - 1);
  };
  add_state(0);

  // The trie, and the pairs of bytes patterns begin with.
  for (size_t i = 0; i < patterns.size(); ++i) {
    const std::string& p = patterns[i];
    if (p.empty()) continue;
    if (p.size() < 2) {
      skip_ = false;
    } else {
      const unsigned pair = (static_cast<unsigned>(static_cast<unsigned char>(p[0])) << 8) |
                            static_cast<unsigned char>(p[1]);
      pair_starts_[pair >> 3] = static_cast<uint8_t>(pair_starts_[pair >> 3] | (1u << (pair & 7)));
    }
    State s = kStart;
    for (char c : p) {
      size_t at = static_cast<size_t>(s) * classes_ + class_of_[static_cast<unsigned char>(c)];
      if (next_[at] == kNone) {
        State n = add_state(depth_[s] + 1);
        next_[at] = n;  // add_state may have moved next_: index again
      }
      s = next_[at];
    }
    if (own_[s] < 0) own_[s] = static_cast<int32_t>(i);
  }

  // Failure links, breadth first, folded into a complete transition table.
  std::vector<State> fail(depth_.size(), kStart);
  std::vector<State> queue;
  queue.reserve(depth_.size());
  for (size_t c = 0; c < classes_; ++c) {
    State& n = next_[c];
    if (n == kNone) {
      n = kStart;
    } else {
      fail[n] = kStart;
      queue.push_back(n);
    }
  }
  for (size_t head = 0; head < queue.size(); ++head) {
    const State s = queue[head];
    const State f = fail[s];
    dict_[s] = own_[f] >= 0 ? static_cast<int32_t>(f) : dict_[f];
    for (size_t c = 0; c < classes_; ++c) {
      State& n = next_[static_cast<size_t>(s) * classes_ + c];
      const State via_fail = next_[static_cast<size_t>(f) * classes_ + c];
      if (n == kNone) {
        n = via_fail;
      } else {
        fail[n] = via_fail;
        queue.push_back(n);
      }
    }
  }
  accepting_.resize(depth_.size());
  for (size_t s = 0; s < depth_.size(); ++s) accepting_[s] = own_[s] >= 0 || dict_[s] >= 0;
}

}  // namespace ward::net
