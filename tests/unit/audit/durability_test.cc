// SIGKILL of the writing process: the log still verifies, and every event emitted at least
// 100 ms before the kill is in it (the documented bound with the 50 ms flush interval).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <nlohmann/json.hpp>
#include <set>
#include <vector>

#include "audit/session_log.h"
#include "audit/verify.h"
#include "audit_test_util.h"

namespace ward::audit {
namespace {

using testing::EventsPath;
using testing::ReadLines;
using testing::TempDir;

int64_t MonotonicNs() {
  struct timespec ts {};
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

struct Report {
  int64_t i;
  int64_t emitted_ns;  // CLOCK_MONOTONIC after Emit returned
};

[[noreturn]] void EmitForever(const std::string& state, int report_fd) {
  SessionLog::Options o;
  o.state_dir = state;
  o.session_id = "killed";
  o.flush_interval = std::chrono::milliseconds(50);
  auto log = SessionLog::Create(o);
  if (!log.ok()) ::_exit(3);
  (*log)->Emit("session.start", {{"command", {"emit-forever"}}});
  for (int64_t i = 0;; ++i) {
    (*log)->Emit("test.tick", {{"i", i}, {"pad", std::string(120, 'p')}});
    Report r{i, MonotonicNs()};
    if (::write(report_fd, &r, sizeof r) != static_cast<ssize_t>(sizeof r)) ::_exit(4);
    if (i % 8 == 0) ::usleep(200);  // a busy but not absurd event rate
  }
}

TEST(DurabilityTest, SigkillLosesAtMostTheLastHundredMilliseconds) {
  TempDir tmp;
  int fds[2];
  ASSERT_EQ(::pipe2(fds, O_CLOEXEC), 0);
  pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    ::close(fds[0]);
    EmitForever(tmp.path(), fds[1]);
  }
  ::close(fds[1]);

  std::vector<Report> reports;
  std::string buf;
  auto drain = [&](int timeout_ms) -> bool {  // false at EOF
    struct pollfd p {
      fds[0], POLLIN, 0
    };
    if (::poll(&p, 1, timeout_ms) <= 0) return true;
    char chunk[4096];
    ssize_t n = ::read(fds[0], chunk, sizeof chunk);
    if (n <= 0) return false;
    buf.append(chunk, static_cast<size_t>(n));
    size_t whole = buf.size() / sizeof(Report) * sizeof(Report);
    for (size_t off = 0; off < whole; off += sizeof(Report)) {
      Report r;
      std::memcpy(&r, buf.data() + off, sizeof r);
      reports.push_back(r);
    }
    buf.erase(0, whole);
    return true;
  };
  const int64_t run_until = MonotonicNs() + 700'000'000;
  while (MonotonicNs() < run_until) drain(10);
  const int64_t kill_ns = MonotonicNs();
  ASSERT_EQ(::kill(pid, SIGKILL), 0);
  while (drain(1000)) {
  }
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) << "child status " << status;
  ::close(fds[0]);

  std::string dir = tmp.path() + "/sessions/killed";
  // The killed writer left its reserve allocated beyond the last record (where the file system
  // can preallocate): the size is still the content, and the log verifies.
  struct stat st {};
  ASSERT_EQ(::stat(EventsPath(dir).c_str(), &st), 0);
  RecordProperty("reserve_left_bytes", std::to_string(st.st_blocks * 512 - st.st_size));
  EXPECT_EQ(st.st_size, static_cast<off_t>(testing::ReadFile(EventsPath(dir)).size()));
  VerifyReport v = VerifySession(dir);
  EXPECT_EQ(v.state, VerifyReport::State::kUnterminated) << v.detail;

  std::set<int64_t> present;
  for (const auto& line : ReadLines(EventsPath(dir))) {
    auto rec = nlohmann::json::parse(line);
    if (rec["type"] == "test.tick") present.insert(rec["data"]["i"].get<int64_t>());
  }
  const int64_t bound_ns = 100'000'000;
  int64_t old_enough = 0;
  std::vector<int64_t> lost;
  for (const Report& r : reports) {
    if (r.emitted_ns > kill_ns - bound_ns) continue;
    ++old_enough;
    if (!present.count(r.i)) lost.push_back(r.i);
  }
  int64_t oldest_missing_ns = 0;  // how close to the bound this run came
  for (const Report& r : reports) {
    if (!present.count(r.i))
      oldest_missing_ns = std::max(oldest_missing_ns, kill_ns - r.emitted_ns);
  }
  RecordProperty("oldest_missing_us", std::to_string(oldest_missing_ns / 1000));
  RecordProperty("events_reported", std::to_string(reports.size()));
  EXPECT_GT(old_enough, 100) << "the child emitted too little for the test to mean anything";
  EXPECT_TRUE(lost.empty()) << lost.size() << " events emitted >= 100 ms before the kill are "
                            << "missing, first i=" << (lost.empty() ? -1 : lost.front());
  // And nothing is in the log that was never emitted.
  EXPECT_LE(static_cast<int64_t>(present.size()), static_cast<int64_t>(reports.size()) + 1);
}

}  // namespace
}  // namespace ward::audit
