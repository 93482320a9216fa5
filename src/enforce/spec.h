// Immutable inputs of the child-side enforcers. The planner (plan.h) turns a Policy into these
// in the parent; each Apply* function in the child takes only its own spec.
#pragma once

#include <linux/filter.h>

#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/types.h>
#include <termios.h>

#include <array>
#include <cstdint>
#include <optional>
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
  // kBind: `source` is the workspace or below it (MountSpec::workspace). Sandbox init opens it
  // from the workspace's directory with no symlink on the way (beneath.h), never by its path.
  bool beneath_workspace = false;
  // kBind of the workspace in review mode (`ward run --workspace=overlay`): not a bind but an
  // overlay whose lower layer is `source` (read-only, never written) and whose upper and work
  // directories are these, in ward's state directory. Both empty for every other op.
  std::string overlay_upper;
  std::string overlay_work;
  uint64_t size = 0;  // kTmpfs: bytes (0 = kernel default)
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

// A per-user-namespace kernel knob, written by sandbox init into the fresh /proc before
// /proc/sys becomes read-only (the user.* caps count against the caller outside too).
struct Sysctl {
  std::string path;  // below /proc/sys: "user/max_user_namespaces"
  std::string value;
  bool optional = false;  // absent on older kernels: skipped
};

struct MountSpec {
  std::vector<MountOp> ops;
  std::vector<MaskOp> masks;
  ProtectSpec protect;
  std::string workdir;  // chdir here after pivot_root
  // The canonical workspace on the host, which binds marked beneath_workspace are resolved in
  // ("" when no bind is).
  std::string workspace;
  std::string hostname = "ward";
  std::vector<Sysctl> sysctls;
  // No mount API here: the root is built with mount(2) by path (mount_by_path.h).
  bool by_path = false;
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
  int abi = 0;  // the ABI to use (probed)
  std::vector<LandlockPath> paths;
  std::vector<uint16_t> connect_tcp;  // ports the command may connect to (ABI >= 4)
  bool connect_any = false;           // connect is not restricted by port (capture of "host:*")
  std::vector<uint16_t> bind_tcp;
  // Landlock's TCP rules apply (ABI >= 4). A live sandbox leaves TCP to its network namespace,
  // which has nothing but `lo`: its execs serve and reach each other's loopback services.
  bool tcp = true;
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
  // A container's own seccomp filter (checked), loaded after ward's; empty: none.
  std::vector<sock_filter> container_seccomp;
};

// Which mechanism enforces the resource limits of a run (best available, chosen per host).
enum class LimitsBackend {
  kNone,      // no limit needs a cgroup: rlimits, tmpfs sizes and the supervisor's timer only
  kCgroupV2,  // a delegated cgroup2 subtree
  kCgroupV1,  // writable v1 controllers (root on a v1/hybrid host)
  kRlimits,   // no usable cgroup: per-process rlimits and sized tmpfs
};
const char* LimitsBackendName(LimitsBackend b);

// The per-run cgroup: created by the supervisor before the clone, joined by sandbox init before
// it is told to proceed, killed and removed at the end. Empty parents mean "not used".
struct CgroupSpec {
  int version = 0;                // 0: no cgroup; 1 or 2
  std::string v2_parent;          // absolute directory the run's cgroup is created in
  bool v2_parent_is_own = false;  // the supervisor's own cgroup (it may have to move to a leaf)
  bool v2_parent_create = false;  // make v2_parent (and give it the controllers) when missing
  std::string v1_memory_parent;   // absolute directories in each v1 hierarchy
  std::string v1_pids_parent;
  std::string v1_cpu_parent;
  bool v1_memsw = false;  // memory.memsw.limit_in_bytes exists (swap accounting)
  // A container's cgroup named by its engine (linux.cgroupsPath): a path below each
  // hierarchy's root, which the parents above then are ("/kubepods/pod<uid>/<id>"). Its missing
  // ancestors are made and kept; the leaf is made (or taken over while empty) and removed.
  // "": the run's own name below the parents.
  std::string fixed_leaf;
  // v1 hierarchies (cpuacct, blkio) where the leaf is made and joined, and nothing is limited.
  std::vector<std::string> v1_accounting_parents;
  std::optional<uint64_t> memory_bytes;
  std::optional<uint64_t> pids;
  std::optional<uint64_t> cpu_quota_us;  // per cpu_period_us
  uint64_t cpu_period_us = 100000;
};

// One line of `ward explain` / `ward check`: a limit and what enforces it.
struct LimitLine {
  std::string limit;      // "memory", "pids", "cpu", "timeout", "tmp_size", "file_size", ...
  std::string value;      // "8 GiB", "1024", "0.5 cores"
  std::string mechanism;  // "cgroup v1 memory.limit_in_bytes", "RLIMIT_DATA (per process)"
  bool enforced = true;   // false: degraded (allowed by --allow-degraded=limits)
  std::string origin;     // "builtin:default:12 (limits.memory)"
};

struct LimitsSpec {
  LimitsBackend backend = LimitsBackend::kNone;
  CgroupSpec cgroup;
  uint64_t timeout_ms = 0;  // 0: none
  uint64_t grace_ms = 0;    // SIGTERM at the deadline, SIGKILL this much later
  std::vector<LimitLine> lines;
};

// Egress: listening sockets made inside the sandbox's network namespace, in the supervisor's
// fd table (CreateSandboxNet), which serves them (proxy and DNS stub).
struct NetSpec {
  bool enabled = false;
  uint16_t proxy_port = 3128;  // 127.0.0.1:<port> inside: HTTP CONNECT, absolute-URI, SOCKS5
  bool dns = true;             // 127.0.0.1:53, UDP and TCP
  // Transparent capture (enforce/ns/capture.h): TCP to these ranges is redirected to
  // 127.0.0.1 and [::1] at `capture_port`, where the supervisor serves it. 0: off.
  uint16_t capture_port = 0;
  std::array<uint8_t, 4> capture_v4 = {};
  uint8_t capture_v4_len = 0;
  std::array<uint8_t, 16> capture_v6 = {};
  uint8_t capture_v6_len = 0;

  // The TCP ports ward listens on inside: the proxy's, the DNS stub's and the capture's.
  std::vector<uint16_t> tcp_ports() const {
    std::vector<uint16_t> ports = {proxy_port};
    if (dns) ports.push_back(53);
    if (capture_port != 0) ports.push_back(capture_port);
    return ports;
  }
};

struct LaunchPlan {
  uid_t uid = 0;  // the caller's ids, mapped to themselves inside
  gid_t gid = 0;
  bool privileged = false;  // invoked as root: setgroups can be dropped, maps written as root
  // Init gets a user namespace of its own; not where mounts are refused in one (gVisor), as
  // root: init then stays in root's, and the command drops every capability as usual.
  bool user_ns = true;
  MountSpec mount;
  LandlockSpec landlock;
  SeccompSpec seccomp_spec;
  SeccompProgram seccomp;  // the built-in filter (PrepareSeccomp); empty: sent after the clone
  bool seccomp_enabled = true;
  ProcessSpec process;
  // A live sandbox: instead of `process.argv`, its first process is an exec server that runs
  // each command the supervisor asks for (exec_server.h), with `process.rlimits` each.
  bool exec_server = false;
  // An OCI container's init (`ward oci create`): cloned as the supervisor's sibling, so that
  // the engine's process that ran `create` is its parent and, once that exits, the engine's
  // subreaper, which reaps it and takes its exit status as the container's. It has no
  // parent-death signal (its parent exits at once); it ends everything inside when the
  // supervisor's control socket closes, and exits with the command's status.
  bool container_init = false;
  // Brokered credentials: their secrets are fetched only after the clone, so that sandbox init
  // (a copy of the supervisor's memory) never holds one. Init then waits for the command's
  // final environment (with the phantoms) and the content of mount op `late_file_op` (the CA
  // bundle, -1 when none) before it builds the root (SendLateSetup).
  bool await_late_setup = false;
  int late_file_op = -1;
  LimitsSpec limits;
  // A v1 cgroup made after the clone, while init builds the root (SendCgroupJoin): init joins it
  // after the network namespace, before the seccomp program, so before it may fork the command.
  bool cgroup_after_clone = false;
  NetSpec net;
  // Which of fds 0, 1, 2 are terminals: those get the sandbox's own pty, never the host's.
  bool tty[3] = {false, false, false};
  // The user's terminal settings, given to the sandbox's pty before the command starts.
  bool has_termios = false;
  struct termios termios = {};
  bool has_winsize = false;
  struct winsize winsize = {};
};

}  // namespace ward::enforce
