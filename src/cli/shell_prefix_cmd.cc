// `ward shell-prefix [run options] -- COMMAND`: runs one shell command line in a fresh sandbox,
// for Claude Code's CLAUDE_CODE_SHELL_PREFIX (which runs `PREFIX '<command line>'` for every
// shell command). Claude Code takes the prefix as one executable path, so
// `ward shell-prefix --install PATH [run options]` writes a wrapper script to point it at.
#include <fcntl.h>
#include <limits.h>
#include <sys/stat.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <cstring>

#include "api/claude.h"
#include "api/sandbox_spec.h"
#include "cli/commands.h"
#include "cli/run_options.h"

namespace ward::cli {
namespace {

struct ShellPrefixOptions {
  RunOptions run;
  std::string shell;
  std::string install;
  std::vector<std::string> words;
};

std::string SelfPath() {
  char buf[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) return "";
  return std::string(buf, static_cast<size_t>(n));
}

std::string DefaultShell() { return access("/bin/bash", X_OK) == 0 ? "/bin/bash" : "/bin/sh"; }

// The directories above `path` that are missing (~/.local/bin on a fresh account), made 0755
// like a bin directory of one's own.
bool MakeParentDirectories(const std::string& path) {
  for (size_t slash = path.find('/', 1); slash != std::string::npos;
       slash = path.find('/', slash + 1)) {
    const std::string dir = path.substr(0, slash);
    if (mkdir(dir.c_str(), 0755) == 0 || errno == EEXIST) continue;
    std::fprintf(stderr, "ward shell-prefix: cannot make the directory %s: %s\n", dir.c_str(),
                 std::strerror(errno));
    return false;
  }
  return true;
}

int Install(const ShellPrefixOptions& o) {
  if (o.install.empty() || o.install[0] != '/') {
    std::fprintf(stderr, "ward shell-prefix: --install needs an absolute path\n");
    return 125;
  }
  std::string self = SelfPath();
  if (self.empty() || self.find(" (deleted)") != std::string::npos) {
    std::fprintf(stderr, "ward shell-prefix: cannot tell where the ward binary is\n");
    return 1;
  }
  if (!MakeParentDirectories(o.install)) return 1;
  std::vector<std::string> args = RunOptionsToArgs(o.run);
  if (!o.shell.empty()) args.push_back("--shell=" + o.shell);
  std::string script = api::ShellPrefixWrapper(self, args);
  std::string tmp = o.install + ".tmp";
  int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0755);
  if (fd < 0 || write(fd, script.data(), script.size()) != static_cast<ssize_t>(script.size()) ||
      fchmod(fd, 0755) != 0 || close(fd) != 0 || rename(tmp.c_str(), o.install.c_str()) != 0) {
    std::fprintf(stderr, "ward shell-prefix: writing %s: %s\n", o.install.c_str(),
                 std::strerror(errno));
    unlink(tmp.c_str());
    return 1;
  }
  std::printf(
      "Wrote %s. Add to Claude Code's settings.json:\n"
      "  \"env\": { \"CLAUDE_CODE_SHELL_PREFIX\": \"%s\" }\n",
      o.install.c_str(), o.install.c_str());
  return 0;
}

int RunShellPrefix(const ShellPrefixOptions& o) {
  if (!o.install.empty()) return Install(o);
  if (o.words.empty()) {
    std::fprintf(stderr,
                 "ward shell-prefix: no command (usage: ward shell-prefix [OPTIONS] -- "
                 "'COMMAND LINE')\n");
    return 125;
  }
  std::vector<std::string> args = {"ward", "run"};
  for (auto& a : RunOptionsToArgs(o.run)) args.push_back(std::move(a));
  args.push_back("--");
  for (auto& w : api::ShellPrefixCommand(o.words, o.shell.empty() ? DefaultShell() : o.shell)) {
    args.push_back(std::move(w));
  }
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  execv("/proc/self/exe", argv.data());
  std::fprintf(stderr, "ward shell-prefix: cannot run ward: %s\n", std::strerror(errno));
  return 125;
}

}  // namespace

void AddShellPrefixCommand(CLI::App& app, int* exit_code) {
  auto o = std::make_shared<ShellPrefixOptions>();
  CLI::App* sub = app.add_subcommand(
      "shell-prefix",
      "Run one shell command line in a fresh sandbox (Claude Code's CLAUDE_CODE_SHELL_PREFIX)");
  AddRunOptions(sub, &o->run);
  sub->add_option("--shell", o->shell, "Shell that runs the command line (default: /bin/bash)");
  sub->add_option(
      "--install", o->install,
      "Write a wrapper script at PATH for CLAUDE_CODE_SHELL_PREFIX, with these options");
  sub->add_option("words", o->words, "'COMMAND LINE' (after --), or PROGRAM ARGS...");
  sub->positionals_at_end();
  sub->callback([o, exit_code] { *exit_code = RunShellPrefix(*o); });
}

}  // namespace ward::cli
