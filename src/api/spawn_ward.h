// Starting the ward binary as `ward run` for the daemon (an exec's throwaway sandbox, or a live
// sandbox): a child sharing the daemon's memory until it execs, with the daemon's pipes as its
// first descriptors, dying with the daemon.
#pragma once

#include <sys/types.h>

namespace ward::api {

// Raises an fd to >= 10 so the child's dup2 onto 0..4 cannot clobber another pipe end.
int Raise(int fd);

struct SpawnArgs {
  const char* path;
  char** argv;
  char** envp;
  int fds[5];  // become 0..4: stdin, stdout, stderr, the JSON status, and (-1: none) a
               // live sandbox's exec channel
  pid_t parent;
};

// Starts the child with vfork semantics; *pidfd gets its pidfd. Returns its pid or -1.
pid_t StartSpawnChild(SpawnArgs* sa, int* pidfd);

void SetNonBlocking(int fd);

}  // namespace ward::api
