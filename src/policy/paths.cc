#include "policy/paths.h"

#include <fnmatch.h>

#include <vector>

namespace ward::policy {

std::string NormalizePath(std::string_view abs_path) {
  // Built in place: ".." drops what follows the output's last '/'.
  std::string out;
  out.reserve(abs_path.size());
  size_t i = 0;
  while (i < abs_path.size()) {
    while (i < abs_path.size() && abs_path[i] == '/') ++i;
    size_t j = i;
    while (j < abs_path.size() && abs_path[j] != '/') ++j;
    std::string_view comp = abs_path.substr(i, j - i);
    if (comp == "..") {
      out.resize(out.empty() ? 0 : out.rfind('/'));
    } else if (!comp.empty() && comp != ".") {
      out += '/';
      out += comp;
    }
    i = j;
  }
  if (out.empty()) out.push_back('/');
  return out;
}

bool PathIsWithin(std::string_view path, std::string_view prefix) {
  if (prefix == "/") return !path.empty() && path[0] == '/';
  if (path.size() < prefix.size() || path.substr(0, prefix.size()) != prefix) return false;
  return path.size() == prefix.size() || path[prefix.size()] == '/';
}

int PathDepthBelow(std::string_view path, std::string_view prefix) {
  if (!PathIsWithin(path, prefix)) return -1;
  std::string_view rest = path.substr(prefix == "/" ? 0 : prefix.size());
  int depth = 0;
  for (size_t i = 0; i < rest.size(); ++i) {
    if (rest[i] == '/' && i + 1 < rest.size()) ++depth;
  }
  return depth;
}

std::string JoinPath(std::string_view base, std::string_view rel) {
  std::string out(base);
  if (out.empty() || out.back() != '/') out += '/';
  out += rel;
  return out;
}

std::vector<std::string> PathComponents(std::string_view path) {
  std::vector<std::string> out;
  size_t i = 0;
  while (i < path.size()) {
    while (i < path.size() && path[i] == '/') ++i;
    size_t j = path.find('/', i);
    if (j == std::string_view::npos) j = path.size();
    if (j > i) out.emplace_back(path.substr(i, j - i));
    i = j;
  }
  return out;
}

bool ClimbsOut(std::string_view rel) {
  int depth = 0;
  for (const std::string& comp : PathComponents(rel)) {
    if (comp == "..") {
      if (--depth < 0) return true;
    } else if (comp != ".") {
      ++depth;
    }
  }
  return false;
}

std::string ParentPath(std::string_view path) {
  size_t slash = path.rfind('/');
  if (slash == std::string_view::npos || slash == 0) return "/";
  return std::string(path.substr(0, slash));
}

bool HasGlob(std::string_view s) { return s.find_first_of("*?[") != std::string_view::npos; }

bool MatchComponent(const std::string& pattern, const std::string& name) {
  return fnmatch(pattern.c_str(), name.c_str(), FNM_PERIOD) == 0;
}

}  // namespace ward::policy
