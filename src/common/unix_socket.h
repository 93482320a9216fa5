// Private unix-socket servers (`ward serve`'s socket, a run's approval socket) and their
// clients: one way to listen, to replace a dead server's socket, and to ask who the peer is.
#pragma once

#include <sys/socket.h>
#include <sys/types.h>

#include <optional>
#include <string>

#include "common/status.h"
#include "common/unique_fd.h"

namespace ward {

// A blocking, close-on-exec connection to the socket at `path`, of `type` (SOCK_STREAM or
// SOCK_SEQPACKET). A path longer than a socket address holds is reached through its directory.
Result<UniqueFd> ConnectUnix(const std::string& path, int type = SOCK_STREAM);

struct UnixListener {
  UniqueFd fd;    // listening, non-blocking, close-on-exec
  ino_t ino = 0;  // the socket file's inode: remove it at the end only if it is still ours
};

// Listens on `path` (absolute, of any length), created 0600 from the start so no other uid can
// connect in between. A socket nobody answers on (a dead server's) is replaced; something that is not a
// socket is kInvalidArgument; a live server there is kFailedPrecondition.
Result<UnixListener> ListenPrivateUnix(const std::string& path, int backlog,
                                       int type = SOCK_STREAM);

// The peer's pid, uid and gid (SO_PEERCRED); nullopt when the kernel cannot tell.
std::optional<struct ucred> PeerCredentials(int fd);

// One message of `len` bytes with `nfds` descriptors attached (SCM_RIGHTS), retried on EINTR,
// never SIGPIPE. Returns the bytes sent or -errno. Async-signal-safe (no allocation).
ssize_t SendWithFds(int sock, const void* data, size_t len, const int* fds, size_t nfds);

// One message into `data` (at most `len` bytes) and up to `max_fds` descriptors into `fds`
// (close-on-exec; more are closed), retried on EINTR. Returns the bytes received (0 at EOF) or
// -errno; *nfds is how many descriptors came; *truncated when the message or its descriptors
// did not fit. Async-signal-safe.
ssize_t RecvWithFds(int sock, void* data, size_t len, int* fds, int max_fds, int* nfds,
                    bool* truncated, int flags = 0);

}  // namespace ward
