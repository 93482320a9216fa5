// Helpers shared by the audit unit tests.
#pragma once

#include <ftw.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "audit/session_log.h"

namespace ward::audit::testing {

// A fresh directory, removed with everything in it at the end of the test.
class TempDir {
 public:
  TempDir() {
    const char* base = std::getenv("TMPDIR");
    std::string tmpl =
        std::string(base != nullptr && base[0] == '/' ? base : "/tmp") + "/ward-audit-test-XXXXXX";
    char* p = ::mkdtemp(tmpl.data());
    EXPECT_NE(p, nullptr);
    path_ = tmpl;
  }
  ~TempDir() {
    ::nftw(
        path_.c_str(),
        [](const char* fpath, const struct stat*, int, struct FTW*) { return ::remove(fpath); }, 16,
        FTW_DEPTH | FTW_PHYS);
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

inline std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

inline void WriteFile(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
}

// Complete lines (without '\n'); a final unterminated fragment is dropped.
inline std::vector<std::string> ReadLines(const std::string& path) {
  std::string text = ReadFile(path);
  std::vector<std::string> lines;
  size_t start = 0;
  for (size_t nl; (nl = text.find('\n', start)) != std::string::npos; start = nl + 1) {
    lines.push_back(text.substr(start, nl - start));
  }
  return lines;
}

inline void WriteLines(const std::string& path, const std::vector<std::string>& lines) {
  std::string text;
  for (const auto& l : lines) text += l + "\n";
  WriteFile(path, text);
}

inline std::string EventsPath(const std::string& dir) { return dir + "/events.jsonl"; }
inline std::string HeadPath(const std::string& dir) { return dir + "/head"; }

// Writes a session through SessionLog: session.start, `events` net.deny records, and
// session.end when `terminated`. Returns the session directory.
inline std::string WriteSession(const std::string& state_dir, const std::string& id, int events,
                                bool terminated) {
  SessionLog::Options opts;
  opts.state_dir = state_dir;
  opts.session_id = id;
  auto log = SessionLog::Create(opts);
  EXPECT_TRUE(log.ok()) << log.status().ToString();
  if (!log.ok()) return "";
  (*log)->Emit("session.start", {{"command", {"echo", "hello world"}}, {"cwd", "/w"}});
  for (int i = 0; i < events; ++i) {
    (*log)->Emit("net.deny", {{"host", "evil" + std::to_string(i) + ".example"}, {"port", 443}});
  }
  if (terminated) (*log)->Emit("session.end", {{"exit_code", 0}});
  EXPECT_TRUE((*log)->Close().ok());
  return (*log)->dir();
}

}  // namespace ward::audit::testing
