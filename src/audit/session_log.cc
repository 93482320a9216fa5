#include "audit/session_log.h"

#include <dirent.h>
#include <fcntl.h>
#include <linux/falloc.h>
#include <pwd.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <system_error>

#include "audit/record.h"
#include "common/linux.h"

namespace ward::audit {
namespace {

// A type longer than this is cut (types are short dotted names chosen by ward's own code).
constexpr size_t kMaxTypeBytes = 128;

// Writes all of `bytes`; returns 0 or the errno, with *written set to what reached the file.
int WriteAll(int fd, std::string_view bytes, size_t* written) {
  *written = 0;
  while (*written < bytes.size()) {
    ssize_t n = ::write(fd, bytes.data() + *written, bytes.size() - *written);
    if (n < 0) {
      if (errno == EINTR) continue;
      return errno;
    }
    if (n == 0) return EIO;
    *written += static_cast<size_t>(n);
  }
  return 0;
}

Status MkdirAll(const std::string& path) {
  if (path.empty()) return InvalidArgument("audit: empty state directory");
  for (size_t pos = 1; pos <= path.size(); ++pos) {
    if (pos != path.size() && path[pos] != '/') continue;
    std::string prefix = path.substr(0, pos);
    if (::mkdir(prefix.c_str(), 0700) != 0 && errno != EEXIST) {
      return Errno("audit: cannot create directory " + prefix);
    }
  }
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return Errno("audit: cannot access " + path);
  if (!S_ISDIR(st.st_mode)) return ErrnoError("audit: not a directory: " + path, ENOTDIR);
  return Ok();
}

// What a reserve may be at most: a typo ("1T") is an error, not a disk filled by ward.
constexpr uint64_t kMaxReserveBytes = uint64_t{1} << 36;
constexpr off_t kPageBytes = 4096;
// Where logs whose reserve a later session gives back are registered (hard links by session id).
constexpr std::string_view kReservedDir = ".reserved";
// How many ended sessions' reserves a new session gives back: more than one, so that the
// reserves of sessions that overlapped or were killed never pile up; few, so that a run's start
// never waits on many.
constexpr int kReservesReleasedPerSession = 2;

off_t RoundUpToPage(off_t n) { return (n + kPageBytes - 1) / kPageBytes * kPageBytes; }

std::string FormatBytes(uint64_t n) {
  if (n >= (1 << 20) && n % (1 << 20) == 0) return std::to_string(n >> 20) + " MiB";
  if (n >= 1024 && n % 1024 == 0) return std::to_string(n >> 10) + " KiB";
  return std::to_string(n) + " bytes";
}

// Allocates [offset, offset+len) of the file without changing its size; returns 0 or the
// errno (EOPNOTSUPP where the file system cannot preallocate).
int Preallocate(int fd, off_t offset, off_t len) {
  while (::fallocate(fd, FALLOC_FL_KEEP_SIZE, offset, len) != 0) {
    if (errno != EINTR) return errno;
  }
  return 0;
}

bool PreallocationUnsupported(int err) { return err == EOPNOTSUPP || err == ENOSYS; }

// The head file's text: {"hash":…,"seq":…} and a newline.
std::string HeadText(int64_t seq, const std::string& hash) {
  return CanonicalJson(nlohmann::json{{"seq", seq}, {"hash", hash}}) + "\n";
}

// Overwrites the head in place: one pwrite of about 100 bytes at offset 0 (within one sector,
// so a crash leaves the old or the new text), then a truncation when the text got shorter
// ("-1" to a one-digit seq). Replacing the file by a rename cost a journal commit on every
// flush, a third of a millisecond at the end of each run and several under I/O load; a
// reader that races with this write retries (VerifySession).
int PutHead(int fd, const std::string& text, size_t* len) {
  size_t off = 0;
  while (off < text.size()) {
    ssize_t n = ::pwrite(fd, text.data() + off, text.size() - off, static_cast<off_t>(off));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return n < 0 ? errno : EIO;
    off += static_cast<size_t>(n);
  }
  if (text.size() < *len && ::ftruncate(fd, static_cast<off_t>(text.size())) != 0) return errno;
  *len = text.size();
  return 0;
}

// Record data is an object: null becomes {}, anything else not an object {"value": it}.
nlohmann::json AsObject(nlohmann::json data) {
  if (data.is_null()) return nlohmann::json::object();
  if (!data.is_object()) return nlohmann::json{{"value", std::move(data)}};
  return data;
}

}  // namespace

std::string DefaultStateDir() {
  const char* xdg = std::getenv("XDG_STATE_HOME");
  if (xdg != nullptr && xdg[0] == '/') return std::string(xdg) + "/ward";
  std::string home;
  const char* env_home = std::getenv("HOME");
  if (env_home != nullptr && env_home[0] == '/') {
    home = env_home;
  } else {
    struct passwd pw {};
    struct passwd* found = nullptr;
    char buf[4096];
    if (::getpwuid_r(::getuid(), &pw, buf, sizeof buf, &found) == 0 && found != nullptr &&
        found->pw_dir != nullptr && found->pw_dir[0] == '/') {
      home = found->pw_dir;
    }
  }
  if (home.empty()) return "";
  while (home.size() > 1 && home.back() == '/') home.pop_back();
  return (home == "/" ? "" : home) + "/.local/state/ward";
}

std::string SessionsDir(const std::string& state_dir) { return state_dir + "/sessions"; }

std::string NewSessionId() {
  // "2026-11-30T16:22:33.123Z" -> "20261130T162233Z" (FormatTimestamp does not read the time
  // zone, which gmtime and strftime do on their first call: seven syscalls before the clone).
  std::string stamp;
  for (char c : FormatTimestamp(std::chrono::system_clock::now())) {
    if (c == '.') break;
    if (c != '-' && c != ':') stamp += c;
  }
  stamp += 'Z';
  uint32_t r = 0;
  if (::getrandom(&r, sizeof r, GRND_NONBLOCK) != static_cast<ssize_t>(sizeof r)) {
    // No entropy yet (early boot): uniqueness, not secrecy, is what matters here.
    struct timespec ts {};
    ::clock_gettime(CLOCK_MONOTONIC, &ts);
    r = static_cast<uint32_t>(ts.tv_nsec) ^ (static_cast<uint32_t>(::getpid()) << 16);
  }
  char out[96];
  std::snprintf(out, sizeof out, "%s-%08x", stamp.c_str(), r);
  return out;
}

bool IsValidSessionId(std::string_view id) {
  if (id.empty() || id.size() > 128 || id[0] == '.') return false;
  for (char c : id) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '.' || c == '_' || c == '-';
    if (!ok) return false;
  }
  return true;
}

bool IsNewSessionIdFormat(std::string_view id) {
  static constexpr std::string_view kShape = "ddddddddTddddddZ-xxxxxxxx";
  if (id.size() != kShape.size()) return false;
  for (size_t i = 0; i < id.size(); ++i) {
    const char c = id[i];
    switch (kShape[i]) {
      case 'd':
        if (c < '0' || c > '9') return false;
        break;
      case 'x':
        if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
        break;
      default:
        if (c != kShape[i]) return false;
    }
  }
  return true;
}

Result<std::unique_ptr<SessionLog>> SessionLog::Create(const Options& options) {
  if (options.state_dir.empty()) {
    return InvalidArgument("audit: no state directory (set XDG_STATE_HOME or HOME)");
  }
  if (!IsValidSessionId(options.session_id)) {
    return InvalidArgument("audit: invalid session id '" + options.session_id + "'");
  }
  if (options.flush_interval.count() <= 0) {
    return InvalidArgument("audit: flush interval must be positive");
  }
  if (options.reserve_bytes > kMaxReserveBytes) {
    return InvalidArgument("audit: a reserve of " + FormatBytes(options.reserve_bytes) +
                           " is too large (at most " + FormatBytes(kMaxReserveBytes) + ")");
  }
  std::string sessions = SessionsDir(options.state_dir);
  std::string dir = sessions + "/" + options.session_id;
  // The directories above exist at every run but the first: tried first, they cost one
  // mkdir instead of one per path component.
  int made = ::mkdir(dir.c_str(), 0700);
  if (made != 0 && (errno == ENOENT || errno == ENOTDIR)) {  // MkdirAll says which part is wrong
    WARD_TRY(MkdirAll(options.state_dir));
    WARD_TRY(MkdirAll(sessions));
    made = ::mkdir(dir.c_str(), 0700);
  }
  if (made != 0) {
    if (errno == EEXIST) {
      return Status(Code::kFailedPrecondition, "audit: session already exists: " + dir);
    }
    return Errno("audit: cannot create session directory " + dir);
  }

  // From here on, a failure removes what was created: a refused run leaves nothing behind.
  auto cleanup = [&](Status st) -> Status {
    UniqueFd d(::open(dir.c_str(), O_DIRECTORY | O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
    if (d) {
      ::unlinkat(d.get(), std::string(kHeadFile).c_str(), 0);
      ::unlinkat(d.get(), std::string(kEventsFile).c_str(), 0);
    }
    ::rmdir(dir.c_str());
    return st;
  };

  UniqueFd dir_fd(::open(dir.c_str(), O_DIRECTORY | O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
  if (!dir_fd) return cleanup(Errno("audit: cannot open " + dir));
  // The probe: a real write of the head, so ENOSPC/EDQUOT/EROFS show up now.
  UniqueFd head_fd(::openat(dir_fd.get(), std::string(kHeadFile).c_str(),
                            O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600));
  if (!head_fd) {
    return cleanup(
        Errno("audit: refusing to start: cannot create " + dir + "/" + std::string(kHeadFile)));
  }
  size_t head_len = 0;
  if (int err = PutHead(head_fd.get(), HeadText(-1, std::string(kZeroHash)), &head_len)) {
    return cleanup(ErrnoError(
        "audit: refusing to start: cannot write " + dir + "/" + std::string(kHeadFile), err));
  }
  UniqueFd log_fd(::openat(dir_fd.get(), std::string(kEventsFile).c_str(),
                           O_WRONLY | O_CREAT | O_EXCL | O_APPEND | O_CLOEXEC | O_NOFOLLOW, 0600));
  if (!log_fd) {
    return cleanup(Errno("audit: cannot create " + dir + "/" + std::string(kEventsFile)));
  }
  // The reserve: room the log keeps for itself on a file system that others may fill.
  off_t reserve = RoundUpToPage(static_cast<off_t>(options.reserve_bytes));
  if (reserve > 0) {
    int err = Preallocate(log_fd.get(), 0, reserve);
    if (PreallocationUnsupported(err)) {
      reserve = 0;  // reserved() says so; the caller decides whether that is safe
    } else if (err != 0) {
      return cleanup(ErrnoError("audit: refusing to start: cannot reserve " +
                                    FormatBytes(static_cast<uint64_t>(reserve)) + " for " + dir +
                                    "/" + std::string(kEventsFile) +
                                    " (free space on that file system, or reserve less)",
                                err));
    }
  }
  std::unique_ptr<SessionLog> log(new SessionLog(dir, options.session_id, std::move(dir_fd),
                                                 std::move(log_fd), options.flush_interval,
                                                 options.start_flusher));
  log->head_fd_ = std::move(head_fd);
  log->head_len_ = head_len;
  log->fsync_on_close_ = options.fsync_on_close;
  log->reserve_ = reserve;
  log->reserved_end_ = reserve;
  log->cannot_preallocate_ = reserve == 0 && options.reserve_bytes > 0;
  log->state_dir_ = options.state_dir;
  // In use while this lock is held: a later session never gives this reserve back, and the
  // retention prune never removes the session (retention.h). Held with or without a reserve.
  ::flock(log->log_fd_.get(), LOCK_SH | LOCK_NB);
  return log;
}

void SessionLog::LeaveReserveToLaterSessions() {
  std::lock_guard write_lock(write_mu_);
  if (reserve_ == 0 || reserve_registered_) return;
  reserve_registered_ = RegisterReserve();
  ReleaseFinishedReserves(state_dir_, kReservesReleasedPerSession);
}

bool SessionLog::RegisterReserve() {
  const std::string registry = SessionsDir(state_dir_) + "/" + std::string(kReservedDir);
  UniqueFd reg(::open(registry.c_str(), O_DIRECTORY | O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
  if (!reg && errno == ENOENT && ::mkdir(registry.c_str(), 0700) == 0) {
    reg.reset(::open(registry.c_str(), O_DIRECTORY | O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
  }
  return reg && ::linkat(dir_fd_.get(), std::string(kEventsFile).c_str(), reg.get(),
                         session_id_.c_str(), 0) == 0;
}

void ReleaseFinishedReserves(const std::string& state_dir, int limit) {
  const std::string registry = SessionsDir(state_dir) + "/" + std::string(kReservedDir);
  UniqueFd reg(::open(registry.c_str(), O_DIRECTORY | O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
  if (!reg) return;
  DIR* d = ::fdopendir(::dup(reg.get()));
  if (d == nullptr) return;
  int released = 0;
  while (struct dirent* e = ::readdir(d)) {
    if (released >= limit) break;
    if (!IsValidSessionId(e->d_name)) continue;
    UniqueFd log(::openat(reg.get(), e->d_name, O_WRONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK));
    if (!log) {
      ::unlinkat(reg.get(), e->d_name, 0);
      continue;
    }
    if (::flock(log.get(), LOCK_EX | LOCK_NB) != 0) continue;  // its session is still writing
    struct stat st;
    if (::fstat(log.get(), &st) != 0 || !S_ISREG(st.st_mode)) continue;
    // Allocated past its size: the unused reserve. The content stays as it is.
    if (::ftruncate(log.get(), st.st_size) != 0) continue;
    ::unlinkat(reg.get(), e->d_name, 0);
    ++released;
  }
  ::closedir(d);
}

SessionLog::SessionLog(std::string dir, std::string session_id, UniqueFd dir_fd, UniqueFd log_fd,
                       std::chrono::milliseconds flush_interval, bool start_flusher)
    : dir_(std::move(dir)),
      session_id_(std::move(session_id)),
      dir_fd_(std::move(dir_fd)),
      log_fd_(std::move(log_fd)),
      flush_interval_(flush_interval),
      last_hash_(kZeroHash) {
  if (start_flusher) StartFlusher();
}

void SessionLog::StartFlusher() {
  std::lock_guard lock(mu_);
  if (flusher_running_ || closed_) return;
  flusher_running_ = true;
  flusher_ = std::thread([this] { FlusherLoop(); });
}

void SessionLog::StartFlusherOnDemand() {
  std::lock_guard lock(mu_);
  flusher_on_demand_ = true;
}

Status SessionLog::Discard() {
  {
    std::lock_guard lock(mu_);
    if (next_seq_ != 0) {
      return Status(Code::kFailedPrecondition, "audit: session " + session_id_ + " has records");
    }
    closed_ = true;
    stop_ = true;
  }
  cv_.notify_all();
  if (flusher_.joinable() && flusher_.get_id() != std::this_thread::get_id()) flusher_.join();
  Status st;
  if (reserve_registered_) {
    const std::string entry =
        dir_.substr(0, dir_.rfind('/')) + "/" + std::string(kReservedDir) + "/" + session_id_;
    ::unlink(entry.c_str());
  }
  for (std::string_view name : {kHeadFile, kEventsFile}) {
    if (::unlinkat(dir_fd_.get(), std::string(name).c_str(), 0) != 0 && errno != ENOENT) {
      st = Errno("audit: cannot remove " + dir_ + "/" + std::string(name));
    }
  }
  if (st.ok() && ::rmdir(dir_.c_str()) != 0) st = Errno("audit: cannot remove " + dir_);
  return st;
}

SessionLog::~SessionLog() {
  try {
    (void)Close();
    if (flusher_.joinable()) {
      if (flusher_.get_id() == std::this_thread::get_id()) {
        flusher_.detach();
      } else {
        flusher_.join();
      }
    }
  } catch (...) {
    // Only std::system_error from thread operations; nothing sensible to do in a destructor.
  }
}

void SessionLog::Emit(std::string_view type, nlohmann::json data) {
  try {
    data = AsObject(std::move(data));
    // Redaction and serialisation happen outside the lock; only chaining is serialised.
    std::string type_s = redactor_.Scrub(type.substr(0, kMaxTypeBytes));
    std::string data_canonical = CanonicalJson(redactor_.Apply(std::move(data)));
    if (data_canonical.size() + type_s.size() > kMaxRecordBytes - 512) {
      data_canonical = CanonicalJson(nlohmann::json{{"error", "event data too large; dropped"},
                                                    {"bytes", data_canonical.size()}});
    }
    if (Chain(type, type_s, data_canonical)) (void)Flush();
  } catch (...) {
    // Only allocation failures get here; losing a record silently is not acceptable.
    if (Fail(Status(Code::kResourceExhausted,
                    "audit: cannot record event '" + std::string(type.substr(0, 64)) + "'"))) {
      FireFailure();
    }
  }
}

bool SessionLog::Chain(std::string_view type, const std::string& type_s, const std::string& data) {
  std::lock_guard lock(mu_);
  if (closed_ || !health_.ok()) {
    DropLocked(type_s, -1);
    return false;
  }
  const bool was_empty = AppendLocked(type_s, data);
  auto now = std::chrono::steady_clock::now();
  if (was_empty) batch_since_ = now;
  const bool sync = IsSyncType(type);
  const bool start_flusher = StartFlusherIfDueLocked(sync, now);
  // The next Emit also flushes an overdue batch, in case the flusher is starved.
  const bool flush_now = !flusher_running_ || sync || now - batch_since_ >= flush_interval_;
  if (was_empty && !flush_now && !start_flusher) cv_.notify_one();
  return flush_now;
}

bool SessionLog::AppendLocked(const std::string& type_s, const std::string& data) {
  BuiltRecord rec = BuildRecordFromCanonicalData(
      next_seq_, FormatTimestamp(std::chrono::system_clock::now()), type_s, data, last_hash_);
  const bool was_empty = batch_.empty();
  if (was_empty) {
    batch_ = std::move(rec.line);  // no copy of a large record (such as a start record)
  } else {
    batch_ += rec.line;
  }
  batch_ += '\n';
  marks_.push_back(Mark{batch_.size(), next_seq_, rec.hash, type_s});
  last_hash_ = std::move(rec.hash);
  ++next_seq_;
  return was_empty;
}

// On demand (StartFlusherOnDemand), the flusher starts with the second ordinary record within
// an interval; records written through on their own (sync types) do not count.
bool SessionLog::StartFlusherIfDueLocked(bool sync, std::chrono::steady_clock::time_point now) {
  bool start_flusher = false;
  if (!flusher_running_ && flusher_on_demand_ && !sync) {
    start_flusher = last_through_ != std::chrono::steady_clock::time_point() &&
                    now - last_through_ < flush_interval_;
    last_through_ = now;
  }
  if (!start_flusher) return false;
  try {
    flusher_ = std::thread([this] { FlusherLoop(); });
    flusher_running_ = true;
  } catch (const std::system_error&) {
    // No thread to be had: records keep being written through.
  }
  return true;
}

Status SessionLog::Flush() {
  bool fire = false;
  Status result;
  {
    std::lock_guard write_lock(write_mu_);
    std::string batch;
    std::vector<Mark> marks;
    {
      std::lock_guard lock(mu_);
      if (!health_.ok()) return health_;
      batch.swap(batch_);
      marks.swap(marks_);
    }
    if (batch.empty()) return Ok();
    result = WriteBatch(batch, marks);
    if (!result.ok()) fire = Fail(result);
  }
  if (fire) FireFailure();
  return result.ok() ? result : health();
}

Status SessionLog::WriteBatch(const std::string& batch, const std::vector<Mark>& marks) {
  KeepReserveAhead(batch.size());
  size_t written = 0;
  int err = WriteAll(log_fd_.get(), batch, &written);
  if (err != 0) {
    KeepCompleteRecords(marks, written);
    return ErrnoError("audit: cannot write " + dir_ + "/" + std::string(kEventsFile), err);
  }
  file_size_ += static_cast<off_t>(batch.size());
  return WriteHead(marks.back().seq, marks.back().hash);
}

// Cuts a torn record off so the file ends at a record boundary, and points the head at the
// last complete record (best effort: the disk may refuse the head too). The records that did
// not reach the file are dropped.
void SessionLog::KeepCompleteRecords(const std::vector<Mark>& marks, size_t written) {
  const Mark* last_good = nullptr;
  for (const Mark& m : marks) {
    if (m.end <= written) last_good = &m;
  }
  size_t good_end = last_good != nullptr ? last_good->end : 0;
  if (good_end != written) {
    if (::ftruncate(log_fd_.get(), file_size_ + static_cast<off_t>(good_end)) != 0) {
      // The torn tail stays; verify reports it as an incomplete last line.
    }
  }
  file_size_ += static_cast<off_t>(good_end);
  if (last_good != nullptr) (void)WriteHead(last_good->seq, last_good->hash);
  std::lock_guard lock(mu_);
  for (const Mark& m : marks) {
    if (m.end > good_end) DropLocked(m.type, m.seq);
  }
}

// Keeps the allocated extent at least half a reserve ahead of what is about to be written. A
// failure to extend is no error yet: records still go into what is left, and the write that
// finds no room fails (closed).
void SessionLog::KeepReserveAhead(size_t incoming) {
  if (reserve_ == 0) return;
  const off_t need = file_size_ + static_cast<off_t>(incoming);
  if (need + reserve_ / 2 <= reserved_end_) return;
  const off_t end = RoundUpToPage(need + reserve_);
  const off_t from = std::min(reserved_end_, need);
  if (Preallocate(log_fd_.get(), from, end - from) == 0) reserved_end_ = end;
}

// Gives back the allocated space beyond the last record: truncating to the size frees the
// blocks past the end of the file.
void SessionLog::ReleaseReserve() {
  if (reserve_ == 0) return;
  if (::ftruncate(log_fd_.get(), file_size_) == 0) reserved_end_ = file_size_;
}

Status SessionLog::WriteHead(int64_t seq, const std::string& hash) {
  if (int err = PutHead(head_fd_.get(), HeadText(seq, hash), &head_len_)) {
    return ErrnoError("audit: cannot write " + dir_ + "/" + std::string(kHeadFile), err);
  }
  return Ok();
}

Status SessionLog::Close() {
  {
    std::lock_guard lock(mu_);
    if (closed_) return health_;
    closed_ = true;
    stop_ = true;
  }
  cv_.notify_all();
  if (flusher_.joinable() && flusher_.get_id() != std::this_thread::get_id()) flusher_.join();
  Status st = Flush();
  {
    std::lock_guard write_lock(write_mu_);
    if (reserve_registered_) {
      ::flock(log_fd_.get(), LOCK_UN);  // written for good: a later session gives it back
    } else {
      ReleaseReserve();
    }
  }
  if (!st.ok()) return st;
  // Every record already reached the kernel with write(2): a dead supervisor loses nothing
  // more. fsync adds survival of a host crash, at several milliseconds per run.
  if (!fsync_on_close_) return health();
  Status sync;
  if (::fsync(log_fd_.get()) != 0) {
    sync = Errno("audit: fsync " + dir_ + "/" + std::string(kEventsFile));
  } else {
    if (::fsync(head_fd_.get()) != 0 || ::fsync(dir_fd_.get()) != 0) {
      sync = Errno("audit: fsync " + dir_ + "/" + std::string(kHeadFile));
    }
  }
  if (!sync.ok() && Fail(sync)) FireFailure();
  return health();
}

Status SessionLog::health() const {
  std::lock_guard lock(mu_);
  return health_;
}

int64_t SessionLog::emitted() const {
  std::lock_guard lock(mu_);
  return next_seq_;
}

bool SessionLog::reserved() const { return reserve_ > 0; }

int64_t SessionLog::dropped() const {
  std::lock_guard lock(mu_);
  return dropped_;
}

std::string SessionLog::DescribeDropped() const {
  std::lock_guard lock(mu_);
  if (dropped_ == 0) return "";
  std::string s = std::to_string(dropped_) + (dropped_ == 1 ? " record" : " records");
  if (first_dropped_seq_ >= 0) s += " (from seq " + std::to_string(first_dropped_seq_) + " on)";
  s += ":";
  bool first = true;
  for (const auto& [type, n] : dropped_by_type_) {
    s += (first ? " " : ", ") + std::to_string(n) + " " + type;
    first = false;
  }
  return s;
}

void SessionLog::DropLocked(const std::string& type, int64_t seq) {
  ++dropped_;
  ++dropped_by_type_[type];
  if (seq >= 0 && (first_dropped_seq_ < 0 || seq < first_dropped_seq_)) first_dropped_seq_ = seq;
}

void SessionLog::OnFailure(std::function<void(const Status&)> callback) {
  bool failed = false;
  {
    std::lock_guard lock(mu_);
    on_failure_ = std::move(callback);
    failed = !health_.ok();
  }
  if (failed) FireFailure();
}

bool SessionLog::Fail(Status st) {
  std::lock_guard lock(mu_);
  if (!health_.ok()) return false;
  health_ = std::move(st);
  // Records emitted meanwhile can never be chained onto the file any more.
  for (const Mark& m : marks_) DropLocked(m.type, m.seq);
  batch_.clear();
  marks_.clear();
  return true;
}

void SessionLog::FireFailure() {
  std::function<void(const Status&)> callback;
  Status st;
  {
    std::lock_guard lock(mu_);
    if (!on_failure_ || failure_fired_) return;
    failure_fired_ = true;
    callback = on_failure_;
    st = health_;
  }
  try {
    callback(st);
  } catch (...) {
    // The callback's own problem; the log's state is already recorded in health().
  }
}

void SessionLog::FlusherLoop() {
  // It writes what the sandbox's events carry: as root, with no capability.
  sys::DropThreadCapabilities();
  std::unique_lock lock(mu_);
  while (!stop_) {
    if (batch_.empty() || !health_.ok()) {
      cv_.wait(lock);
      continue;
    }
    auto deadline = batch_since_ + flush_interval_;
    if (std::chrono::steady_clock::now() < deadline) {
      cv_.wait_until(lock, deadline);
      continue;
    }
    lock.unlock();
    (void)Flush();
    lock.lock();
  }
}

Status RequireReserveOrOwnFileSystem(const SessionLog& log,
                                     const std::vector<std::string>& sandbox_writable) {
  if (log.reserved()) return Ok();
  struct stat trail {};
  if (::stat(log.dir().c_str(), &trail) != 0) return Errno("audit: cannot access " + log.dir());
  for (const std::string& path : sandbox_writable) {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0 || st.st_dev != trail.st_dev) continue;
    return Error(Code::kFailedPrecondition,
                 "audit: the audit trail " + log.dir() + " has no reserve (" +
                     (log.cannot_preallocate() ? "its file system cannot preallocate"
                                               : "none was asked for") +
                     ") and shares its file system with " + path +
                     ", which the sandbox can write: the sandbox could fill it and stop the "
                     "trail. Move the audit trail to another file system");
  }
  return Ok();
}

Status WriteShortSession(const std::string& state_dir, nlohmann::json start,
                         std::vector<std::pair<std::string, nlohmann::json>> records,
                         int exit_code) {
  SessionLog::Options o;
  o.state_dir = state_dir;
  o.session_id = NewSessionId();
  o.start_flusher = false;
  o.reserve_bytes = 0;
  WARD_ASSIGN_OR_RETURN(std::unique_ptr<SessionLog> log, SessionLog::Create(o));
  log->Emit("session.start", std::move(start));
  for (auto& [type, data] : records) log->Emit(type, std::move(data));
  log->Emit("session.end", {{"status", "exited"}, {"exit_code", exit_code}});
  return log->Close();
}

}  // namespace ward::audit
