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

// A blocking, close-on-exec connection to the stream socket at `path`.
Result<UniqueFd> ConnectUnix(const std::string& path);

struct UnixListener {
  UniqueFd fd;    // listening, non-blocking, close-on-exec
  ino_t ino = 0;  // the socket file's inode: remove it at the end only if it is still ours
};

// Listens on `path` (absolute), created 0600 from the start so no other uid can connect in
// between. A socket nobody answers on (a dead server's) is replaced; something that is not a
// socket is kInvalidArgument; a live server there is kFailedPrecondition.
Result<UnixListener> ListenPrivateUnix(const std::string& path, int backlog);

// The peer's pid, uid and gid (SO_PEERCRED); nullopt when the kernel cannot tell.
std::optional<struct ucred> PeerCredentials(int fd);

}  // namespace ward
