#include "audit/verify.h"

#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <thread>

#include "audit/record.h"
#include "audit/session_log.h"
#include "common/unique_fd.h"

namespace ward::audit {
namespace {

using State = VerifyReport::State;

bool IsHash(const nlohmann::json& j) {
  if (!j.is_string()) return false;
  const auto& s = j.get_ref<const std::string&>();
  if (s.size() != 64) return false;
  for (char c : s) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

// Reads a whole small file; nullopt when it cannot be opened. Caps the size.
std::optional<std::string> ReadSmallFile(const std::string& path, size_t cap) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
  if (!fd) return std::nullopt;
  std::string out;
  char buf[4096];
  for (;;) {
    ssize_t n = ::read(fd.get(), buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    out.append(buf, static_cast<size_t>(n));
    if (out.size() > cap) break;
  }
  return out;
}

// Streams lines out of a file without holding it all in memory.
class LineReader {
 public:
  explicit LineReader(int fd) : fd_(fd) {}
  // Next line without its '\n'. *complete is false for a final line with no newline, and
  // for a line longer than kMaxLineBytes (returned cut). Returns false at end of file.
  bool Next(std::string* line, bool* complete) {
    line->clear();
    for (;;) {
      size_t nl = buf_.find('\n', pos_);
      if (nl != std::string::npos) {
        line->assign(buf_, pos_, nl - pos_);
        pos_ = nl + 1;
        *complete = true;
        return true;
      }
      if (buf_.size() - pos_ > kMaxLineBytes) {
        line->assign(buf_, pos_, kMaxLineBytes);
        pos_ = buf_.size();
        *complete = false;
        too_long_ = true;
        return true;
      }
      buf_.erase(0, pos_);
      pos_ = 0;
      char chunk[65536];
      ssize_t n;
      do {
        n = ::read(fd_, chunk, sizeof chunk);
      } while (n < 0 && errno == EINTR);
      if (n <= 0) {
        if (n < 0) read_error_ = errno;
        if (buf_.empty()) return false;
        line->swap(buf_);
        buf_.clear();
        *complete = false;
        return true;
      }
      buf_.append(chunk, static_cast<size_t>(n));
    }
  }
  bool too_long() const { return too_long_; }
  int read_error() const { return read_error_; }

 private:
  int fd_;
  std::string buf_;
  size_t pos_ = 0;
  bool too_long_ = false;
  int read_error_ = 0;
};

VerifyReport Tampered(VerifyReport r, int64_t seq, std::string detail) {
  r.state = State::kTampered;
  r.bad_seq = seq;
  r.detail = std::move(detail);
  return r;
}

// Checks one complete line as record `expected_seq` chained onto `prev`. Returns an error
// description, or "" when the record is sound (then *hash and *type are set).
std::string CheckRecord(const std::string& line, int64_t expected_seq, const std::string& prev,
                        std::string* hash, std::string* type) {
  std::string at = "seq " + std::to_string(expected_seq) + ": ";
  if (!JsonDepthWithin(line, kMaxJsonDepth + 2)) return at + "record nested too deeply";
  nlohmann::json rec = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
  if (!rec.is_object()) return at + "not a JSON record (changed or cut)";
  if (rec.size() != 6 || !rec.contains("seq") || !rec.contains("ts") || !rec.contains("type") ||
      !rec.contains("data") || !rec.contains("prev") || !rec.contains("hash")) {
    return at + "record does not have exactly seq, ts, type, data, prev, hash";
  }
  const auto& seq = rec["seq"];
  if (!seq.is_number_integer()) return at + "seq is not an integer";
  if (seq.get<int64_t>() != expected_seq) {
    return at + "found seq " + std::to_string(seq.get<int64_t>()) +
           " (records removed, inserted or reordered)";
  }
  if (!rec["ts"].is_string() || !IsValidTimestamp(rec["ts"].get_ref<const std::string&>())) {
    return at + "bad timestamp";
  }
  if (!rec["type"].is_string() || rec["type"].get_ref<const std::string&>().empty()) {
    return at + "bad type";
  }
  if (!rec["data"].is_object()) return at + "data is not an object";
  if (!IsHash(rec["prev"]) || !IsHash(rec["hash"])) return at + "malformed prev or hash";
  // Byte-exact: any edit to the line, even one JSON would consider equivalent, shows.
  std::string canonical;
  try {
    canonical = CanonicalJson(rec);
  } catch (...) {
    return at + "cannot serialise record";
  }
  if (canonical != line) return at + "line is not in canonical form (edited)";
  std::string claimed = rec["hash"].get<std::string>();
  rec.erase("hash");
  if (Sha256Hex(CanonicalJson(rec)) != claimed) {
    return at + "hash does not match the record (record changed)";
  }
  if (rec["prev"].get_ref<const std::string&>() != prev) {
    return at +
           "prev does not link to the previous record (records removed, inserted or "
           "reordered)";
  }
  *hash = std::move(claimed);
  *type = rec["type"].get<std::string>();
  return "";
}

// The shape of a head file, without judging its values.
bool WellFormedHead(const std::string& text) {
  nlohmann::json head = nlohmann::json::parse(text, nullptr, false);
  return head.is_object() && head.size() == 2 && head.contains("seq") && head.contains("hash") &&
         text == CanonicalJson(head) + "\n";
}

}  // namespace

std::string_view StateName(VerifyReport::State state) {
  switch (state) {
    case State::kIntact:
      return "intact";
    case State::kUnterminated:
      return "unterminated";
    case State::kTampered:
      return "tampered";
    case State::kMissing:
      return "missing";
  }
  return "unknown";
}

VerifyReport VerifySession(const std::string& session_dir) {
  VerifyReport r;
  const std::string log_path = session_dir + "/" + std::string(kEventsFile);
  // Head before log: the writer updates the log first, so this order never sees a head
  // ahead of the log unless someone cut the log.
  const std::string head_path = session_dir + "/" + std::string(kHeadFile);
  std::optional<std::string> head_text = ReadSmallFile(head_path, 4096);
  // A live session rewrites its head in place: a read that raced with that write sees a mix
  // and is retried a few times before the head counts as malformed.
  for (int retry = 0; retry < 5 && head_text && !WellFormedHead(*head_text); ++retry) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    head_text = ReadSmallFile(head_path, 4096);
  }
  UniqueFd log_fd(::open(log_path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
  if (!log_fd) {
    r.state = State::kMissing;
    r.detail = "no log at " + log_path;
    return r;
  }
  if (!head_text) return Tampered(r, -1, "head file missing");
  nlohmann::json head = nlohmann::json::parse(*head_text, nullptr, false);
  if (!head.is_object() || head.size() != 2 || !head.contains("seq") ||
      !head["seq"].is_number_integer() || head["seq"].get<int64_t>() < -1 ||
      !IsHash(head["hash"]) || *head_text != CanonicalJson(head) + "\n") {
    return Tampered(r, -1, "head file malformed");
  }
  r.head_seq = head["seq"].get<int64_t>();
  const std::string head_hash = head["hash"].get<std::string>();
  if (r.head_seq == -1 && head_hash != kZeroHash) return Tampered(r, -1, "head file malformed");

  LineReader reader(log_fd.get());
  std::string line;
  bool complete = false;
  std::string prev(kZeroHash);
  std::string last_type;
  std::string torn;  // an incomplete last line
  while (reader.Next(&line, &complete)) {
    int64_t seq = r.records;
    if (!complete) {
      if (reader.too_long())
        return Tampered(r, seq, "seq " + std::to_string(seq) + ": line too long");
      torn = line;
      break;
    }
    std::string hash;
    std::string type;
    std::string problem = CheckRecord(line, seq, prev, &hash, &type);
    if (!problem.empty()) return Tampered(r, seq, problem);
    if (seq == r.head_seq && hash != head_hash) {
      return Tampered(r, seq, "seq " + std::to_string(seq) + ": head names a different record");
    }
    prev = std::move(hash);
    last_type = std::move(type);
    ++r.records;
  }
  if (reader.read_error() != 0) {
    r.state = State::kMissing;
    r.detail = "cannot read " + log_path;
    return r;
  }
  const int64_t last = r.records - 1;
  if (r.head_seq > last) {
    // The head saw records the log no longer has: records (or part of one) were cut off.
    std::string what = !torn.empty() ? "last line is incomplete (truncated)"
                                     : "records cut off the end of the log";
    return Tampered(r, last + 1,
                    "seq " + std::to_string(last + 1) + ": " + what + "; head names seq " +
                        std::to_string(r.head_seq));
  }
  r.torn_tail = !torn.empty();
  std::string notes;
  if (r.torn_tail) {
    notes += "; incomplete last line after seq " + std::to_string(last) +
             " ignored (the writer died mid-write)";
  }
  if (r.head_seq < last) {
    notes +=
        "; head lags at seq " + std::to_string(r.head_seq) + " (writer died before updating it)";
  }
  if (last_type == "session.end" && !r.torn_tail) {
    r.state = State::kIntact;
    r.detail = std::to_string(r.records) + " records, ends with session.end" + notes;
  } else {
    r.state = State::kUnterminated;
    r.detail = std::to_string(r.records) + " records, no session.end" + notes;
  }
  return r;
}

}  // namespace ward::audit
