// The kernel's own cost of ward's two per-syscall layers, without ward: runs a command under a
// seccomp filter shaped like ward's (allow by default, a few denials, `openat` decided by its
// flags so that the kernel cannot cache its verdict) and/or a Landlock ruleset that handles
// every filesystem right of the running ABI and grants read + execute under the given roots
// (every right under a root written +ROOT, like ward's writable workspace).
// bench/syscall_heavy.sh times the same work under each, to separate what the layers cost from
// what ward adds on top.
//   layer_floor seccomp|landlock|both [[+]ROOT...] -- COMMAND [ARGS...]
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/landlock.h>
#include <seccomp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

static int apply_seccomp(void) {
  scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
  if (!ctx) return -1;
  seccomp_attr_set(ctx, SCMP_FLTATR_CTL_OPTIMIZE, 2);
  const int denied[] = {SCMP_SYS(bpf), SCMP_SYS(ptrace), SCMP_SYS(kexec_load),
                        SCMP_SYS(userfaultfd), SCMP_SYS(perf_event_open)};
  for (size_t i = 0; i < sizeof denied / sizeof denied[0]; ++i) {
    if (seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), denied[i], 0) != 0) return -1;
  }
  // Arg-dependent, like ward's creation guard (O_CREAT is looked at); never true in practice.
  if (seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EINVAL), SCMP_SYS(openat), 1,
                       SCMP_A2(SCMP_CMP_MASKED_EQ, O_CREAT | O_DIRECTORY, O_CREAT | O_DIRECTORY)) !=
      0) {
    return -1;
  }
  int rc = seccomp_load(ctx);
  seccomp_release(ctx);
  return rc;
}

static int apply_landlock(char** roots, int n) {
  long abi = syscall(SYS_landlock_create_ruleset, NULL, 0, LANDLOCK_CREATE_RULESET_VERSION);
  if (abi < 1) return -1;
  struct landlock_ruleset_attr attr = {0};
  attr.handled_access_fs = (LANDLOCK_ACCESS_FS_MAKE_SYM << 1) - 1;  // the 13 rights of ABI 1
  if (abi >= 2) attr.handled_access_fs |= 1ULL << 13;               // REFER
  if (abi >= 3) attr.handled_access_fs |= 1ULL << 14;               // TRUNCATE
  if (abi >= 5) attr.handled_access_fs |= 1ULL << 15;               // IOCTL_DEV
  int rs = (int)syscall(SYS_landlock_create_ruleset, &attr, sizeof attr, 0);
  if (rs < 0) return -1;
  for (int i = 0; i < n; ++i) {
    struct landlock_path_beneath_attr pb = {0};
    const char* root = roots[i];
    if (root[0] == '+') {
      pb.allowed_access = attr.handled_access_fs;
      ++root;
    } else {
      pb.allowed_access =
          LANDLOCK_ACCESS_FS_EXECUTE | LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_READ_DIR;
    }
    pb.parent_fd = open(root, O_PATH | O_CLOEXEC);
    if (pb.parent_fd < 0) continue;  // absent here
    if (syscall(SYS_landlock_add_rule, rs, LANDLOCK_RULE_PATH_BENEATH, &pb, 0) != 0) return -1;
    close(pb.parent_fd);
  }
  // stdout may be a file or /dev/null: writable.
  struct landlock_path_beneath_attr dev = {0};
  dev.allowed_access = LANDLOCK_ACCESS_FS_WRITE_FILE | LANDLOCK_ACCESS_FS_READ_FILE;
  dev.parent_fd = open("/dev/null", O_PATH | O_CLOEXEC);
  if (dev.parent_fd >= 0) {
    syscall(SYS_landlock_add_rule, rs, LANDLOCK_RULE_PATH_BENEATH, &dev, 0);
    close(dev.parent_fd);
  }
  int rc = (int)syscall(SYS_landlock_restrict_self, rs, 0);
  close(rs);
  return rc;
}

int main(int argc, char** argv) {
  if (argc < 4) {
    fprintf(stderr, "usage: layer_floor seccomp|landlock|both [[+]ROOT...] -- COMMAND [ARGS...]\n");
    return 125;
  }
  int sep = 2;
  while (sep < argc && strcmp(argv[sep], "--") != 0) ++sep;
  if (sep + 1 >= argc) {
    fprintf(stderr, "layer_floor: no command after --\n");
    return 125;
  }
  const char* mode = argv[1];
  int want_seccomp = !strcmp(mode, "seccomp") || !strcmp(mode, "both");
  int want_landlock = !strcmp(mode, "landlock") || !strcmp(mode, "both");
  if (!want_seccomp && !want_landlock) {
    fprintf(stderr, "layer_floor: unknown mode %s\n", mode);
    return 125;
  }
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) {
    perror("layer_floor: no_new_privs");
    return 125;
  }
  if (want_landlock && apply_landlock(argv + 2, sep - 2) != 0) {
    perror("layer_floor: landlock");
    return 125;
  }
  if (want_seccomp && apply_seccomp() != 0) {
    fprintf(stderr, "layer_floor: seccomp filter could not be loaded\n");
    return 125;
  }
  execvp(argv[sep + 1], argv + sep + 1);
  perror("layer_floor: exec");
  return 127;
}
