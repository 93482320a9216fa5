#include "net/broker/source.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <thread>

#include "common/unique_fd.h"
#include "net/text_util.h"

extern char** environ;

namespace ward::net {

namespace {

using Clock = std::chrono::steady_clock;

constexpr size_t kStderrKept = 512;

std::string Quoted(std::string_view s) { return QuoteUntrusted(s, 80); }

Result<std::string> FromEnv(const std::string& var, const SecretSourceOptions& o) {
  std::optional<std::string> v;
  if (o.getenv) {
    v = o.getenv(var);
  } else if (const char* p = ::getenv(var.c_str())) {
    v = p;
  }
  if (!v) return NotFound("$" + var + " is not set in ward's environment");
  if (v->empty()) return NotFound("$" + var + " is empty");
  return *v;
}

Result<std::string> FromFile(const std::string& path, const SecretSourceOptions& o) {
  if (path.empty() || path[0] != '/') return InvalidArgument("file:" + path + ": not absolute");
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK));
  if (!fd) return ErrnoError("file:" + path, errno);
  struct stat st {};
  if (fstat(fd.get(), &st) != 0) return Errno("file:" + path + ": fstat");
  if (!S_ISREG(st.st_mode)) return InvalidArgument("file:" + path + ": not a regular file");
  if (st.st_uid != getuid() && st.st_uid != 0) {
    return Error(Code::kPermissionDenied,
                 "file:" + path + ": owned by uid " + std::to_string(st.st_uid) +
                     ", not by you or root (whoever owns it chooses the secret)");
  }
  if ((st.st_mode & (S_IWGRP | S_IWOTH)) != 0) {
    return Error(Code::kPermissionDenied,
                 "file:" + path + ": writable by group or others (chmod go-w " + path + ")");
  }
  if (static_cast<uint64_t>(st.st_size) > o.max_bytes) {
    return InvalidArgument("file:" + path + ": larger than " + std::to_string(o.max_bytes) +
                           " bytes");
  }
  std::string out;
  char buf[4096];
  while (true) {
    ssize_t n = ::read(fd.get(), buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Errno("file:" + path + ": read");
    if (n == 0) break;
    out.append(buf, static_cast<size_t>(n));
    if (out.size() > o.max_bytes) {
      return InvalidArgument("file:" + path + ": larger than " + std::to_string(o.max_bytes) +
                             " bytes");
    }
  }
  return out;
}

struct SpawnGuard {
  posix_spawn_file_actions_t actions;
  posix_spawnattr_t attr;
  bool actions_ok = false, attr_ok = false;
  ~SpawnGuard() {
    if (actions_ok) posix_spawn_file_actions_destroy(&actions);
    if (attr_ok) posix_spawnattr_destroy(&attr);
  }
};

// Starts `/bin/sh -c cmd` with stdin from /dev/null and stdout, stderr to the given pipes.
Result<pid_t> SpawnShell(const std::string& what, const std::string& cmd, int out_fd, int err_fd) {
  SpawnGuard g;
  if (posix_spawn_file_actions_init(&g.actions) != 0) return Errno(what + ": spawn actions");
  g.actions_ok = true;
  if (posix_spawnattr_init(&g.attr) != 0) return Errno(what + ": spawn attributes");
  g.attr_ok = true;
  posix_spawn_file_actions_addopen(&g.actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&g.actions, out_fd, 1);
  posix_spawn_file_actions_adddup2(&g.actions, err_fd, 2);
  posix_spawn_file_actions_addclosefrom_np(&g.actions, 3);
  sigset_t none, all;
  sigemptyset(&none);
  sigfillset(&all);
  // Its own process group (killed as a whole at the timeout), default signal dispositions and
  // an empty mask whatever the supervisor uses.
  posix_spawnattr_setflags(&g.attr,
                           POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  posix_spawnattr_setpgroup(&g.attr, 0);
  posix_spawnattr_setsigmask(&g.attr, &none);
  posix_spawnattr_setsigdefault(&g.attr, &all);
  const char* argv[] = {"/bin/sh", "-c", cmd.c_str(), nullptr};
  pid_t pid = -1;
  int rc =
      posix_spawn(&pid, "/bin/sh", &g.actions, &g.attr, const_cast<char* const*>(argv), environ);
  if (rc != 0) return ErrnoError(what + ": cannot start /bin/sh", rc);
  return pid;
}

struct CommandOutput {
  std::string out, err;  // err: its tail
  bool too_large = false, timed_out = false;
};

// One read from a pipe that poll found ready: appends to text; false at its end.
bool ReadPipe(int fd, std::string& text) {
  char buf[4096];
  ssize_t r = ::read(fd, buf, sizeof buf);
  if (r <= 0 && !(r < 0 && errno == EINTR)) return false;
  if (r > 0) text.append(buf, static_cast<size_t>(r));
  return true;
}

// Both pipes until they close, the deadline passes or stdout grows too large.
CommandOutput ReadOutput(int out_fd, int err_fd, Clock::time_point deadline, size_t max_bytes) {
  CommandOutput r;
  bool out_open = true, err_open = true;
  while (out_open || err_open) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() <= 0) {
      r.timed_out = true;
      break;
    }
    pollfd fds[2] = {{out_open ? out_fd : -1, POLLIN, 0}, {err_open ? err_fd : -1, POLLIN, 0}};
    int n = poll(fds, 2, static_cast<int>(std::min<int64_t>(left.count(), 1000)));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) break;
    if (out_open && (fds[0].revents & (POLLIN | POLLHUP | POLLERR))) {
      out_open = ReadPipe(out_fd, r.out);
      if (r.out.size() > max_bytes) {
        r.too_large = true;
        break;
      }
    }
    if (err_open && (fds[1].revents & (POLLIN | POLLHUP | POLLERR))) {
      err_open = ReadPipe(err_fd, r.err);
      if (r.err.size() > 4 * kStderrKept) r.err.erase(0, r.err.size() - kStderrKept);
    }
  }
  return r;
}

// The shell may have closed its output and still run: waits for it until the deadline (false
// then). waitid(WNOWAIT) leaves it a zombie, so its process group id cannot be reused before
// the group is killed.
bool WaitForExit(pid_t pid, Clock::time_point deadline) {
  while (true) {
    siginfo_t info{};
    if (waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOHANG | WNOWAIT) == 0 &&
        info.si_pid == pid) {
      return true;
    }
    if (Clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
}

// The secret the command printed, or why there is none (with the tail of its stderr).
Result<std::string> CommandResult(const std::string& what, const SecretSourceOptions& o,
                                  CommandOutput r, int status) {
  if (r.timed_out) {
    return Error(Code::kTimeout, what + ": no answer within " +
                                     std::to_string(o.command_timeout.count()) + " ms (killed)");
  }
  if (r.too_large) {
    return InvalidArgument(what + ": printed more than " + std::to_string(o.max_bytes) + " bytes");
  }
  const std::string& err = r.err;
  std::string err_tail = err.size() > kStderrKept ? err.substr(err.size() - kStderrKept) : err;
  while (!err_tail.empty() && (err_tail.back() == '\n' || err_tail.back() == '\r')) {
    err_tail.pop_back();
  }
  std::string detail = err_tail.empty() ? "" : ": " + QuoteUntrusted(err_tail, 200);
  if (WIFSIGNALED(status)) {
    return Error(Code::kUnavailable,
                 what + " was killed by signal " + std::to_string(WTERMSIG(status)) + detail);
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    return Error(Code::kUnavailable,
                 what + " exited with status " + std::to_string(WEXITSTATUS(status)) + detail);
  }
  return std::move(r.out);
}

Result<std::string> FromCommand(const std::string& cmd, const SecretSourceOptions& o) {
  const std::string what = "command " + Quoted(cmd);
  int out_pipe[2], err_pipe[2];
  if (pipe2(out_pipe, O_CLOEXEC) != 0) return Errno(what + ": pipe");
  UniqueFd out_r(out_pipe[0]), out_w(out_pipe[1]);
  if (pipe2(err_pipe, O_CLOEXEC) != 0) return Errno(what + ": pipe");
  UniqueFd err_r(err_pipe[0]), err_w(err_pipe[1]);
  WARD_ASSIGN_OR_RETURN(const pid_t pid, SpawnShell(what, cmd, out_w.get(), err_w.get()));
  out_w.reset();
  err_w.reset();

  const Clock::time_point deadline = Clock::now() + o.command_timeout;
  CommandOutput r = ReadOutput(out_r.get(), err_r.get(), deadline, o.max_bytes);
  if (!r.timed_out && !r.too_large) r.timed_out = !WaitForExit(pid, deadline);
  // Whatever it left behind in its group goes too (a daemonised helper holding our pipe).
  ::kill(-pid, SIGKILL);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return CommandResult(what, o, std::move(r), status);
}

}  // namespace

Result<std::string> CleanSecret(std::string raw) {
  size_t b = 0, e = raw.size();
  auto space = [](char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; };
  while (b < e && space(raw[b])) ++b;
  while (e > b && space(raw[e - 1])) --e;
  std::string v = raw.substr(b, e - b);
  if (v.empty()) return InvalidArgument("the secret is empty");
  for (char c : v) {
    unsigned char u = static_cast<unsigned char>(c);
    if (u == '\n' || u == '\r') return InvalidArgument("the secret spans more than one line");
    if (u < 0x20 && u != '\t') return InvalidArgument("the secret contains a control character");
    if (u == 0x7f) return InvalidArgument("the secret contains a control character");
  }
  return v;
}

Result<std::string> FetchSecret(const policy::CredentialSource& from,
                                const SecretSourceOptions& options) {
  Result<std::string> raw = Status(Code::kInternal, "unreachable");
  std::string where;
  switch (from.kind) {
    case policy::CredentialSource::Kind::kEnv:
      raw = FromEnv(from.value, options);
      where = "$" + from.value;
      break;
    case policy::CredentialSource::Kind::kFile:
      raw = FromFile(from.value, options);
      where = "file:" + from.value;
      break;
    case policy::CredentialSource::Kind::kCommand:
      raw = FromCommand(from.value, options);
      where = "command " + Quoted(from.value);
      break;
  }
  if (!raw.ok()) return raw;
  auto clean = CleanSecret(std::move(raw).value());
  if (!clean.ok()) return Status(clean.status().code(), where + ": " + clean.status().message());
  return clean;
}

}  // namespace ward::net
