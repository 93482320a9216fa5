// A process's own descriptors, for processes that outlive what started them (a container's
// supervisor, an exec server, the process an engine holds for an exec): what they keep, and
// stdio they let go of.
#pragma once

#include <vector>

namespace ward {

// Closes every descriptor from 3 up but those in `keep`.
void CloseAllFrom3Except(std::vector<int> keep);

// Points stdin, stdout and stderr at /dev/null: whoever reads what this process's stdio lead to
// sees their end when the other writers close them. Nothing changes when /dev/null cannot be
// opened.
void StdioToDevNull();

// Whether `fd` is a pty's master (a terminal a sandbox hands out for its engine): the ptmx
// character device, open for reading and writing, that answers TIOCGPTN. The ioctl is asked
// only of that device (another file's driver could answer it, or never answer).
bool IsPtyMaster(int fd);

}  // namespace ward
