// `ward oci exec`: one more process in a running container, as the engines ask for it (`podman
// exec`, `docker exec`, `kubectl exec`, `ctr task exec`).
//
// The process runs inside, started by the container's exec server (the command's layers, all
// of them: enforce/exec_server.h), never by anything that enters the container from the host.
// What the engine holds is this process: it connects to the container's exec socket, hands
// over the request and its stdin, stdout and stderr (then lets go of its own copies, so the
// engine sees the exec's output end when the exec's does), passes on the signals it gets, and
// ends with the exec's status (exit code, or the same signal). Its pid is what --pid-file
// says; with --detach it is a child left to the engine's subreaper once it started the exec,
// as runc leaves the exec'd process. When it is killed, the supervisor kills the exec.
// With a terminal (process.terminal, `-t`), the exec server makes it in the container's own
// devpts and its master comes back with the start, to go to the engine's --console-socket.
#pragma once

#include <string>

#include "common/status.h"
#include "oci/config.h"

namespace ward::oci {

struct ExecOptions {
  std::string root;  // the state root (--root)
  std::string id;
  Process process;
  bool detach = false;
  std::string pid_file;        // "" for none
  std::string console_socket;  // process.terminal: where the terminal's master goes
};

// Detached: Ok once the exec runs (0). Else waits for its end and returns its wait status.
Result<int> Exec(const ExecOptions& options);

// Ends this process the way `wait_status` says: its exit code, or the same signal.
[[noreturn]] void ExitAs(int wait_status);

}  // namespace ward::oci
