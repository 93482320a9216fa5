/* Interleaved spawn timing for bench/startup_ab.sh and bench/syscall_heavy.sh (INTERLEAVE=1).
 *
 *   interleave [-w WARMUP] N CMD_A... :: CMD_B... [:: CMD_C...]
 *
 * Runs every command WARMUP times (default 1) untimed, to fill caches and let a first run's
 * one-off work (a git index refresh, say) happen, then N times: one spawn of each command per
 * iteration, in forward order on even iterations and reverse order on odd ones, so that a
 * drift of the machine (another tenant, a CPU's frequency, the page cache) is shared by all
 * commands instead of falling on whichever hyperfine batch happened to run during it. Each
 * command's stdout and stderr go to /dev/null.
 * Prints one line per command: the median wall time, its ratio to the first command's median,
 * the 25th and 75th percentiles and the number of runs, warm-up included, that did not exit 0.
 * Exits 1 if any did.
 */
#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char** environ;

enum { kMaxCommands = 16 };

static int CompareDoubles(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return (x > y) - (x < y);
}

static double NowMs(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

int main(int argc, char** argv) {
  int warmup = 1;
  int first_arg = 1;
  if (argc > 2 && strcmp(argv[1], "-w") == 0) {
    char* end;
    long w = strtol(argv[2], &end, 10);
    if (*argv[2] == '\0' || *end != '\0' || w < 0 || w > 1000) {
      fprintf(stderr, "interleave: -w takes a number of runs from 0 to 1000, not '%s'\n", argv[2]);
      return 2;
    }
    warmup = (int)w;
    first_arg = 3;
  }
  if (argc < first_arg + 2) {
    fprintf(stderr, "usage: %s [-w WARMUP] N CMD... [:: CMD...]\n", argv[0]);
    return 2;
  }
  const int n = atoi(argv[first_arg]);
  if (n < 1) {
    fprintf(stderr, "interleave: N must be a positive number, not '%s'\n", argv[first_arg]);
    return 2;
  }
  char** cmds[kMaxCommands];
  int ncmds = 0;
  cmds[ncmds++] = &argv[first_arg + 1];
  for (int i = first_arg + 1; i < argc; i++) {
    if (strcmp(argv[i], "::") != 0) continue;
    if (ncmds == kMaxCommands) {
      fprintf(stderr, "interleave: at most %d commands\n", kMaxCommands);
      return 2;
    }
    argv[i] = NULL;
    cmds[ncmds++] = &argv[i + 1];
  }
  for (int c = 0; c < ncmds; c++) {
    if (cmds[c][0] == NULL) {
      fprintf(stderr, "interleave: command %d is empty\n", c + 1);
      return 2;
    }
  }

  double* times[kMaxCommands];
  int failures[kMaxCommands] = {0};
  for (int c = 0; c < ncmds; c++) {
    times[c] = calloc((size_t)n, sizeof(double));
    if (times[c] == NULL) {
      perror("interleave: calloc");
      return 2;
    }
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0);

  for (int i = -warmup; i < n; i++) {
    for (int k = 0; k < ncmds; k++) {
      const int c = (i % 2 == 0) ? k : ncmds - 1 - k;  // i may be negative: warm-up
      pid_t pid;
      int status = 0;
      const double start = NowMs();
      int err = posix_spawnp(&pid, cmds[c][0], &actions, NULL, cmds[c], environ);
      if (err != 0) {
        fprintf(stderr, "interleave: cannot run %s: %s\n", cmds[c][0], strerror(err));
        return 2;
      }
      while (waitpid(pid, &status, 0) < 0) {
        if (errno != EINTR) {
          perror("interleave: waitpid");
          return 2;
        }
      }
      const double elapsed = NowMs() - start;
      if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) failures[c]++;
      if (i >= 0) times[c][i] = elapsed;
    }
  }

  int any_failed = 0;
  double first = 0;
  for (int c = 0; c < ncmds; c++) {
    qsort(times[c], (size_t)n, sizeof(double), CompareDoubles);
    const double median = times[c][n / 2];
    if (c == 0) first = median;
    printf("%8.3f ms  ratio-to-first %.3f  p25 %.3f  p75 %.3f  failed %d  %s\n", median,
           median / first, times[c][n / 4], times[c][3 * n / 4], failures[c], cmds[c][0]);
    any_failed |= failures[c] != 0;
  }
  return any_failed;
}
