// The exec channel of a live sandbox: how `ward serve` asks a sandbox's supervisor, and the
// supervisor asks the sandbox's exec server (exec_server.h), to run one command inside a running
// sandbox, and how the answers come back. A SOCK_SEQPACKET socketpair carrying fixed-size
// messages; a start carries the request in a memfd and the command's stdin, stdout and stderr.
#pragma once

#include <sys/resource.h>
#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "common/unique_fd.h"
#include "enforce/child_error.h"

namespace ward::enforce {

enum class ExecMsgType : uint32_t {
  kStart = 1,  // -> server: run the request in the attached memfd (`length` bytes) with the
               //    attached stdin, stdout, stderr
  kSignal,     // -> server: signal `value` to the exec's process group
  kStarted,    // <- server: the command's execve succeeded; `value` is its pid inside
  kFailed,     // <- server: it could not be started (`error`; `value` is 126 or 127 when the
               //    execve itself failed, 125 for a setup step)
  kExited,     // <- server: it ended; `value` is its wait status, `usage` its rusage
};

struct ExecMsg {
  ExecMsgType type = ExecMsgType::kStart;
  uint64_t id = 0;      // the exec, named by whoever asked for it
  int32_t value = 0;    // see ExecMsgType
  uint32_t length = 0;  // kStart: the request's bytes
  struct rusage usage = {};
  ChildError error;
};

// What one exec runs and how it is narrowed. Paths are the sandbox's own view.
struct ExecRequest {
  std::vector<std::string> argv;
  std::vector<std::string> env;  // "NAME=VALUE"
  std::string cwd;
  // A terminal of the sandbox's own for the exec's stdin, stdout and stderr (the stdio sent
  // with the request are not used); its master comes back attached to kStarted.
  bool tty = false;
  // No narrowing: an exec narrowed by its own policy runs in a sandbox of its own. Inside a
  // live sandbox a narrowing would bind the exec's own system calls only: the creation guard
  // creates with the sandbox's authority, and any other process of the sandbox can act for it.
};

inline constexpr size_t kMaxExecRequestBytes = 8u << 20;

std::string EncodeExecRequest(const ExecRequest& req);
// Anything but what EncodeExecRequest made is an error naming the field.
Status DecodeExecRequest(std::string_view bytes, ExecRequest* req);

// One message with up to four descriptors. Returns 0 or -errno.
int SendExecMsg(int sock, const ExecMsg& msg, const int* fds = nullptr, size_t nfds = 0);
// Blocks (unless `flags` has MSG_DONTWAIT) for one message; `fds` (4 of them) receive what came
// attached (invalid ones when fewer). The error's strings are terminated whatever was sent (the
// exec server runs inside the sandbox). Returns 1, 0 at EOF, or -errno (-EPROTO: not a message).
int RecvExecMsg(int sock, ExecMsg* msg, UniqueFd fds[4], int flags = 0);

// Hands every message `sock` (non-blocking) holds now to `fn`, skipping what is not a message,
// until `fn` returns false. False once the other end closed (or `sock` failed).
bool ForEachExecMsg(int sock, const std::function<bool(const ExecMsg&, UniqueFd fds[4])>& fn);

// A memfd holding `encoded`, as kStart attaches it.
Result<UniqueFd> ExecRequestMemfd(const std::string& encoded);
// The request a kStart carried: `length` bytes of `memfd`, bounded and decoded.
Status ReadExecRequest(int memfd, uint32_t length, ExecRequest* req);

}  // namespace ward::enforce
