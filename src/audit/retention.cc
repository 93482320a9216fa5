#include "audit/retention.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <nlohmann/json.hpp>

#include "audit/record.h"
#include "audit/session_log.h"

namespace ward::audit {
namespace {

// Where sessions/.reserved keeps a link to the log of a session whose reserve a later session
// gives back (session_log.cc): removed with the session, or the link would keep the log.
constexpr std::string_view kReservedDir = ".reserved";
// A session directory without its log yet is one being created (SessionLog::Create makes the
// directory, then the files): left alone for this long.
constexpr std::chrono::hours kCreationGrace{1};

struct Candidate {
  std::string id;
  struct timespec last_write {};
  bool has_log = false;
};

std::chrono::system_clock::time_point TimeOf(const struct timespec& ts) {
  return std::chrono::system_clock::time_point(
      std::chrono::duration_cast<std::chrono::system_clock::duration>(
          std::chrono::seconds(ts.tv_sec) + std::chrono::nanoseconds(ts.tv_nsec)));
}

// The session directories, most recently written first (the log's mtime; the directory's when
// there is no log).
std::vector<Candidate> ListByLastWrite(int sessions_fd) {
  std::vector<Candidate> out;
  DIR* d = ::fdopendir(::dup(sessions_fd));
  if (d == nullptr) return out;
  while (struct dirent* e = ::readdir(d)) {
    if (!IsValidSessionId(e->d_name)) continue;
    struct stat st {};
    if (::fstatat(sessions_fd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISDIR(st.st_mode)) {
      continue;
    }
    Candidate c;
    c.id = e->d_name;
    c.last_write = st.st_mtim;
    const std::string log = c.id + "/" + std::string(kEventsFile);
    struct stat ls {};
    if (::fstatat(sessions_fd, log.c_str(), &ls, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(ls.st_mode)) {
      c.has_log = true;
      c.last_write = ls.st_mtim;
    }
    out.push_back(std::move(c));
  }
  ::closedir(d);
  std::sort(out.begin(), out.end(), [](const Candidate& a, const Candidate& b) {
    if (a.last_write.tv_sec != b.last_write.tv_sec) return a.last_write.tv_sec > b.last_write.tv_sec;
    if (a.last_write.tv_nsec != b.last_write.tv_nsec) {
      return a.last_write.tv_nsec > b.last_write.tv_nsec;
    }
    return a.id > b.id;
  });
  return out;
}

// Why `limits` removes the session at `rank` (0: the most recently written), "" when it stays.
std::string Verdict(const PruneLimits& limits, size_t rank, const Candidate& c,
                    std::chrono::system_clock::time_point now) {
  if (limits.keep && rank >= *limits.keep) {
    return "beyond the newest " + std::to_string(*limits.keep);
  }
  if (limits.older_than && now - TimeOf(c.last_write) > *limits.older_than) {
    return "older than " + FormatAge(*limits.older_than);
  }
  return "";
}

// The session's log, locked against its writer for as long as the fd lives; an empty fd when
// the session is still in use: its writer holds a shared lock on the log from its creation
// until it is closed (session_log.cc), or there is no log yet and the directory is new.
UniqueFd ClaimEnded(int sessions_fd, const Candidate& c,
                    std::chrono::system_clock::time_point now) {
  if (!c.has_log) {
    if (now - TimeOf(c.last_write) < kCreationGrace) return UniqueFd();
    return UniqueFd(::openat(sessions_fd, c.id.c_str(),
                             O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  }
  const std::string log = c.id + "/" + std::string(kEventsFile);
  UniqueFd fd(::openat(sessions_fd, log.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK));
  if (!fd || ::flock(fd.get(), LOCK_EX | LOCK_NB) != 0) return UniqueFd();
  return fd;
}

Status EmptyDirectory(int fd);

// Removes the entry `name` of the directory `dir_fd`, a directory after everything below it.
Status RemoveEntry(int dir_fd, const char* name) {
  if (::unlinkat(dir_fd, name, 0) == 0) return Ok();
  if (errno == EISDIR || errno == EPERM) {
    int sub = ::openat(dir_fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (sub >= 0) {
      Status inner = EmptyDirectory(sub);
      if (!inner.ok()) return inner;
      if (::unlinkat(dir_fd, name, AT_REMOVEDIR) == 0) return Ok();
    }
  }
  return Errno(std::string("removing ") + name);
}

// Removes everything below the directory `fd` (which it closes), without following symlinks.
// It goes on past a failure and returns the first.
Status EmptyDirectory(int fd) {
  DIR* d = ::fdopendir(fd);
  if (d == nullptr) {
    ::close(fd);
    return Errno("opendir");
  }
  Status st;
  while (struct dirent* e = ::readdir(d)) {
    if (std::strcmp(e->d_name, ".") == 0 || std::strcmp(e->d_name, "..") == 0) continue;
    Status removed = RemoveEntry(::dirfd(d), e->d_name);
    if (!removed.ok() && st.ok()) st = std::move(removed);
  }
  ::closedir(d);
  return st;
}

Status RemoveSession(int sessions_fd, const std::string& id) {
  const std::string link = std::string(kReservedDir) + "/" + id;
  ::unlinkat(sessions_fd, link.c_str(), 0);  // usually absent: the reserve was given back
  int dir = ::openat(sessions_fd, id.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (dir < 0) return Errno("opening the session directory");
  WARD_TRY(EmptyDirectory(dir));
  if (::unlinkat(sessions_fd, id.c_str(), AT_REMOVEDIR) != 0) {
    return Errno("removing the session directory");
  }
  return Ok();
}

std::string StampPath(const std::string& state_dir) {
  return state_dir + "/" + std::string(kPruneStampFile);
}

}  // namespace

std::string FormatAge(std::chrono::seconds age) {
  const int64_t s = age.count();
  if (s > 0 && s % 86400 == 0) return std::to_string(s / 86400) + "d";
  if (s > 0 && s % 3600 == 0) return std::to_string(s / 3600) + "h";
  if (s > 0 && s % 60 == 0) return std::to_string(s / 60) + "m";
  return std::to_string(s) + "s";
}

PruneReport PruneSessions(const std::string& state_dir, const PruneLimits& limits,
                          std::chrono::system_clock::time_point now, bool dry_run) {
  PruneReport report;
  const std::string root = SessionsDir(state_dir);
  UniqueFd sessions(::open(root.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!sessions) {
    if (errno != ENOENT) report.errors.push_back(root + ": " + std::strerror(errno));
    return report;
  }
  std::vector<Candidate> all = ListByLastWrite(sessions.get());
  report.kept = all.size();
  for (size_t rank = 0; rank < all.size(); ++rank) {
    const Candidate& c = all[rank];
    std::string why = Verdict(limits, rank, c, now);
    if (why.empty()) continue;
    UniqueFd claim = ClaimEnded(sessions.get(), c, now);
    if (!claim) {
      report.in_use.push_back(c.id);
      continue;
    }
    if (!dry_run) {
      Status removed = RemoveSession(sessions.get(), c.id);
      if (!removed.ok()) {
        report.errors.push_back(c.id + ": " + removed.ToString());
        continue;
      }
    }
    report.removed.push_back(PrunedSession{c.id, FormatTimestamp(TimeOf(c.last_write)), why});
    --report.kept;
  }
  return report;
}

Status RecordPrune(const std::string& state_dir, std::string_view trigger,
                   const PruneLimits& limits, const PruneReport& report,
                   std::chrono::system_clock::time_point now) {
  nlohmann::json removed = nlohmann::json::array();
  for (const PrunedSession& s : report.removed) {
    removed.push_back({{"id", s.id}, {"last_write", s.last_write}, {"why", s.why}});
  }
  nlohmann::json rec = {
      {"ts", FormatTimestamp(now)},
      {"type", "audit.prune"},
      {"trigger", trigger},
      {"older_than",
       limits.older_than ? nlohmann::json(FormatAge(*limits.older_than)) : nlohmann::json()},
      {"keep", limits.keep ? nlohmann::json(*limits.keep) : nlohmann::json()},
      {"removed", std::move(removed)},
      {"in_use", report.in_use},
      {"kept", report.kept},
      {"errors", report.errors}};
  const std::string line = CanonicalJson(rec) + "\n";
  const std::string path = state_dir + "/" + std::string(kPruneLogFile);
  UniqueFd fd(::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW | O_CLOEXEC, 0600));
  if (!fd) return Errno("audit: cannot open " + path);
  if (::write(fd.get(), line.data(), line.size()) != static_cast<ssize_t>(line.size())) {
    return Errno("audit: cannot write " + path);
  }
  return Ok();
}

AutoPrune CheckAutoPrune(const std::string& state_dir, std::chrono::system_clock::time_point now) {
  struct stat st {};
  if (::stat(StampPath(state_dir).c_str(), &st) != 0) {
    if (errno == ENOENT) (void)MarkAutoPruneStarted(state_dir);
    return AutoPrune::kNotDue;
  }
  return now - TimeOf(st.st_mtim) >= kAutoPruneInterval ? AutoPrune::kDue : AutoPrune::kNotDue;
}

Status MarkAutoPruneStarted(const std::string& state_dir) {
  const std::string path = StampPath(state_dir);
  UniqueFd fd(::open(path.c_str(), O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600));
  if (!fd) return Errno("audit: cannot create " + path);
  if (::futimens(fd.get(), nullptr) != 0) return Errno("audit: cannot set the time of " + path);
  return Ok();
}

Result<UniqueFd> LockPrune(const std::string& state_dir, bool wait) {
  const std::string path = StampPath(state_dir);
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600));
  if (!fd) return Errno("audit: cannot open " + path);
  while (::flock(fd.get(), wait ? LOCK_EX : LOCK_EX | LOCK_NB) != 0) {
    if (errno == EINTR) continue;
    if (errno == EWOULDBLOCK) return UniqueFd();
    return Errno("audit: cannot lock " + path);
  }
  return fd;
}

}  // namespace ward::audit
