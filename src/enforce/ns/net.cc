#include "enforce/ns/net.h"

#include <net/if.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace ward::enforce {

int BringUpLoopback() {
  int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -errno;
  struct ifreq ifr = {};
  std::strncpy(ifr.ifr_name, "lo", IFNAMSIZ - 1);
  int rc = 0;
  if (ioctl(fd, SIOCGIFFLAGS, &ifr) != 0) {
    rc = -errno;
  } else {
    ifr.ifr_flags |= IFF_UP | IFF_RUNNING;
    if (ioctl(fd, SIOCSIFFLAGS, &ifr) != 0) rc = -errno;
  }
  close(fd);
  return rc;
}

}  // namespace ward::enforce
