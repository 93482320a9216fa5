// Verification of a session log: the hash chain, the sequence, the head beside the log.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace ward::audit {

struct VerifyReport {
  enum class State {
    kIntact,        // chain, seq and head hold, and the last record is session.end
    kUnterminated,  // all of that holds but there is no session.end (the writer died)
    kTampered,      // a record changed, removed, inserted, reordered or cut; or a bad head
    kMissing,       // no log
  };
  State state = State::kMissing;
  int64_t records = 0;     // complete records that verified
  int64_t bad_seq = -1;    // the first bad seq when tampered (-1: not about one record)
  bool torn_tail = false;  // an incomplete last line the head does not cover (writer died
                           // mid-write); reported, not counted, not tampering
  int64_t head_seq = -1;   // what the head file says
  std::string detail;      // one line for humans
};

std::string_view StateName(VerifyReport::State state);  // "intact", "unterminated", ...

// Reads <session_dir>/head first, then <session_dir>/events.jsonl, so that a log being
// written concurrently verifies as unterminated rather than tampered.
VerifyReport VerifySession(const std::string& session_dir);

}  // namespace ward::audit
