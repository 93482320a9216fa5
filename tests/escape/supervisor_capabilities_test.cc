// Threat class I: the supervisor's threads that act on the sandbox's input (the event loop with
// the proxy, DNS stub and terminal; the creation guard; the resolver) hold no capability once
// the command runs, also when ward runs as root: whatever they are steered into, they cannot do
// on the host what the sandbox could not. Checked from outside, thread by thread, in /proc.
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "harness.h"

namespace ward::test {
namespace {

// "CapEff:" of /proc/PID/task/TID/status for every thread of `pid`, keyed by the thread's name.
std::map<std::string, std::string> ThreadCaps(pid_t pid) {
  std::map<std::string, std::string> out;
  const std::string task = "/proc/" + std::to_string(pid) + "/task";
  DIR* d = opendir(task.c_str());
  if (!d) return out;
  while (struct dirent* e = readdir(d)) {
    if (e->d_name[0] == '.') continue;
    std::ifstream f(task + "/" + e->d_name + "/status");
    std::string line, name, eff;
    while (std::getline(f, line)) {
      if (line.rfind("Name:", 0) == 0) name = line.substr(6);
      if (line.rfind("CapEff:", 0) == 0) eff = line.substr(8);
    }
    out[name + "/" + e->d_name] = eff;
  }
  closedir(d);
  return out;
}

class SupervisorCapabilities : public SandboxTest {};

TEST_F(SupervisorCapabilities, ThreadsServingTheSandboxHoldNone) {
  // Control: this process's own capabilities are read the same way (as root: not empty).
  if (RunningAsRoot()) {
    bool any = false;
    for (const auto& [name, eff] : ThreadCaps(getpid())) any |= eff != "0000000000000000";
    ASSERT_TRUE(any) << "cannot read capabilities from /proc";
  }
  std::vector<std::string> args = {WardBin(), "run",     "-n", "localhost",
                                   "--",      "/bin/sh", "-c", "touch started; sleep 3"};
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  std::vector<std::string> env;
  for (const auto& [k, v] : BaseEnv(home_)) env.push_back(k + "=" + v);
  std::vector<char*> envp;
  for (auto& e : env) envp.push_back(e.data());
  envp.push_back(nullptr);
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    if (chdir(ws_.c_str()) != 0) _exit(126);
    int null = open("/dev/null", O_RDWR);
    dup2(null, 0);
    dup2(null, 1);
    execve(argv[0], argv.data(), envp.data());
    _exit(127);
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (!PathExists(ws_ + "/started") && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_TRUE(PathExists(ws_ + "/started"));
  std::map<std::string, std::string> caps = ThreadCaps(pid);
  kill(pid, SIGTERM);
  int status = 0;
  waitpid(pid, &status, 0);
  ASSERT_FALSE(caps.empty());
  for (const auto& [name, eff] : caps) {
    EXPECT_EQ(eff, "0000000000000000") << name;
  }
}

}  // namespace
}  // namespace ward::test
