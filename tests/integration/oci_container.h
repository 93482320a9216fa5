// The fixture of the `ward oci` tests with a real container: the test process stands where an
// engine's conmon or shim stands (a child subreaper, running `ward oci` with the container's
// stdio in files), so it adopts the container's init when `create` exits, reaps it, and reads
// the container's exit status from it. The image is made here: busybox and a few files.
#pragma once

#include <fcntl.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "harness.h"

namespace ward::test {

class OciContainerTest : public SandboxTest {
 public:
  using Json = nlohmann::json;

 protected:
  void SetUp() override {
    SandboxTest::SetUp();
    ASSERT_EQ(prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0), 0);
    bundle_ = root_->path() + "/bundle";
    state_ = root_->path() + "/state";
    MakeDirs(bundle_ + "/rootfs/bin");
    MakeDirs(bundle_ + "/rootfs/etc");
    std::filesystem::copy_file("/bin/busybox", bundle_ + "/rootfs/bin/busybox");
    ASSERT_EQ(symlink("busybox", (bundle_ + "/rootfs/bin/sh").c_str()), 0);
    WriteFile(bundle_ + "/rootfs/etc/hosts", "127.0.0.1 localhost\n");
  }

  // config.json running `sh -c SCRIPT` as the test's own user.
  void Config(const std::string& script, Json extra = Json::object()) {
    Json c = {{"ociVersion", "1.0.2"},
              {"root", {{"path", "rootfs"}}},
              {"hostname", "box"},
              {"process",
               {{"args", {"/bin/sh", "-c", script}},
                {"env", {"PATH=/bin"}},
                {"cwd", "/"},
                {"user", {{"uid", getuid()}, {"gid", getgid()}}}}}};
    c.merge_patch(extra);
    WriteFile(bundle_ + "/config.json", c.dump());
  }

  // `ward oci ARGS` with the container's stdio: stdout and stderr go to files (an engine's
  // pipes would be held open by the container), so `create` returns while init waits.
  int Oci(const std::vector<std::string>& args) {
    std::vector<std::string> argv = {WardBin(), "oci",      "--root",
                                     state_,    "--config", root_->path() + "/none.toml"};
    argv.insert(argv.end(), args.begin(), args.end());
    const std::map<std::string, std::string> env = BaseEnv(home_);
    pid_t pid = fork();
    if (pid == 0) {
      int out = open((root_->path() + "/out").c_str(), O_WRONLY | O_CREAT | O_APPEND, 0600);
      int err = open((root_->path() + "/err").c_str(), O_WRONLY | O_CREAT | O_APPEND, 0600);
      int in = open("/dev/null", O_RDONLY);
      if (out < 0 || err < 0 || in < 0) _exit(120);
      dup2(in, 0);
      dup2(out, 1);
      dup2(err, 2);
      std::vector<char*> a;
      for (auto& s : argv) a.push_back(s.data());
      a.push_back(nullptr);
      std::vector<std::string> e;
      for (const auto& [k, v] : env) e.push_back(k + "=" + v);
      std::vector<char*> ep;
      for (auto& s : e) ep.push_back(s.data());
      ep.push_back(nullptr);
      execve(a[0], a.data(), ep.data());
      _exit(127);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }
  std::string Out() { return ReadFileOrEmpty(root_->path() + "/out"); }
  std::string Err() { return ReadFileOrEmpty(root_->path() + "/err"); }
  void ClearOut() {
    unlink((root_->path() + "/out").c_str());
    unlink((root_->path() + "/err").c_str());
  }
  static std::string ReadFileOrEmpty(const std::string& path) {
    std::ifstream in(path);
    return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  }

  Json State(const std::string& id) {
    RunResult r = RunWard({"oci", "--root", state_, "state", id}, Defaults());
    EXPECT_EQ(r.status, 0) << r.err;
    return Json::parse(r.out, nullptr, false);
  }

  pid_t PidFile() { return static_cast<pid_t>(std::stol(ReadFileOrEmpty(root_->path() + "/pid"))); }

  // `create` of the bundle as `id`, as an engine runs it: init's pid from the pid file, -1 when
  // create failed.
  pid_t Create(const std::string& id) {
    if (Oci({"create", "--bundle", bundle_, "--pid-file", root_->path() + "/pid", id}) != 0)
      return -1;
    return PidFile();
  }

  // Reaps the container's init as its engine would: its exit code, or 128+signal; -1 when it
  // has not ended within the time.
  static int ReapInit(pid_t pid, int seconds = 30) {
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
    while (std::chrono::steady_clock::now() < deadline) {
      int status = 0;
      pid_t w = waitpid(pid, &status, WNOHANG);
      if (w == pid) return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      if (w < 0) return -2;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return -1;
  }

  static pid_t ParentOf(pid_t pid) {
    std::ifstream in("/proc/" + std::to_string(pid) + "/status");
    std::string line;
    while (std::getline(in, line)) {
      if (line.rfind("PPid:", 0) == 0) return static_cast<pid_t>(std::stol(line.substr(5)));
    }
    return -1;
  }

  // An engine's console socket at `path`: listening, its fd.
  static int ConsoleSocket(const std::string& path) {
    const int listener = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un addr = {};
    addr.sun_family = AF_UNIX;
    std::snprintf(addr.sun_path, sizeof addr.sun_path, "%s", path.c_str());
    if (bind(listener, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
        listen(listener, 1) != 0) {
      close(listener);
      return -1;
    }
    return listener;
  }

  // The terminal's master the runtime hands the console socket `listener` (one connection,
  // one descriptor), -1 when none came.
  static int ReceiveMaster(int listener) {
    struct pollfd p = {listener, POLLIN, 0};
    if (poll(&p, 1, 30000) != 1) return -1;  // no runtime came: the test fails, it does not hang
    const int conn = accept4(listener, nullptr, nullptr, SOCK_CLOEXEC);
    if (conn < 0) return -1;
    char data[64];
    struct iovec iov = {data, sizeof data};
    alignas(struct cmsghdr) char cbuf[CMSG_SPACE(sizeof(int))];
    struct msghdr mh = {};
    mh.msg_iov = &iov;
    mh.msg_iovlen = 1;
    mh.msg_control = cbuf;
    mh.msg_controllen = sizeof cbuf;
    int master = -1;
    if (recvmsg(conn, &mh, 0) > 0) {
      struct cmsghdr* c = CMSG_FIRSTHDR(&mh);
      if (c != nullptr && c->cmsg_type == SCM_RIGHTS)
        std::memcpy(&master, CMSG_DATA(c), sizeof master);
    }
    close(conn);
    return master;
  }

  // Everything the terminal's other side wrote until it closed.
  static std::string ReadMaster(int master) {
    std::string out;
    if (master < 0) return out;
    char buf[256];
    ssize_t n;
    while ((n = read(master, buf, sizeof buf)) > 0) out.append(buf, static_cast<size_t>(n));
    close(master);
    return out;
  }

  bool StateDirExists(const std::string& id) {
    return access((state_ + "/" + id).c_str(), F_OK) == 0;
  }

  std::string bundle_, state_;
};

}  // namespace ward::test
