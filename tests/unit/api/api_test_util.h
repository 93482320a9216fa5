// Shared fixtures for the api unit tests: temporary directories, a policy loaded from the
// built-in profiles, an event loop runner, and a fake `ward run` (a shell script that runs the
// command after "--" and reports like --json-status) so execs are tested without privileges.
#pragma once

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>
#include <asio.hpp>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>

#include "common/status.h"
#include "policy/loader.h"
#include "policy/policy.h"

namespace ward::api::testing {

class TempDir {
 public:
  TempDir() {
    char tmpl[] = "/tmp/ward-api-test.XXXXXX";
    char* p = mkdtemp(tmpl);
    EXPECT_NE(p, nullptr);
    path_ = p ? p : "/nonexistent";
    // Canonical, so it matches what the daemon computes with realpath.
    path_ = std::filesystem::canonical(path_).string();
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  const std::string& path() const { return path_; }
  std::string operator/(const std::string& rel) const { return path_ + "/" + rel; }

 private:
  std::string path_;
};

inline void Write(const std::string& path, const std::string& text, int mode = 0644) {
  std::ofstream(path, std::ios::binary) << text;
  chmod(path.c_str(), mode);
}

inline std::string Slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// The effective policy of the built-in `profile` for `workspace` (no user files).
inline Result<policy::Policy> LoadTestPolicy(const std::string& workspace,
                                             policy::RunFlags flags = policy::RunFlags()) {
  policy::Context ctx{"/nonexistent-home", workspace, workspace, ""};
  return policy::LoadPolicy(flags, ctx, [](const std::string& p) -> Result<std::string> {
    return NotFound(p + ": no such file");
  });
}

// Runs the loop until `done()` or the timeout; returns done().
inline bool RunUntil(asio::io_context& io, const std::function<bool()>& done,
                     std::chrono::milliseconds timeout = std::chrono::seconds(10)) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!done() && std::chrono::steady_clock::now() < deadline) {
    io.restart();
    io.run_for(std::chrono::milliseconds(20));
  }
  return done();
}

// A stand-in for `ward run`: skips options up to "--", runs the rest, forwards TERM/INT, and
// writes the outcome to fd 3 like --json-status. Special commands: `__die__` kills the runner
// before any status; `__refuse__` reports a refusal; `__audit_fail__` reports an audit trail
// that could not be written; `__labels__` prints the --label options.
// Like `ward run`, it unblocks the signals it forwards, which the daemon starts it with
// blocked (a shell cannot, hence the detour through perl, part of every Debian system).
inline std::string WriteFakeRunner(const std::string& dir) {
  std::string path = dir + "/fake-ward";
  Write(path,
        "#!/bin/sh\n"
        "if [ \"$1\" = __unblocked__ ]; then shift; else\n"
        "  exec perl -MPOSIX -e 'sigprocmask(SIG_SETMASK, POSIX::SigSet->new) or die;"
        " exec \"/bin/sh\", @ARGV or die' \"$0\" __unblocked__ \"$@\"\n"
        "fi\n"
        "labels=''\n"
        "while [ $# -gt 0 ] && [ \"$1\" != \"--\" ]; do\n"
        "  case \"$1\" in --label=*) labels=\"$labels ${1#--label=}\";; esac\n"
        "  shift\n"
        "done\n"
        "shift\n"
        "case \"$1\" in\n"
        "  __die__) kill -9 $$;;\n"
        "  __refuse__) echo 'ward: refused' >&2\n"
        "    printf '{\"status\":\"refused\",\"exit_code\":125,\"message\":\"policy says no\"}\\n' "
        ">&3\n"
        "    exit 125;;\n"
        "  __audit_fail__) echo 'ward: the audit trail could not be written' >&2\n"
        "    printf '{\"status\":\"audit_failed\",\"exit_code\":125,\"stage\":\"audit\","
        "\"errno\":28,\"message\":\"the audit trail could not be written, so the sandbox was "
        "stopped\"}\\n' >&3\n"
        "    exit 125;;\n"
        "  __labels__) echo \"$labels\"; printf '{\"status\":\"exited\",\"exit_code\":0}\\n' >&3;"
        " exit 0;;\n"
        "esac\n"
        // A background job's stdin would be /dev/null: hand it over through fd 4.
        "exec 4<&0\n"
        "\"$@\" 0<&4 4<&- 3>&- &\n"
        "child=$!\n"
        "trap 'kill -TERM $child 2>/dev/null' TERM\n"
        "trap 'kill -INT $child 2>/dev/null' INT\n"
        "while :; do\n"
        "  wait $child; rc=$?\n"
        "  kill -0 $child 2>/dev/null || break\n"
        "done\n"
        "if [ $rc -gt 128 ]; then\n"
        "  printf '{\"status\":\"signaled\",\"exit_code\":%d,\"signal\":%d}\\n' $rc "
        "$((rc - 128)) >&3\n"
        "else\n"
        "  printf '{\"status\":\"exited\",\"exit_code\":%d,\"signal\":null}\\n' $rc >&3\n"
        "fi\n"
        "exit $rc\n",
        0755);
  return path;
}

}  // namespace ward::api::testing
