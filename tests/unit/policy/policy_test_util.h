// Shared fixtures for the policy unit tests: an in-memory FileReader and a caller context.
#pragma once

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "policy/loader.h"

namespace ward::policy::testing {

inline constexpr const char* kHome = "/home/u";
inline constexpr const char* kWorkspace = "/home/u/proj";
inline constexpr const char* kConfigDir = "/home/u/.config/ward";
inline constexpr const char* kUserProfiles = "/home/u/.config/ward/profiles/";

// Files by absolute path; everything else is NotFound. Reads are recorded.
class MemFs {
 public:
  void Add(const std::string& path, std::string text) { files_[path] = std::move(text); }
  void AddProfile(const std::string& name, std::string text) {
    Add(std::string(kUserProfiles) + name + ".toml", std::move(text));
  }
  void AddWorkspaceFile(std::string text) {
    Add(std::string(kWorkspace) + "/.ward.toml", std::move(text));
  }
  // A path whose read fails with something other than NotFound.
  void AddUnreadable(const std::string& path) { unreadable_.push_back(path); }

  FileReader Reader() {
    return [this](const std::string& path) -> Result<std::string> {
      reads_.push_back(path);
      for (const std::string& u : unreadable_) {
        if (u == path) return ErrnoError("open " + path, 13);
      }
      auto it = files_.find(path);
      if (it == files_.end()) return NotFound(path + ": no such file");
      return it->second;
    };
  }
  const std::vector<std::string>& reads() const { return reads_; }

 private:
  std::map<std::string, std::string> files_;
  std::vector<std::string> unreadable_;
  std::vector<std::string> reads_;
};

inline Context TestContext() { return Context{kHome, kWorkspace, kWorkspace, kConfigDir}; }

inline Result<Policy> Load(MemFs& fs, const RunFlags& flags = RunFlags(),
                           const Context& ctx = TestContext()) {
  return LoadPolicy(flags, ctx, fs.Reader());
}

// Loads a user profile "t" (at <config>/profiles/t.toml) with the given text.
inline Result<Policy> LoadText(const std::string& text, RunFlags flags = RunFlags()) {
  MemFs fs;
  fs.AddProfile("t", text);
  flags.profile = "t";
  return Load(fs, flags);
}

inline std::string ProfilePath(const std::string& name) {
  return std::string(kUserProfiles) + name + ".toml";
}

// The error message of a failed result ("" if it succeeded).
template <typename T>
std::string ErrorOf(const Result<T>& r) {
  return r.ok() ? std::string() : r.status().message();
}

}  // namespace ward::policy::testing
