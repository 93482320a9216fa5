// A full or read-only disk: Create refuses cleanly and leaves nothing; a log that fills up
// mid-run reports it once and leaves no half-record; the reserve keeps a log writable on a disk
// that others fill, and is given back at the end. Runs unprivileged: a child process enters a
// new user + mount namespace and mounts a small tmpfs as the state directory.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>

#include "audit/session_log.h"
#include "audit/verify.h"
#include "audit_test_util.h"

namespace ward::audit {
namespace {

using testing::EventsPath;
using testing::ReadFile;
using testing::ReadLines;
using testing::TempDir;

constexpr int kSkip = 77;

bool WriteProc(const char* path, const std::string& text) {
  int fd = ::open(path, O_WRONLY | O_CLOEXEC);
  if (fd < 0) return false;
  bool ok = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  ::close(fd);
  return ok;
}

// Runs `body` in a child inside a new user+mount namespace where `dir` is a fresh tmpfs of
// `size` (read-only when asked). The body returns "" or a description of what failed.
void RunOnTinyTmpfs(const std::string& dir, const char* options, unsigned long flags,
                    const std::function<std::string()>& body) {
  int fds[2];
  ASSERT_EQ(::pipe2(fds, O_CLOEXEC), 0);
  uid_t uid = ::getuid();
  gid_t gid = ::getgid();
  pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    ::close(fds[0]);
    auto report = [&](const std::string& s, int code) {
      (void)!::write(fds[1], s.data(), s.size());
      ::_exit(code);
    };
    ::prctl(PR_SET_DUMPABLE, 1);  // uid_map is writable only by a dumpable process
    if (::unshare(CLONE_NEWUSER | CLONE_NEWNS) != 0) {
      report(std::string("unshare: ") + std::strerror(errno), kSkip);
    }
    WriteProc("/proc/self/setgroups", "deny");
    if (!WriteProc("/proc/self/uid_map", std::to_string(uid) + " " + std::to_string(uid) + " 1") ||
        !WriteProc("/proc/self/gid_map", std::to_string(gid) + " " + std::to_string(gid) + " 1")) {
      report(std::string("id maps: ") + std::strerror(errno), kSkip);
    }
    if (::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0 ||
        ::mount("ward-audit-test", dir.c_str(), "tmpfs", MS_NOSUID | MS_NODEV | flags, options) !=
            0) {
      report(std::string("mount tmpfs: ") + std::strerror(errno), kSkip);
    }
    std::string failures;
    try {
      failures = body();
    } catch (...) {
      failures = "exception";
    }
    report(failures, 0);
  }
  ::close(fds[1]);
  std::string out;
  char buf[4096];
  ssize_t n;
  while ((n = ::read(fds[0], buf, sizeof buf)) > 0) out.append(buf, static_cast<size_t>(n));
  ::close(fds[0]);
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status)) << "child died: " << status;
  if (WEXITSTATUS(status) == kSkip) {
    const char* strict = std::getenv("WARD_TEST_STRICT");
    if (strict != nullptr && std::string(strict) == "1") {
      FAIL() << "no unprivileged tmpfs here: " << out
             << " (WARD_TEST_STRICT=1 turns this skip into a failure)";
    }
    GTEST_SKIP() << "no unprivileged tmpfs here: " << out;
  }
  EXPECT_EQ(WEXITSTATUS(status), 0);
  EXPECT_EQ(out, "");
}

#define NOTE_UNLESS(cond, what)                        \
  do {                                                 \
    if (!(cond)) failures += std::string(what) + "; "; \
  } while (0)

// Fills the file system with `path` until at most `leave` bytes remain free.
void Fill(const std::string& path, size_t leave) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  std::string page(4096, 'f');
  size_t total = 0;
  const size_t limit = leave == 0 ? SIZE_MAX : 64 * 1024 - leave;
  while (total<limit&& ::write(fd, page.data(), page.size())> 0) total += page.size();
  ::close(fd);
}

TEST(FullDiskTest, CreateRefusesCleanlyWhenNothingFits) {
  TempDir tmp;
  RunOnTinyTmpfs(tmp.path(), "size=64k,mode=0700", 0, [&] {
    std::string failures;
    Fill(tmp.path() + "/filler", 0);
    SessionLog::Options o;
    o.state_dir = tmp.path();
    o.session_id = "full";
    auto log = SessionLog::Create(o);
    NOTE_UNLESS(!log.ok(), "Create succeeded on a full disk");
    if (!log.ok()) {
      NOTE_UNLESS(log.status().code() == Code::kResourceExhausted,
                  "code " + std::string(CodeName(log.status().code())));
      NOTE_UNLESS(log.status().err() == ENOSPC, "errno " + std::to_string(log.status().err()));
      NOTE_UNLESS(log.status().ToString().find("refusing") != std::string::npos,
                  "message: " + log.status().ToString());
    }
    NOTE_UNLESS(::access((tmp.path() + "/sessions/full").c_str(), F_OK) != 0,
                "the refused session directory was left behind");
    return failures;
  });
}

TEST(FullDiskTest, CreateRefusesCleanlyOnAReadOnlyDisk) {
  TempDir tmp;
  RunOnTinyTmpfs(tmp.path(), "size=64k,mode=0700", MS_RDONLY, [&] {
    std::string failures;
    SessionLog::Options o;
    o.state_dir = tmp.path() + "/state";
    o.session_id = "ro";
    auto log = SessionLog::Create(o);
    NOTE_UNLESS(!log.ok(), "Create succeeded on a read-only disk");
    if (!log.ok()) {
      NOTE_UNLESS(log.status().err() == EROFS, "errno " + std::to_string(log.status().err()));
      NOTE_UNLESS(log.status().ToString().find(o.state_dir) != std::string::npos,
                  "message does not name the directory: " + log.status().ToString());
    }
    return failures;
  });
}

TEST(FullDiskTest, FillingUpMidRunFailsOnceAndLeavesNoHalfRecord) {
  TempDir tmp;
  RunOnTinyTmpfs(tmp.path(), "size=64k,mode=0700", 0, [&] {
    std::string failures;
    Fill(tmp.path() + "/filler", 24 * 1024);
    SessionLog::Options o;
    o.state_dir = tmp.path();
    o.session_id = "filling";
    o.reserve_bytes = 0;  // as on a file system that cannot preallocate
    auto created = SessionLog::Create(o);
    NOTE_UNLESS(created.ok(), "Create failed with room left: " + created.status().ToString());
    if (!created.ok()) return failures;
    SessionLog& log = **created;
    std::atomic<int> calls{0};
    Status reported;
    log.OnFailure([&](const Status& st) {
      ++calls;
      reported = st;
    });
    log.Emit("session.start", {{"command", {"fill"}}});
    NOTE_UNLESS(log.health().ok(), "session.start failed: " + log.health().ToString());
    int emitted = 0;
    for (; emitted < 5000 && log.health().ok(); ++emitted) {
      log.Emit("net.deny", {{"i", emitted}, {"pad", std::string(300, 'x')}});
      if (emitted % 7 == 0) (void)log.Flush();
    }
    NOTE_UNLESS(!log.health().ok(), "the disk never filled");
    NOTE_UNLESS(log.health().code() == Code::kResourceExhausted,
                "health: " + log.health().ToString());
    // More work after the failure fires nothing more.
    for (int i = 0; i < 50; ++i) log.Emit("net.deny", {{"after", i}});
    log.Emit("session.end", {{"exit_code", 0}});
    (void)log.Flush();
    NOTE_UNLESS(!log.Close().ok(), "Close reported success after a write error");
    NOTE_UNLESS(calls.load() == 1, "OnFailure called " + std::to_string(calls.load()) + " times");
    NOTE_UNLESS(reported.err() == ENOSPC, "reported: " + reported.ToString());
    NOTE_UNLESS(log.dropped() >= 51, "dropped " + std::to_string(log.dropped()));

    std::string text = ReadFile(EventsPath(log.dir()));
    NOTE_UNLESS(!text.empty() && text.back() == '\n', "the log ends inside a record");
    size_t lines = ReadLines(EventsPath(log.dir())).size();
    VerifyReport r = VerifySession(log.dir());
    NOTE_UNLESS(r.state == VerifyReport::State::kUnterminated,
                "verify: " + std::string(StateName(r.state)) + " " + r.detail);
    NOTE_UNLESS(!r.torn_tail, "torn tail left behind");
    NOTE_UNLESS(r.records == static_cast<int64_t>(lines),
                "verified " + std::to_string(r.records) + " of " + std::to_string(lines));
    NOTE_UNLESS(lines >= 2 && lines <= static_cast<size_t>(emitted) + 1,
                "lines: " + std::to_string(lines) + ", emitted " + std::to_string(emitted));
    // A callback registered after the failure was already reported is not called again.
    log.OnFailure([&](const Status&) { ++calls; });
    NOTE_UNLESS(calls.load() == 1, "late OnFailure called again");
    return failures;
  });
}

TEST(FullDiskTest, OnFailureRegisteredAfterAnUnreportedFailureFiresAtOnce) {
  TempDir tmp;
  RunOnTinyTmpfs(tmp.path(), "size=64k,mode=0700", 0, [&] {
    std::string failures;
    Fill(tmp.path() + "/filler", 16 * 1024);
    SessionLog::Options o;
    o.state_dir = tmp.path();
    o.session_id = "late";
    o.reserve_bytes = 0;
    auto created = SessionLog::Create(o);
    NOTE_UNLESS(created.ok(), "Create failed: " + created.status().ToString());
    if (!created.ok()) return failures;
    SessionLog& log = **created;
    for (int i = 0; i < 5000 && log.health().ok(); ++i) {
      log.Emit("session.start", {{"pad", std::string(500, 'y')}});  // synchronous
    }
    NOTE_UNLESS(!log.health().ok(), "the disk never filled");
    int calls = 0;
    log.OnFailure([&](const Status&) { ++calls; });
    NOTE_UNLESS(calls == 1, "late OnFailure called " + std::to_string(calls) + " times");
    VerifyReport r = VerifySession(log.dir());
    NOTE_UNLESS(r.state == VerifyReport::State::kUnterminated,
                "verify: " + std::string(StateName(r.state)) + " " + r.detail);
    return failures;
  });
}

struct Space {
  off_t size = -1;       // st_size
  off_t allocated = -1;  // st_blocks * 512
};

Space LogSpace(const std::string& dir) {
  struct stat st {};
  if (::stat(EventsPath(dir).c_str(), &st) != 0) return {};
  return {st.st_size, static_cast<off_t>(st.st_blocks) * 512};
}

// The reserve is given back once the session has ended, by a later session (or `ward audit`),
// not by Close: never while its writer still holds the log.
TEST(FullDiskTest, TheReserveIsAllocatedAheadAndGivenBackByALaterSession) {
  TempDir tmp;
  RunOnTinyTmpfs(tmp.path(), "size=4m,mode=0700", 0, [&] {
    std::string failures;
    SessionLog::Options o;
    o.state_dir = tmp.path();
    o.session_id = "reserved";
    o.reserve_bytes = 256 * 1024;
    auto created = SessionLog::Create(o);
    NOTE_UNLESS(created.ok(), "Create: " + created.status().ToString());
    if (!created.ok()) return failures;
    SessionLog& log = **created;
    NOTE_UNLESS(log.reserved(), "no reserve on tmpfs");
    Space start = LogSpace(log.dir());
    NOTE_UNLESS(start.size == 0, "size after Create: " + std::to_string(start.size));
    NOTE_UNLESS(start.allocated >= 256 * 1024,
                "allocated after Create: " + std::to_string(start.allocated));
    log.Emit("session.start", {{"command", {"reserve"}}});
    log.LeaveReserveToLaterSessions();
    for (int i = 0; i < 100; ++i) log.Emit("net.deny", {{"i", i}});
    log.Emit("session.end", {{"exit_code", 0}});
    // A session that starts while this one still writes leaves its reserve alone.
    SessionLog::Options o2 = o;
    o2.session_id = "later";
    auto later = SessionLog::Create(o2);
    NOTE_UNLESS(later.ok(), "Create later: " + later.status().ToString());
    if (later.ok()) (*later)->LeaveReserveToLaterSessions();
    NOTE_UNLESS(LogSpace(log.dir()).allocated >= 256 * 1024, "released while in use");
    NOTE_UNLESS(log.Close().ok(), "Close: " + log.health().ToString());
    Space closed = LogSpace(log.dir());
    NOTE_UNLESS(closed.size == static_cast<off_t>(ReadFile(EventsPath(log.dir())).size()),
                "size is not the content");
    NOTE_UNLESS(closed.allocated >= 256 * 1024, "Close gave the reserve back itself");
    // The next session gives it back.
    SessionLog::Options o3 = o;
    o3.session_id = "next";
    auto next = SessionLog::Create(o3);
    NOTE_UNLESS(next.ok(), "Create next: " + next.status().ToString());
    if (next.ok()) (*next)->LeaveReserveToLaterSessions();
    Space end = LogSpace(log.dir());
    NOTE_UNLESS(end.size == closed.size, "the content changed");
    NOTE_UNLESS(
        end.allocated <= (end.size + 4095) / 4096 * 4096,
        "the reserve was kept after the next session started: " + std::to_string(end.allocated) +
            " bytes allocated for " + std::to_string(end.size));
    VerifyReport r = VerifySession(log.dir());
    NOTE_UNLESS(r.state == VerifyReport::State::kIntact, "verify: " + r.detail);
    return failures;
  });
}

// A session that does not leave its reserve to later ones (ward serve's own) gives it back on
// Close.
TEST(FullDiskTest, AReserveNotLeftToLaterSessionsIsGivenBackOnClose) {
  TempDir tmp;
  RunOnTinyTmpfs(tmp.path(), "size=4m,mode=0700", 0, [&] {
    std::string failures;
    SessionLog::Options o;
    o.state_dir = tmp.path();
    o.session_id = "own";
    o.reserve_bytes = 256 * 1024;
    auto created = SessionLog::Create(o);
    NOTE_UNLESS(created.ok(), "Create: " + created.status().ToString());
    if (!created.ok()) return failures;
    SessionLog& log = **created;
    log.Emit("session.start", {{"command", {"reserve"}}});
    NOTE_UNLESS(LogSpace(log.dir()).allocated >= 256 * 1024, "no reserve");  // control
    NOTE_UNLESS(log.Close().ok(), "Close: " + log.health().ToString());
    Space end = LogSpace(log.dir());
    NOTE_UNLESS(end.allocated <= (end.size + 4095) / 4096 * 4096,
                "the reserve was kept after Close: " + std::to_string(end.allocated));
    return failures;
  });
}

// What a sandbox that shares the disk does: fill it after the session started. Records go on
// into the reserve, and the session ends intact.
TEST(FullDiskTest, AFullDiskAfterTheStartStillTakesRecordsIntoTheReserve) {
  TempDir tmp;
  RunOnTinyTmpfs(tmp.path(), "size=1m,mode=0700", 0, [&] {
    std::string failures;
    SessionLog::Options o;
    o.state_dir = tmp.path();
    o.session_id = "shared";
    o.reserve_bytes = 256 * 1024;
    auto created = SessionLog::Create(o);
    NOTE_UNLESS(created.ok(), "Create: " + created.status().ToString());
    if (!created.ok()) return failures;
    SessionLog& log = **created;
    log.Emit("session.start", {{"command", {"shared"}}});
    Fill(tmp.path() + "/filler", 0);
    int probe = ::open((tmp.path() + "/probe").c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
    NOTE_UNLESS(probe >= 0 && ::write(probe, "x", 1) < 0 && errno == ENOSPC,
                "the disk is not full");
    if (probe >= 0) ::close(probe);
    // About 100 KiB: within half the reserve, which is always kept ahead.
    for (int i = 0; i < 300; ++i) {
      log.Emit("net.deny", {{"i", i}, {"pad", std::string(300, 'x')}});
      if (i % 10 == 0) (void)log.Flush();
    }
    log.Emit("session.end", {{"exit_code", 0}});
    NOTE_UNLESS(log.Close().ok(), "Close: " + log.health().ToString());
    NOTE_UNLESS(log.dropped() == 0, "dropped: " + log.DescribeDropped());
    NOTE_UNLESS(ReadLines(EventsPath(log.dir())).size() == 302,
                "lines: " + std::to_string(ReadLines(EventsPath(log.dir())).size()));
    VerifyReport r = VerifySession(log.dir());
    NOTE_UNLESS(r.state == VerifyReport::State::kIntact, "verify: " + r.detail);
    return failures;
  });
}

// The reserve moves ahead while there is room; once the disk is full, what is left of it still
// takes at least half a reserve of records; past that the log fails once, says what it lost,
// and verifies up to there.
TEST(FullDiskTest, TheReserveMovesAheadUntilTheDiskIsFullThenFailsClosed) {
  TempDir tmp;
  RunOnTinyTmpfs(tmp.path(), "size=2m,mode=0700", 0, [&] {
    std::string failures;
    SessionLog::Options o;
    o.state_dir = tmp.path();
    o.session_id = "moving";
    o.reserve_bytes = 32 * 1024;
    auto created = SessionLog::Create(o);
    NOTE_UNLESS(created.ok(), "Create: " + created.status().ToString());
    if (!created.ok()) return failures;
    SessionLog& log = **created;
    int calls = 0;
    Status reported;
    log.OnFailure([&](const Status& st) {
      ++calls;
      reported = st;
    });
    log.Emit("session.start", {{"command", {"moving"}}});
    const std::string pad(400, 'm');
    // Many reserves' worth with room on the disk: the reserve moves on.
    for (int i = 0; i < 1000; ++i) {
      log.Emit("net.deny", {{"i", i}, {"pad", pad}});
      if (i % 10 == 0) (void)log.Flush();
    }
    (void)log.Flush();
    NOTE_UNLESS(log.health().ok(), "failed with room left: " + log.health().ToString());
    Space moved = LogSpace(log.dir());
    NOTE_UNLESS(moved.allocated - moved.size >= 16 * 1024,
                "less than half the reserve ahead: " + std::to_string(moved.allocated) +
                    " allocated for " + std::to_string(moved.size));
    Fill(tmp.path() + "/filler", 0);
    off_t full_at = LogSpace(log.dir()).size;
    int emitted = 0;
    for (; emitted < 5000 && log.health().ok(); ++emitted) {
      log.Emit("net.deny", {{"after", emitted}, {"pad", pad}});
      if (emitted % 10 == 0) (void)log.Flush();
    }
    NOTE_UNLESS(!log.health().ok(), "the reserve never ran out");
    off_t after = LogSpace(log.dir()).size - full_at;
    NOTE_UNLESS(after >= 16 * 1024 - 10 * 512,
                "only " + std::to_string(after) + " bytes written after the disk filled");
    log.Emit("session.end", {{"exit_code", 0}});
    NOTE_UNLESS(!log.Close().ok(), "Close reported success after a write error");
    NOTE_UNLESS(calls == 1, "OnFailure called " + std::to_string(calls) + " times");
    NOTE_UNLESS(reported.err() == ENOSPC, "reported: " + reported.ToString());
    std::string lost = log.DescribeDropped();
    NOTE_UNLESS(lost.find("net.deny") != std::string::npos &&
                    lost.find("1 session.end") != std::string::npos &&
                    lost.find("(from seq ") != std::string::npos,
                "dropped: " + lost);
    VerifyReport r = VerifySession(log.dir());
    NOTE_UNLESS(r.state == VerifyReport::State::kUnterminated,
                "verify: " + std::string(StateName(r.state)) + " " + r.detail);
    NOTE_UNLESS(!r.torn_tail, "torn tail left behind");
    return failures;
  });
}

TEST(FullDiskTest, CreateRefusesADiskWithLessRoomThanTheReserve) {
  TempDir tmp;
  RunOnTinyTmpfs(tmp.path(), "size=256k,mode=0700", 0, [&] {
    std::string failures;
    SessionLog::Options o;
    o.state_dir = tmp.path();
    o.session_id = "small";
    o.reserve_bytes = 1 << 20;
    auto log = SessionLog::Create(o);
    NOTE_UNLESS(!log.ok(), "Create succeeded with less room than the reserve");
    if (!log.ok()) {
      NOTE_UNLESS(log.status().err() == ENOSPC, "errno " + std::to_string(log.status().err()));
      NOTE_UNLESS(log.status().ToString().find("cannot reserve 1 MiB") != std::string::npos,
                  "message: " + log.status().ToString());
    }
    NOTE_UNLESS(::access((tmp.path() + "/sessions/small").c_str(), F_OK) != 0,
                "the refused session directory was left behind");
    // Control: a reserve that fits.
    o.reserve_bytes = 64 * 1024;
    auto fits = SessionLog::Create(o);
    NOTE_UNLESS(fits.ok() && (*fits)->reserved(), "a reserve that fits was refused");
    return failures;
  });
}

}  // namespace
}  // namespace ward::audit
