// An OCI bundle's `config.json` (the runtime spec that container engines hand a runc-compatible
// runtime), read as untrusted input: every field ward uses is checked for its type and bounds,
// and an error names the field ("config.json: process.args: ..."). Fields ward does not use are
// ignored, as runc ignores what it does not know; what ward cannot honour is refused by the
// caller with its reason, never silently dropped.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace ward::oci {

inline constexpr size_t kMaxConfigBytes = 4u << 20;

struct Rlimit {
  std::string type;  // "RLIMIT_NOFILE", ...
  uint64_t soft = 0, hard = 0;
};

struct Process {
  std::vector<std::string> args;  // never empty
  std::vector<std::string> env;   // "NAME=VALUE"
  std::string cwd = "/";          // absolute
  bool terminal = false;
  uid_t uid = 0;
  gid_t gid = 0;
  std::vector<gid_t> additional_gids;
  std::vector<Rlimit> rlimits;
  bool no_new_privileges = false;
  std::vector<std::string> capabilities;  // the bounding set asked for (ward grants none)
};

struct Mount {
  std::string destination;  // absolute, inside the container
  std::string type;         // "bind", "proc", "tmpfs", ...; "" for a bind given by options
  std::string source;
  std::vector<std::string> options;
  bool bind() const;       // a bind or rbind (by type or option)
  bool read_only() const;  // "ro" among the options
};

struct Namespace {
  std::string type;  // "pid", "network", "mount", "ipc", "uts", "user", "cgroup", "time"
  std::string path;  // "" for a new one; else an existing namespace to join
};

struct Resources {
  std::optional<int64_t> memory_limit;  // bytes
  std::optional<int64_t> pids_limit;
  std::optional<uint64_t> cpu_quota_us, cpu_period_us;
};

// linux.seccomp: the container's own filter, applied on top of ward's (oci/seccomp_filter.h).
struct SeccompArg {
  uint32_t index = 0;  // 0-5
  uint64_t value = 0, value_two = 0;
  std::string op;  // "SCMP_CMP_EQ", "SCMP_CMP_NE", "SCMP_CMP_LT", ..., "SCMP_CMP_MASKED_EQ"
};

struct SeccompRule {
  std::vector<std::string> names;
  std::string action;                 // "SCMP_ACT_ERRNO", "SCMP_ACT_ALLOW", ...
  std::optional<uint32_t> errno_ret;  // for SCMP_ACT_ERRNO and SCMP_ACT_TRACE
  std::vector<SeccompArg> args;       // all must hold
};

struct Seccomp {
  std::string default_action;
  std::optional<uint32_t> default_errno_ret;
  std::vector<std::string> architectures, flags;
  std::vector<SeccompRule> syscalls;
};

struct Config {
  std::string oci_version;
  Process process;
  std::string root_path;  // as given: relative to the bundle, or absolute
  bool root_readonly = false;
  std::string hostname;
  std::vector<Mount> mounts;
  std::vector<Namespace> namespaces;
  std::string cgroups_path;  // linux.cgroupsPath as given ("" when absent)
  Resources resources;
  std::optional<Seccomp> seccomp;
  std::map<std::string, std::string> annotations;
};

// The seccomp actions and argument operators config.json may use (SCMP_ACT_NOTIFY is not one).
const std::vector<std::string>& SeccompActions();
const std::vector<std::string>& SeccompOperators();

// The network namespace config.json names by path (a pod's), "" when it names none.
std::string PodNetworkPath(const Config& config);

// Parses config.json's text. kInvalidArgument naming the field on any error.
Result<Config> ParseConfig(std::string_view text);

// Parses an exec's process (`ward oci exec --process FILE`: a `process` object on its own) with
// the same fields and checks; the error names the field ("process: args: ...").
Result<Process> ParseProcess(std::string_view text);

// Parses `update --resources FILE`: a `linux.resources` object on its own, with the same checks;
// the error names the field ("resources: memory.limit: ...").
Result<Resources> ParseResources(std::string_view text);

}  // namespace ward::oci
