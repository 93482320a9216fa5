// Immutable inputs of the child-side enforcers. The planner (plan.h) turns a Policy into these
// in the parent; each Apply* function in the child takes only its own spec.
#pragma once

#include <sys/ioctl.h>
#include <sys/resource.h>
#include <termios.h>
#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

#include "enforce/seccomp.h"

namespace ward::enforce {

// One step of building the sandbox's root. Executed in order; a step's target's parent exists
// (a tmpfs directory created by an earlier step, or a directory inside an earlier bind).
struct MountOp {
  enum class Kind {
    kTmpfs,    // fresh tmpfs at target
    kBind,     // bind host `source` at target (recursive), read-only unless writable
    kSymlink,  // symlink at target pointing to `source`
    kDev,      // minimal /dev at target (tmpfs + device nodes + devpts + shm)
    kProc,     // fresh procfs at target, with the kernel knobs masked or read-only
    kFile,     // a regular file with `content` at target (e.g. /etc/resolv.conf over a bind)
  };
  Kind kind = Kind::kTmpfs;
  std::string source;  // host path (kBind), link text (kSymlink)
  std::string target;  // absolute path inside the sandbox
  bool writable = false;
  bool is_dir = true;  // kBind: the source is a directory
  uint64_t size = 0;   // kTmpfs: bytes (0 = kernel default)
  uint32_t mode = 0755;
  std::string content;  // kFile
  std::string why;      // for explain: "workspace", "filesystem.read (builtin:default:7)"
};

// A host path that must stay hidden inside a visible bind (masked with an empty mount).
struct MaskOp {
  std::string target;  // absolute; the last component may be a '*' glob
  std::string why;
};

// Protected relative paths below each writable root, and nested repositories.
struct ProtectSpec {
  std::vector<std::string> roots;     // writable roots (targets inside the sandbox)
  std::vector<std::string> relpaths;  // ".git/hooks", ".envrc", ...
  int nested_repo_depth = 3;
};

struct MountSpec {
  std::vector<MountOp> ops;
  std::vector<MaskOp> masks;
  ProtectSpec protect;
  std::string workdir;   // chdir here after pivot_root
  std::string hostname = "ward";
};

// Landlock rules in the sandbox's view (applied after pivot_root).
struct LandlockPath {
  std::string path;
  bool writable = false;
  bool device = false;  // device nodes: read/write/ioctl, never execute
  bool proc = false;    // procfs: read and write (the kernel knobs are read-only mounts)
};
struct LandlockSpec {
  bool enabled = true;
  int abi = 0;                      // the ABI to use (probed)
  std::vector<LandlockPath> paths;
  std::vector<uint16_t> connect_tcp;  // ports the command may connect to (ABI >= 4)
  std::vector<uint16_t> bind_tcp;
};

// The command and the process it runs in.
struct ProcessSpec {
  std::vector<std::string> argv;
  std::vector<std::string> env;  // "NAME=VALUE"
  std::string workdir;
  struct Rlimit {
    int resource;
    rlim_t soft, hard;
  };
  std::vector<Rlimit> rlimits;  // RLIMIT_CORE 0 always; others from the limits policy
};

struct LaunchPlan {
  uid_t uid = 0;  // the caller's ids, mapped to themselves inside
  gid_t gid = 0;
  bool privileged = false;  // invoked as root: setgroups can be dropped, maps written as root
  MountSpec mount;
  LandlockSpec landlock;
  SeccompSpec seccomp_spec;
  SeccompProgram seccomp;  // compiled in the parent (PrepareSeccomp)
  bool seccomp_enabled = true;
  ProcessSpec process;
  // Which of fds 0, 1, 2 are terminals: those get the sandbox's own pty, never the host's.
  bool tty[3] = {false, false, false};
  // The user's terminal settings, given to the sandbox's pty before the command starts.
  bool has_termios = false;
  struct termios termios = {};
  bool has_winsize = false;
  struct winsize winsize = {};
};

}  // namespace ward::enforce
