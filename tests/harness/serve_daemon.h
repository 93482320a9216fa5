// A `ward serve` process for the integration tests (serve_test.cc, serve_approvals_test.cc):
// started with --socket <dir>/ward.sock, its stderr in <dir>/serve.log, ready once a client
// connects. Header-only, like the other shared fixtures here.
#pragma once

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "../../clients/cpp/ward_client.h"
#include "harness.h"

namespace ward::test {

// A `ward serve` process owned by the test.
class ServeDaemon {
 public:
  // `extra`: more `ward serve` options (e.g. --workspace-anyway).
  ServeDaemon(std::string dir, std::map<std::string, std::string> env, std::string cwd,
              std::vector<std::string> extra = {})
      : dir_(std::move(dir)),
        env_(std::move(env)),
        cwd_(std::move(cwd)),
        extra_(std::move(extra)) {}
  ~ServeDaemon() { Stop(); }

  std::string socket() const { return dir_ + "/ward.sock"; }
  std::string log() const { return ReadFile(dir_ + "/serve.log"); }
  pid_t pid() const { return pid_; }

  bool Start() {
    std::vector<std::string> env_strs;
    for (const auto& [k, v] : env_) env_strs.push_back(k + "=" + v);
    std::vector<char*> envp;
    for (auto& s : env_strs) envp.push_back(s.data());
    envp.push_back(nullptr);
    std::vector<std::string> args = {WardBin(), "serve", "--socket", socket()};
    args.insert(args.end(), extra_.begin(), extra_.end());
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    std::string log_path = dir_ + "/serve.log";
    pid_ = fork();
    if (pid_ == 0) {
      int log = open(log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
      int null = open("/dev/null", O_RDWR);
      dup2(null, 0);
      dup2(null, 1);
      dup2(log, 2);
      if (chdir(cwd_.c_str()) != 0) _exit(126);
      execve(argv[0], argv.data(), envp.data());
      _exit(127);
    }
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(15);
    while (std::chrono::steady_clock::now() < deadline) {
      client::Client c(socket());
      if (c.Connect()) return true;
      int st;
      if (waitpid(pid_, &st, WNOHANG) == pid_) {
        pid_ = -1;
        return false;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return false;
  }

  // Sends `sig` and reaps the daemon.
  void Kill(int sig) {
    if (pid_ <= 0) return;
    kill(pid_, sig);
    int st;
    waitpid(pid_, &st, 0);
    pid_ = -1;
  }

  void Stop() {
    if (pid_ <= 0) return;
    kill(pid_, SIGTERM);
    for (int i = 0; i < 500; ++i) {
      int st;
      if (waitpid(pid_, &st, WNOHANG) == pid_) {
        pid_ = -1;
        return;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    Kill(SIGKILL);
  }

 private:
  std::string dir_;
  std::map<std::string, std::string> env_;
  std::string cwd_;
  std::vector<std::string> extra_;
  pid_t pid_ = -1;
};

}  // namespace ward::test
