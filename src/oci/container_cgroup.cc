#include "oci/container_cgroup.h"

#include <fcntl.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "common/unique_fd.h"
#include "common/write_all.h"
#include "enforce/probe.h"

namespace ward::oci {
namespace {

// A directory ward made for the container's run: at the engine's path, or named
// "ward-<supervisor pid>-<random>".
std::string Ours(const std::string& dir, const std::string& leaf) {
  if (!leaf.empty()) {
    return dir.size() > leaf.size() && dir.compare(dir.size() - leaf.size(), leaf.size(), leaf) == 0
               ? dir
               : "";
  }
  const size_t slash = dir.rfind('/');
  return slash != std::string::npos && dir.compare(slash + 1, 5, "ward-") == 0 ? dir : "";
}

Status BadPath(const std::string& path, const std::string& why) {
  return InvalidArgument("config.json: linux.cgroupsPath \"" + path + "\": " + why);
}

// "a-b-c.slice" is "/a.slice/a-b.slice/a-b-c.slice", as systemd nests slices; "-.slice" the root.
Result<std::string> SlicePath(const std::string& given, const std::string& slice) {
  const std::string suffix = ".slice";
  if (slice == "-.slice") return std::string();
  if (slice.size() <= suffix.size() || slice.compare(slice.size() - suffix.size(), suffix.size(),
                                                     suffix) != 0 ||
      slice.find('/') != std::string::npos) {
    return BadPath(given, "\"" + slice + "\" is not a systemd slice (NAME.slice)");
  }
  const std::string stem = slice.substr(0, slice.size() - suffix.size());
  std::string path;
  for (size_t dash = stem.find('-'); dash != std::string::npos; dash = stem.find('-', dash + 1)) {
    if (dash == 0 || dash + 1 == stem.size() || stem[dash + 1] == '-') {
      return BadPath(given, "\"" + slice + "\" is not a systemd slice (a dash at an end or twice)");
    }
    path += "/" + stem.substr(0, dash) + suffix;
  }
  return path + "/" + slice;
}

Result<std::string> SystemdScopePath(const std::string& given) {
  const size_t c1 = given.find(':');
  const size_t c2 = c1 == std::string::npos ? c1 : given.find(':', c1 + 1);
  if (c2 == std::string::npos || given.find(':', c2 + 1) != std::string::npos) {
    return BadPath(given, "with --systemd-cgroup it is \"slice:prefix:name\"");
  }
  const std::string slice = given.substr(0, c1), prefix = given.substr(c1 + 1, c2 - c1 - 1),
                    name = given.substr(c2 + 1);
  if (name.empty() || name.find('/') != std::string::npos ||
      prefix.find('/') != std::string::npos) {
    return BadPath(given, "the name is one path component, and not empty");
  }
  WARD_ASSIGN_OR_RETURN(std::string path, SlicePath(given, slice.empty() ? "system.slice" : slice));
  return path + "/" + (prefix.empty() ? "" : prefix + "-") + name + ".scope";
}

std::string ReadFirstLine(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return line;
}

std::optional<uint64_t> NumberIn(const std::string& path) {
  const std::string text = ReadFirstLine(path);
  char* end = nullptr;
  const unsigned long long v = std::strtoull(text.c_str(), &end, 10);
  if (text.empty() || end == text.c_str()) return std::nullopt;
  return v;
}

Status Write(const std::string& path, const std::string& value) {
  UniqueFd fd(open(path.c_str(), O_WRONLY | O_NOFOLLOW | O_CLOEXEC));
  if (!fd) return ErrnoError(path, errno);
  return WriteAll(fd.get(), value, path);
}

Status NoDirectory(const std::string& id, const char* limit) {
  return InvalidArgument(std::string("container ") + id + " has no " + limit +
                         " cgroup of ward's to update: it was created without a " + limit +
                         " limit, or with one ward enforced without a cgroup (no delegation to "
                         "this user); create it again with the limit");
}

Status UpdateMemory(const ContainerCgroup& cg, uint64_t bytes) {
  const std::string v = std::to_string(bytes);
  if (cg.version == 2) return Write(cg.memory + "/memory.max", v);
  // memory.memsw (memory + swap) must stay at least memory: raised first, lowered last.
  const std::string memsw = cg.memory + "/memory.memsw.limit_in_bytes";
  const bool has_memsw = access(memsw.c_str(), F_OK) == 0;
  const bool raising = bytes > NumberIn(cg.memory + "/memory.limit_in_bytes").value_or(0);
  if (has_memsw && raising) WARD_TRY(Write(memsw, v));
  WARD_TRY(Write(cg.memory + "/memory.limit_in_bytes", v));
  if (has_memsw && !raising) WARD_TRY(Write(memsw, v));
  return Ok();
}

Status UpdateCpu(const ContainerCgroup& cg, uint64_t quota, uint64_t period) {
  if (cg.version == 2) {
    return Write(cg.cpu + "/cpu.max", std::to_string(quota) + " " + std::to_string(period));
  }
  WARD_TRY(Write(cg.cpu + "/cpu.cfs_period_us", std::to_string(period)));
  return Write(cg.cpu + "/cpu.cfs_quota_us", std::to_string(quota));
}

// utime+stime of `pid` (and, for `with_children`, of the children it reaped), in clock ticks.
uint64_t CpuTicks(pid_t pid, bool with_children) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const size_t close = stat.rfind(')');
  if (close == std::string::npos) return 0;
  std::istringstream rest(stat.substr(close + 1));
  std::string field;
  uint64_t ticks = 0;
  for (int i = 3; i <= 17 && rest >> field; ++i) {
    if (i == 14 || i == 15 || (with_children && (i == 16 || i == 17))) {
      ticks += std::strtoull(field.c_str(), nullptr, 10);
    }
  }
  return ticks;
}

uint64_t ResidentBytes(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/statm");
  uint64_t size = 0, resident = 0;
  in >> size >> resident;
  return resident * static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
}

nlohmann::json MemoryStats(const ContainerCgroup& cg, const std::vector<pid_t>& pids) {
  nlohmann::json usage = nlohmann::json::object();
  if (!cg.memory.empty()) {
    const bool v2 = cg.version == 2;
    if (auto v = NumberIn(cg.memory + (v2 ? "/memory.current" : "/memory.usage_in_bytes"))) {
      usage["usage"] = *v;
    }
    if (auto v = NumberIn(cg.memory + (v2 ? "/memory.max" : "/memory.limit_in_bytes"))) {
      usage["limit"] = *v;
    }
    return {{"usage", usage}};
  }
  uint64_t rss = 0;
  for (pid_t p : pids) rss += ResidentBytes(p);
  usage["usage"] = rss;
  return {{"usage", usage}};
}

}  // namespace

Result<std::string> EngineCgroupPath(const std::string& cgroups_path, bool systemd) {
  if (cgroups_path.empty()) return std::string();
  std::string path = cgroups_path;
  if (systemd) {
    WARD_ASSIGN_OR_RETURN(path, SystemdScopePath(cgroups_path));
  }
  std::string out;
  size_t from = 0;
  while (from <= path.size()) {
    size_t slash = path.find('/', from);
    if (slash == std::string::npos) slash = path.size();
    const std::string part = path.substr(from, slash - from);
    if (part == "..") return BadPath(cgroups_path, "must not contain \"..\"");
    if (!part.empty() && part != ".") out += "/" + part;
    from = slash + 1;
  }
  if (out.empty()) return BadPath(cgroups_path, "names the root: a container's cgroup is its own");
  return out;
}

Result<ContainerCgroup> FindContainerCgroup(const ContainerState& s) {
  if (ContainerStatus(s) != "running" && ContainerStatus(s) != "created") {
    return Error(Code::kFailedPrecondition,
                 "container " + s.id + " is " + ContainerStatus(s) + ": it has no resources now");
  }
  const enforce::CgroupDirs dirs = enforce::CgroupDirsOf(s.pid);
  // Read while the pid was the container's init: a pid reused since would name another's.
  if (ProcessStartTime(s.pid) != s.pid_start) {
    return Error(Code::kFailedPrecondition, "container " + s.id + " ended");
  }
  ContainerCgroup cg;
  const std::string& leaf = s.cgroup_leaf;
  if (!Ours(dirs.v2, leaf).empty()) {
    cg.version = 2;
    cg.memory = cg.pids = cg.cpu = dirs.v2;
    return cg;
  }
  cg.memory = Ours(dirs.v1_memory, leaf);
  cg.pids = Ours(dirs.v1_pids, leaf);
  cg.cpu = Ours(dirs.v1_cpu, leaf);
  if (!cg.memory.empty() || !cg.pids.empty() || !cg.cpu.empty()) cg.version = 1;
  return cg;
}

Status UpdateResources(const ContainerCgroup& cg, const Resources& r, const std::string& id) {
  if (r.memory_limit && cg.memory.empty()) return NoDirectory(id, "memory");
  if (r.pids_limit && cg.pids.empty()) return NoDirectory(id, "pids");
  if (r.cpu_quota_us && cg.cpu.empty()) return NoDirectory(id, "cpu");
  if (r.memory_limit) WARD_TRY(UpdateMemory(cg, static_cast<uint64_t>(*r.memory_limit)));
  if (r.pids_limit) WARD_TRY(Write(cg.pids + "/pids.max", std::to_string(*r.pids_limit)));
  if (r.cpu_quota_us) WARD_TRY(UpdateCpu(cg, *r.cpu_quota_us, r.cpu_period_us.value_or(100000)));
  return Ok();
}

nlohmann::json StatsSnapshot(const ContainerState& s, const ContainerCgroup& cg,
                             const std::vector<pid_t>& pids) {
  const uint64_t ns_per_tick = 1000000000ull / static_cast<uint64_t>(sysconf(_SC_CLK_TCK));
  uint64_t ticks = 0;
  for (pid_t p : pids) ticks += CpuTicks(p, p == s.pid);
  nlohmann::json pids_stats = {{"current", pids.size()}};
  if (!cg.pids.empty()) {
    if (auto limit = NumberIn(cg.pids + "/pids.max")) pids_stats["limit"] = *limit;
  }
  return {{"type", "stats"},
          {"id", s.id},
          {"data",
           {{"cpu", {{"usage", {{"total", ticks * ns_per_tick}}}}},
            {"memory", MemoryStats(cg, pids)},
            {"pids", pids_stats}}}};
}

}  // namespace ward::oci
