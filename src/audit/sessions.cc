#include "audit/sessions.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <cstring>

#include "audit/record.h"
#include "audit/session_log.h"
#include "common/unique_fd.h"

namespace ward::audit {
namespace {

std::string JoinCommand(const nlohmann::json& cmd) {
  if (cmd.is_string()) return cmd.get<std::string>();
  if (!cmd.is_array()) return "";
  std::string out;
  for (const auto& arg : cmd) {
    if (!out.empty()) out += ' ';
    std::string a = arg.is_string() ? arg.get<std::string>() : CanonicalJson(arg);
    bool plain = !a.empty() && a.find_first_of(" \t\n'\"\\$`") == std::string::npos;
    out += plain ? a : CanonicalJson(a);
  }
  return out;
}

void Absorb(SessionSummary& s, const nlohmann::json& rec) {
  if (!rec.contains("type") || !rec["type"].is_string()) return;
  const std::string& type = rec["type"].get_ref<const std::string&>();
  const nlohmann::json empty = nlohmann::json::object();
  const nlohmann::json& data =
      rec.contains("data") && rec["data"].is_object() ? rec["data"] : empty;
  ++s.records;
  if (s.records == 1 && rec.contains("ts") && rec["ts"].is_string()) s.start = rec["ts"];
  if (type == "session.start" && data.contains("command")) s.command = JoinCommand(data["command"]);
  if (type == "setup.error") s.setup_error = true;
  if (type == "session.end") {
    s.ended = true;
    if (data.contains("exit_code") && data["exit_code"].is_number_integer()) {
      s.exit_code = data["exit_code"].get<int64_t>();
    }
    if (data.contains("signal") && !data["signal"].is_null()) {
      s.signal = data["signal"].is_string() ? data["signal"].get<std::string>()
                                            : CanonicalJson(data["signal"]);
    }
  }
  if (IsDenialType(type)) ++s.denials;
}

// Reads a session log line by line (lenient: unparsable lines are skipped).
void ReadSummary(SessionSummary& s, bool brief) {
  std::string path = s.dir + "/" + std::string(kEventsFile);
  FILE* f = std::fopen(path.c_str(), "re");
  if (f == nullptr) return;
  std::string line;
  char buf[65536];
  bool overlong = false;
  while (std::fgets(buf, sizeof buf, f) != nullptr) {
    size_t n = std::strlen(buf);
    bool end = n > 0 && buf[n - 1] == '\n';
    if (!overlong) line.append(buf, end ? n - 1 : n);
    if (line.size() > kMaxLineBytes) overlong = true;
    if (!end) continue;
    if (!overlong) {
      if (auto rec = ParseRecordLine(line)) Absorb(s, *rec);
    }
    line.clear();
    overlong = false;
    if (brief && s.records > 0) break;
  }
  std::fclose(f);
}

std::string MtimeStamp(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return "";
  auto tp = std::chrono::system_clock::time_point(
      std::chrono::duration_cast<std::chrono::system_clock::duration>(
          std::chrono::seconds(st.st_mtim.tv_sec) + std::chrono::nanoseconds(st.st_mtim.tv_nsec)));
  return FormatTimestamp(tp);
}

// The length of the UTF-8 sequence at s[i] (its code point in *cp), or 0 when invalid.
size_t Utf8Length(std::string_view s, size_t i, uint32_t* cp) {
  auto b = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  unsigned char c = b(i);
  size_t len;
  uint32_t v;
  if (c < 0x80) {
    *cp = c;
    return 1;
  } else if ((c & 0xE0) == 0xC0) {
    len = 2;
    v = c & 0x1F;
  } else if ((c & 0xF0) == 0xE0) {
    len = 3;
    v = c & 0x0F;
  } else if ((c & 0xF8) == 0xF0) {
    len = 4;
    v = c & 0x07;
  } else {
    return 0;
  }
  if (i + len > s.size()) return 0;
  for (size_t k = 1; k < len; ++k) {
    if ((b(i + k) & 0xC0) != 0x80) return 0;
    v = (v << 6) | (b(i + k) & 0x3F);
  }
  static constexpr std::array<uint32_t, 5> kMin = {0, 0, 0x80, 0x800, 0x10000};
  if (v < kMin[len] || v > 0x10FFFF || (v >= 0xD800 && v <= 0xDFFF)) return 0;
  *cp = v;
  return len;
}

bool IsDangerousCodePoint(uint32_t cp) {
  return cp < 0x20 || cp == 0x7F || (cp >= 0x80 && cp <= 0x9F) || cp == 0x200E || cp == 0x200F ||
         (cp >= 0x202A && cp <= 0x202E) || (cp >= 0x2066 && cp <= 0x2069);
}

std::string RenderValue(const nlohmann::json& v) {
  if (v.is_string()) {
    const std::string& s = v.get_ref<const std::string&>();
    bool plain = !s.empty() && s.find_first_of(" \t\r\n\"=") == std::string::npos;
    return plain ? s : CanonicalJson(v);
  }
  return CanonicalJson(v);
}

}  // namespace

std::vector<SessionSummary> ListSessions(const std::string& state_dir, bool brief) {
  std::vector<SessionSummary> out;
  std::string root = SessionsDir(state_dir);
  DIR* d = ::opendir(root.c_str());
  if (d == nullptr) return out;
  while (struct dirent* e = ::readdir(d)) {
    std::string name = e->d_name;
    if (!IsValidSessionId(name)) continue;
    SessionSummary s;
    s.id = name;
    s.dir = root + "/" + name;
    struct stat st {};
    if (::lstat(s.dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) continue;
    ReadSummary(s, brief);
    if (s.start.empty()) s.start = MtimeStamp(s.dir + "/" + std::string(kEventsFile));
    if (s.start.empty()) s.start = MtimeStamp(s.dir);
    out.push_back(std::move(s));
  }
  ::closedir(d);
  std::sort(out.begin(), out.end(), [](const SessionSummary& a, const SessionSummary& b) {
    if (a.start != b.start) return a.start > b.start;
    return a.id > b.id;
  });
  return out;
}

Result<SessionSummary> ResolveSession(const std::string& state_dir, std::string_view name) {
  if (name.empty()) return InvalidArgument("empty session name");
  std::vector<SessionSummary> all = ListSessions(state_dir, /*brief=*/true);
  if (all.empty()) return NotFound("no audit sessions in " + SessionsDir(state_dir));
  if (name == "last") return all.front();
  std::vector<const SessionSummary*> matches;
  for (const auto& s : all) {
    if (s.id == name) return s;
    if (s.id.starts_with(name)) matches.push_back(&s);
  }
  std::string shown = SanitizeForTerminal(name);
  if (matches.empty()) return NotFound("no session matches '" + shown + "'");
  if (matches.size() > 1) {
    std::string msg = "'" + shown + "' is ambiguous: it matches";
    for (size_t i = 0; i < matches.size() && i < 5; ++i) msg += " " + matches[i]->id;
    if (matches.size() > 5) msg += " and " + std::to_string(matches.size() - 5) + " more";
    return InvalidArgument(msg);
  }
  return *matches.front();
}

LogTail::LogTail(std::string session_dir) : dir_(std::move(session_dir)) {}

Result<std::vector<std::string>> LogTail::Poll() {
  std::vector<std::string> lines;
  std::string path = dir_ + "/" + std::string(kEventsFile);
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
  if (!fd) {
    if (errno == ENOENT) return lines;
    return Errno("cannot open " + path);
  }
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) return Errno("cannot stat " + path);
  if (st.st_size < offset_) {
    return Status(Code::kFailedPrecondition, path + " shrank (truncated while being read)");
  }
  char buf[65536];
  for (;;) {
    ssize_t n = ::pread(fd.get(), buf, sizeof buf, offset_);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Errno("cannot read " + path);
    if (n == 0) break;
    offset_ += n;
    partial_.append(buf, static_cast<size_t>(n));
    size_t start = 0;
    for (size_t nl; (nl = partial_.find('\n', start)) != std::string::npos; start = nl + 1) {
      lines.emplace_back(partial_, start, nl - start);
    }
    partial_.erase(0, start);
    if (partial_.size() > kMaxLineBytes) partial_.clear();  // never a line of ours
  }
  return lines;
}

bool TypeMatches(std::string_view filter, std::string_view type) {
  if (filter.empty() || filter == type) return true;
  return filter.back() == '.' && type.starts_with(filter);
}

std::string SanitizeForTerminal(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  char esc[16];
  for (size_t i = 0; i < s.size();) {
    uint32_t cp = 0;
    size_t len = Utf8Length(s, i, &cp);
    if (len == 0) {
      std::snprintf(esc, sizeof esc, "\\x%02x", static_cast<unsigned char>(s[i]));
      out += esc;
      ++i;
      continue;
    }
    if (IsDangerousCodePoint(cp)) {
      if (cp < 0x80) {
        std::snprintf(esc, sizeof esc, "\\x%02x", cp);
      } else {
        std::snprintf(esc, sizeof esc, "\\u%04x", cp);
      }
      out += esc;
    } else {
      out.append(s, i, len);
    }
    i += len;
  }
  return out;
}

std::string SummarizeData(const nlohmann::json& data, size_t max_width) {
  std::string text;
  if (!data.is_object()) {
    text = RenderValue(data);
  } else {
    static constexpr std::array<std::string_view, 14> kFirst = {
        "command", "host",  "port",      "name",   "path",  "rule",   "reason",
        "stage",   "errno", "exit_code", "signal", "limit", "access", "id"};
    std::vector<std::string> keys;
    for (std::string_view k : kFirst) {
      if (data.contains(k)) keys.emplace_back(k);
    }
    for (auto it = data.begin(); it != data.end(); ++it) {
      if (std::find(kFirst.begin(), kFirst.end(), it.key()) == kFirst.end()) {
        keys.push_back(it.key());
      }
    }
    for (const auto& k : keys) {
      if (!text.empty()) text += ' ';
      text += k;
      text += '=';
      text += RenderValue(data[k]);
      if (text.size() > max_width * 4) break;  // enough to fill the line
    }
  }
  text = SanitizeForTerminal(text);
  // Cut at max_width code points, never inside a UTF-8 sequence.
  size_t chars = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    if ((static_cast<unsigned char>(text[i]) & 0xC0) == 0x80) continue;
    if (chars == max_width) {
      // Leave room for the ellipsis.
      size_t cut = i;
      do {
        --cut;
      } while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80);
      return text.substr(0, cut) + "…";
    }
    ++chars;
  }
  return text;
}

}  // namespace ward::audit
