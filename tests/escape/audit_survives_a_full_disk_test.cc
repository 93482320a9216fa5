// The audit trail survives a full disk. The workspace and the state directory share one small
// file system (a tmpfs this test mounts in a mount namespace of its own; in a user namespace
// for the unprivileged variant), as ~/project and ~/.local/state usually do. A sandbox that
// fills it, makes 200 denied requests and frees it again cannot keep one of them out of the
// trail (the log's reserve); where the reserve cannot hold them, or the trail's own disk is
// full, the sandbox is stopped and `ward run` exits 125 (fail closed), never running on
// unrecorded.
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>

#include "audit/sessions.h"
#include "harness.h"

namespace ward::test {
namespace {

constexpr int kSkip = 77;

bool WriteProc(const char* path, const std::string& text) {
  int fd = open(path, O_WRONLY | O_CLOEXEC);
  if (fd < 0) return false;
  bool ok = write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  close(fd);
  return ok;
}

// Writes `path` until the file system is full.
void FillDisk(const std::string& path) {
  int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  std::string chunk(64 * 1024, 'f');
  while (fd >= 0 && write(fd, chunk.data(), chunk.size()) > 0) {
  }
  if (fd >= 0) close(fd);
}

class AuditFullDisk : public SandboxTest {
 protected:
  // Runs `body` in a child with its own mount namespace (and, unprivileged, its own user
  // namespace with the same uid) in which `dir` is a fresh tmpfs of `size`. The body runs
  // ward and returns what the test checks, as JSON; the tmpfs is gone with the child.
  nlohmann::json OnSmallDisk(const std::string& dir, const std::string& size,
                             const std::function<nlohmann::json()>& body) {
    MakeDirs(dir, 0755);
    int fds[2];
    EXPECT_EQ(pipe2(fds, O_CLOEXEC), 0);
    uid_t uid = getuid();
    gid_t gid = getgid();
    pid_t pid = fork();
    if (pid == 0) {
      close(fds[0]);
      auto report = [&](const std::string& s, int code) {
        (void)!write(fds[1], s.data(), s.size());
        _exit(code);
      };
      int flags = CLONE_NEWNS | (RunningAsRoot() ? 0 : CLONE_NEWUSER);
      if (unshare(flags) != 0) report(std::string("unshare: ") + strerror(errno), kSkip);
      if (!RunningAsRoot()) {
        // Dropped from root by the harness, the process is not dumpable: its /proc files,
        // uid_map included, would stay root's.
        prctl(PR_SET_DUMPABLE, 1);
        WriteProc("/proc/self/setgroups", "deny");
        if (!WriteProc("/proc/self/uid_map",
                       std::to_string(uid) + " " + std::to_string(uid) + " 1") ||
            !WriteProc("/proc/self/gid_map",
                       std::to_string(gid) + " " + std::to_string(gid) + " 1")) {
          report(std::string("id maps: ") + strerror(errno), kSkip);
        }
      }
      if (mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0 ||
          mount("ward-audit-disk", dir.c_str(), "tmpfs", MS_NOSUID | MS_NODEV,
                ("size=" + size + ",mode=0755").c_str()) != 0) {
        report(std::string("mount tmpfs: ") + strerror(errno), kSkip);
      }
      nlohmann::json out;
      try {
        out = body();
      } catch (const std::exception& e) {
        out = {{"exception", e.what()}};
      }
      report(out.dump(), 0);
    }
    close(fds[1]);
    std::string text;
    char buf[65536];
    ssize_t n;
    while ((n = read(fds[0], buf, sizeof buf)) > 0) text.append(buf, static_cast<size_t>(n));
    close(fds[0]);
    int status = 0;
    EXPECT_EQ(waitpid(pid, &status, 0), pid);
    if (WIFEXITED(status) && WEXITSTATUS(status) == kSkip) {
      skipped_ = "no tmpfs of our own here: " + text;
      return nullptr;
    }
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status << " " << text;
    nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
    EXPECT_FALSE(j.is_discarded()) << text;
    EXPECT_FALSE(j.contains("exception")) << text;
    return j.is_discarded() ? nlohmann::json(nullptr) : j;
  }

  // A skip that WARD_TEST_STRICT=1 turns into a failure.
  bool Skipped() {
    if (skipped_.empty()) return false;
    const char* strict = getenv("WARD_TEST_STRICT");
    if (strict != nullptr && std::string(strict) == "1") {
      ADD_FAILURE() << skipped_ << " (WARD_TEST_STRICT=1 turns this skip into a failure)";
    }
    return true;
  }

  RunOptions In(const std::string& ws, const std::string& state) {
    RunOptions o = Defaults();
    o.cwd = ws;
    o.env["XDG_STATE_HOME"] = state;
    o.timeout_s = 120;
    return o;
  }

  // What the newest session under `state` holds, and what `ward audit verify` says of it.
  static nlohmann::json Trail(const std::string& state, const RunOptions& o) {
    nlohmann::json j = {{"sessions", 0}, {"denials", 0}, {"records", 0}, {"last", ""}};
    auto sessions = audit::ListSessions(state + "/ward");
    j["sessions"] = sessions.size();
    if (sessions.empty()) return j;
    std::ifstream in(sessions[0].dir + "/events.jsonl");
    std::string line;
    int records = 0, denials = 0;
    std::string last;
    while (std::getline(in, line)) {
      nlohmann::json rec = nlohmann::json::parse(line, nullptr, false);
      if (rec.is_discarded()) continue;
      ++records;
      last = rec.value("type", "");
      if (last == "net.deny") ++denials;
    }
    j["records"] = records;
    j["denials"] = denials;
    j["last"] = last;
    struct stat st {};
    stat((sessions[0].dir + "/events.jsonl").c_str(), &st);
    j["log_allocated_after_run"] = st.st_blocks * 512;
    RunResult v = RunWard({"audit", "verify", sessions[0].id}, o);
    j["verify_status"] = v.status;
    j["verify"] = v.out + v.err;
    // The session ended: `ward audit` (or the next run) gave its reserve back.
    stat((sessions[0].dir + "/events.jsonl").c_str(), &st);
    j["log_size"] = st.st_size;
    j["log_allocated"] = st.st_blocks * 512;
    return j;
  }

  static nlohmann::json Run(const RunResult& r, double seconds) {
    return {{"status", r.status}, {"out", r.out}, {"err", r.err}, {"seconds", seconds}};
  }

  // `ward run [opts] -n allowed.example -- sh -c SCRIPT` (the proxy on; P is the probe).
  RunResult RunScript(const std::string& script, const std::vector<std::string>& opts,
                      const RunOptions& o, double* seconds) {
    std::vector<std::string> args = {"run", "-r", StageDir(), "-n", "allowed.example"};
    args.insert(args.end(), opts.begin(), opts.end());
    args.insert(args.end(), {"--", "/bin/sh", "-c", "P=" + ProbeBin() + "; " + script});
    auto start = std::chrono::steady_clock::now();
    RunResult r = RunWard(args, o);
    *seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return r;
  }

  std::string skipped_;
};

// The sandbox's own attack: fill the shared disk, make 200 denied requests, free the disk,
// exit 0. Every denial and the session's end are in the trail, and it verifies intact.
TEST_F(AuditFullDisk, ASandboxThatFillsTheSharedDiskCannotKeepItsDenialsOutOfTheTrail) {
  std::string disk = root_->path() + "/disk";
  nlohmann::json j = OnSmallDisk(disk, "8m", [&] {
    MakeDirs(disk + "/ws", 0755);
    MakeDirs(disk + "/state", 0755);
    RunOptions o = In(disk + "/ws", disk + "/state");
    double s = 0;
    RunResult r =
        RunScript("$P fill filler 100000; $P proxy-deny 200; $P unlink filler; exit 0", {}, o, &s);
    return nlohmann::json{{"run", Run(r, s)}, {"trail", Trail(disk + "/state", o)}};
  });
  if (Skipped()) GTEST_SKIP() << skipped_;
  ASSERT_TRUE(j.is_object());
  const auto& run = j["run"];
  const auto& trail = j["trail"];
  EXPECT_EQ(run["status"], 0) << run.dump();
  // Positive controls: the disk the trail lives on really was full, and the proxy really
  // refused all 200 requests.
  std::string out = run["out"];
  EXPECT_NE(out.find("err ENOSPC"), std::string::npos) << out;
  EXPECT_NE(out.find("ok denied=200"), std::string::npos) << out;
  EXPECT_NE(out.find("ok filler"), std::string::npos) << out;  // and freed it again
  EXPECT_EQ(trail["denials"], 200) << trail.dump();
  EXPECT_EQ(trail["last"], "session.end") << trail.dump();
  EXPECT_EQ(trail["verify_status"], 0) << trail.dump();
  EXPECT_NE(trail["verify"].get<std::string>().find("intact"), std::string::npos) << trail.dump();
  // The reserve outlives the run (a later session or `ward audit` gives it back, off the run's
  // path), and is then given back: the log holds its content and no more than a page.
  EXPECT_GT(trail["log_allocated_after_run"].get<int64_t>(),
            trail["log_size"].get<int64_t>() + 4096)
      << trail.dump();
  EXPECT_LE(trail["log_allocated"].get<int64_t>(), trail["log_size"].get<int64_t>() + 4096)
      << trail.dump();
}

// With a reserve too small for the denials the same attack ends the run: 125, stderr says
// why and what was not recorded, the command never got to its end, and what was recorded
// verifies (unterminated: no session.end).
TEST_F(AuditFullDisk, WhenTheReserveCannotHoldTheDenialsTheSandboxIsStopped) {
  std::string disk = root_->path() + "/disk";
  nlohmann::json j = OnSmallDisk(disk, "8m", [&] {
    MakeDirs(disk + "/ws", 0755);
    MakeDirs(disk + "/state", 0755);
    RunOptions o = In(disk + "/ws", disk + "/state");
    double s = 0;
    RunResult r =
        RunScript("$P fill filler 100000; $P proxy-deny 200; $P sleep 60; $P unlink filler; exit 0",
                  {"--audit-reserve", "4k"}, o, &s);
    nlohmann::json res = {{"run", Run(r, s)},
                          {"trail", Trail(disk + "/state", o)},
                          {"filler_left", PathExists(disk + "/ws/filler")}};
    unlink((disk + "/ws/filler").c_str());
    // Positive control: the same run with space enough (no filling) runs to its end.
    r = RunScript("$P proxy-deny 200; exit 0", {"--audit-reserve", "4k"}, o, &s);
    res["control"] = {{"run", Run(r, s)}, {"trail", Trail(disk + "/state", o)}};
    return res;
  });
  if (Skipped()) GTEST_SKIP() << skipped_;
  ASSERT_TRUE(j.is_object());
  const auto& run = j["run"];
  const auto& trail = j["trail"];
  EXPECT_EQ(run["status"], 125) << run.dump();
  EXPECT_LT(run["seconds"].get<double>(), 30) << "the sandbox was not stopped: " << run.dump();
  EXPECT_TRUE(j["filler_left"].get<bool>()) << "the command ran to its end";
  std::string err = run["err"];
  EXPECT_NE(err.find("the audit trail could not be written, so the sandbox was stopped"),
            std::string::npos)
      << err;
  EXPECT_NE(err.find("events.jsonl"), std::string::npos) << err;
  EXPECT_NE(err.find(strerror(ENOSPC)), std::string::npos) << err;
  EXPECT_NE(err.find("not recorded: "), std::string::npos) << err;
  EXPECT_NE(err.find("net.deny"), std::string::npos) << err;
  EXPECT_NE(err.find("session.end"), std::string::npos) << err;
  EXPECT_NE(err.find("XDG_STATE_HOME"), std::string::npos) << err;  // the fix
  EXPECT_LT(trail["denials"].get<int>(), 200) << trail.dump();
  EXPECT_NE(trail["last"], "session.end") << trail.dump();
  EXPECT_EQ(trail["verify_status"], 0) << trail.dump();
  EXPECT_NE(trail["verify"].get<std::string>().find("unterminated"), std::string::npos)
      << trail.dump();

  const auto& control = j["control"];
  EXPECT_EQ(control["run"]["status"], 0) << control.dump();
  EXPECT_EQ(control["trail"]["denials"], 200) << control.dump();
  EXPECT_EQ(control["trail"]["last"], "session.end") << control.dump();
  EXPECT_EQ(control["trail"]["verify_status"], 0) << control.dump();
}

// The trail's own disk fills from outside while the sandbox runs (here: a state directory on a
// file system of its own, without a reserve). The next record stops the sandbox; a session.end
// that cannot be written makes the run 125 too. Never "recording stopped, exit 0".
class AuditTrailDiskFills : public AuditFullDisk {
 protected:
  // Bytes: more than a net.deny record, fewer than a session.end record.
  static constexpr off_t kLessThanASessionEnd = 600;

  // Starts `ward run --audit-reserve 0 -- sh -c 'touch ready; wait while hold exists; THEN'`
  // with the state on `disk`, fills `disk` once the command is ready (when `fill`), lets the
  // command go on, and reports the run and the trail. The log's last page has room that a full
  // disk still lets it write into: with `pad`, the command makes denials (one per `pad` file
  // the test leaves) until less room is left there than any session.end takes.
  nlohmann::json FillWhileRunning(const std::string& then, bool fill, bool pad = false) {
    std::string disk = root_->path() + "/disk";
    std::string out_dir = root_->path() + "/out";
    MakeDirs(out_dir, 0777);
    WriteFile(ws_ + "/hold", "");
    return OnSmallDisk(disk, "1m", [&] {
      RunOptions o = In(ws_, disk);
      std::vector<std::string> argv = {
          WardBin(),
          "run",
          "-r",
          StageDir(),
          "-n",
          "allowed.example",
          "--audit-reserve",
          "0",
          "--",
          "/bin/sh",
          "-c",
          "P=" + ProbeBin() +
              "; : > ready; while [ -e hold ]; do"
              " if [ -e pad ]; then $P proxy-deny 1 >/dev/null; $P unlink pad >/dev/null; fi;"
              " sleep 0.02; done; " +
              then};
      auto start = std::chrono::steady_clock::now();
      pid_t pid = fork();
      if (pid == 0) {
        if (chdir(o.cwd.c_str()) != 0) _exit(126);
        std::vector<std::string> envs;
        for (auto& [k, v] : o.env) envs.push_back(k + "=" + v);
        std::vector<char*> envp, args;
        for (auto& e : envs) envp.push_back(e.data());
        envp.push_back(nullptr);
        for (auto& a : argv) args.push_back(a.data());
        args.push_back(nullptr);
        int null = open("/dev/null", O_RDWR);
        int out = open((out_dir + "/stdout").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
        int err = open((out_dir + "/stderr").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
        dup2(null, 0);
        dup2(out, 1);
        dup2(err, 2);
        execve(args[0], args.data(), envp.data());
        _exit(127);
      }
      // Ready: the command waits, and the trail holds session.start and exec.
      bool ready = false;
      for (int i = 0; i < 600 && !ready; ++i) {
        auto sessions = audit::ListSessions(disk + "/ward");
        ready = PathExists(ws_ + "/ready") && !sessions.empty() && sessions[0].records >= 2;
        if (!ready) std::this_thread::sleep_for(std::chrono::milliseconds(50));
      }
      for (int i = 0; pad && ready && i < 40; ++i) {
        auto sessions = audit::ListSessions(disk + "/ward");
        std::string log = sessions[0].dir + "/events.jsonl";
        struct stat st {};
        stat(log.c_str(), &st);
        if ((4096 - st.st_size % 4096) % 4096 < kLessThanASessionEnd) break;
        WriteFile(ws_ + "/pad", "");
        struct stat now = st;
        for (int k = 0; k < 200 && (PathExists(ws_ + "/pad") || now.st_size == st.st_size); ++k) {
          std::this_thread::sleep_for(std::chrono::milliseconds(25));
          stat(log.c_str(), &now);
        }
      }
      if (fill) FillDisk(disk + "/filler");
      unlink((ws_ + "/hold").c_str());
      int status = 0;
      for (int i = 0; i < 1200; ++i) {  // 60 s
        if (waitpid(pid, &status, WNOHANG) == pid) break;
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
        if (i == 1199) {
          kill(pid, SIGKILL);
          waitpid(pid, &status, 0);
        }
      }
      double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      RunResult r;
      r.status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      r.out = ReadFile(out_dir + "/stdout");
      r.err = ReadFile(out_dir + "/stderr");
      unlink((disk + "/filler").c_str());
      return nlohmann::json{{"ready", ready}, {"run", Run(r, s)}, {"trail", Trail(disk, o)}};
    });
  }
};

TEST_F(AuditTrailDiskFills, TheNextRecordStopsTheSandbox) {
  nlohmann::json j = FillWhileRunning("$P proxy-deny 50; $P sleep 60; exit 0", /*fill=*/true);
  if (Skipped()) GTEST_SKIP() << skipped_;
  ASSERT_TRUE(j.is_object());
  ASSERT_TRUE(j["ready"].get<bool>()) << j.dump();
  const auto& run = j["run"];
  EXPECT_EQ(run["status"], 125) << run.dump();
  EXPECT_LT(run["seconds"].get<double>(), 30) << "the sandbox was not stopped: " << run.dump();
  std::string err = run["err"];
  EXPECT_NE(err.find("the audit trail could not be written, so the sandbox was stopped"),
            std::string::npos)
      << err;
  EXPECT_NE(err.find("not recorded: "), std::string::npos) << err;
  EXPECT_NE(err.find("net.deny"), std::string::npos) << err;
  EXPECT_EQ(j["trail"]["verify_status"], 0) << j["trail"].dump();
  EXPECT_NE(j["trail"]["verify"].get<std::string>().find("unterminated"), std::string::npos)
      << j["trail"].dump();
}

TEST_F(AuditTrailDiskFills, ASessionEndThatCannotBeWrittenFailsTheRun) {
  nlohmann::json j = FillWhileRunning("exit 0", /*fill=*/true, /*pad=*/true);
  if (Skipped()) GTEST_SKIP() << skipped_;
  ASSERT_TRUE(j.is_object());
  ASSERT_TRUE(j["ready"].get<bool>()) << j.dump();
  const auto& run = j["run"];
  EXPECT_EQ(run["status"], 125) << run.dump();
  std::string err = run["err"];
  EXPECT_NE(err.find("the audit trail could not be written"), std::string::npos) << err;
  EXPECT_NE(err.find("not recorded: 1 record"), std::string::npos) << err;
  EXPECT_NE(err.find("session.end"), std::string::npos) << err;
  EXPECT_NE(j["trail"]["last"], "session.end") << j["trail"].dump();
  EXPECT_NE(j["trail"]["verify"].get<std::string>().find("unterminated"), std::string::npos)
      << j["trail"].dump();
}

// Positive control for both: the same runs without filling the disk end as the command did.
TEST_F(AuditTrailDiskFills, WithoutFillingBothRunToTheirEnd) {
  nlohmann::json j = FillWhileRunning("$P proxy-deny 5; exit 0", /*fill=*/false);
  if (Skipped()) GTEST_SKIP() << skipped_;
  ASSERT_TRUE(j.is_object());
  EXPECT_EQ(j["run"]["status"], 0) << j.dump();
  EXPECT_EQ(j["trail"]["denials"], 5) << j.dump();
  EXPECT_EQ(j["trail"]["last"], "session.end") << j.dump();
  EXPECT_NE(j["trail"]["verify"].get<std::string>().find("intact"), std::string::npos) << j.dump();
}

// A trail without a reserve on the file system the sandbox writes: refused before anything
// runs, naming both and the fix. A full disk before the start: refused as well. Controls: the
// same run with a reserve, and on a disk with room.
TEST_F(AuditFullDisk, NoReserveOnASharedDiskAndAFullDiskAreRefusedAtTheStart) {
  std::string disk = root_->path() + "/disk";
  nlohmann::json j = OnSmallDisk(disk, "8m", [&] {
    MakeDirs(disk + "/ws", 0755);
    MakeDirs(disk + "/state", 0755);
    RunOptions o = In(disk + "/ws", disk + "/state");
    double s = 0;
    nlohmann::json res;
    RunResult r = RunScript("$P write ran; exit 0", {"--audit-reserve", "0"}, o, &s);
    res["shared"] = {{"run", Run(r, s)}, {"ran", PathExists(disk + "/ws/ran")}};
    r = RunScript("$P write ran; exit 0", {}, o, &s);
    res["shared_control"] = {{"run", Run(r, s)}, {"ran", PathExists(disk + "/ws/ran")}};
    unlink((disk + "/ws/ran").c_str());
    int before = static_cast<int>(audit::ListSessions(disk + "/state/ward").size());
    FillDisk(disk + "/ws/filler");
    r = RunScript("$P write ran; exit 0", {}, o, &s);
    res["full"] = {{"run", Run(r, s)},
                   {"ran", PathExists(disk + "/ws/ran")},
                   {"sessions_added",
                    static_cast<int>(audit::ListSessions(disk + "/state/ward").size()) - before}};
    return res;
  });
  if (Skipped()) GTEST_SKIP() << skipped_;
  ASSERT_TRUE(j.is_object());
  const auto& shared = j["shared"];
  EXPECT_EQ(shared["run"]["status"], 125) << shared.dump();
  EXPECT_FALSE(shared["ran"].get<bool>());
  std::string err = shared["run"]["err"];
  EXPECT_NE(err.find("has no reserve"), std::string::npos) << err;
  EXPECT_NE(err.find("/ws, which the sandbox can write"), std::string::npos) << err;
  EXPECT_NE(err.find("XDG_STATE_HOME"), std::string::npos) << err;
  EXPECT_EQ(j["shared_control"]["run"]["status"], 0) << j["shared_control"].dump();
  EXPECT_TRUE(j["shared_control"]["ran"].get<bool>());
  const auto& full = j["full"];
  EXPECT_EQ(full["run"]["status"], 125) << full.dump();
  EXPECT_FALSE(full["ran"].get<bool>());
  EXPECT_EQ(full["sessions_added"], 0) << full.dump();
  err = full["run"]["err"];
  EXPECT_NE(err.find("cannot write the audit trail"), std::string::npos) << err;
  EXPECT_NE(err.find(strerror(ENOSPC)), std::string::npos) << err;
}

}  // namespace
}  // namespace ward::test
