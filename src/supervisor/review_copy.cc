#include "supervisor/review_copy.h"

#include <dirent.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <string_view>
#include <vector>

#include "common/unique_fd.h"

namespace ward::supervisor {
namespace {

std::string Join(const std::string& rel, const std::string& name) {
  return rel.empty() ? name : rel + "/" + name;
}

std::string HumanBytes(uint64_t n) {
  char buf[32];
  if (n >= (uint64_t{1} << 30)) {
    std::snprintf(buf, sizeof buf, "%.1f GiB", static_cast<double>(n) / (1 << 30));
  } else {
    std::snprintf(buf, sizeof buf, "%.1f MiB", static_cast<double>(n) / (1 << 20));
  }
  return buf;
}

std::vector<std::string> Names(int dirfd) {
  std::vector<std::string> out;
  DIR* d = fdopendir(fcntl(dirfd, F_DUPFD_CLOEXEC, 3));
  if (d == nullptr) return out;
  rewinddir(d);  // the descriptor's offset is shared with the caller's: from the start
  while (struct dirent* e = readdir(d)) {
    std::string_view n = e->d_name;
    if (n != "." && n != "..") out.emplace_back(n);
  }
  closedir(d);
  return out;
}

class Copier {
 public:
  Copier(const ReviewSession& s, const CopyLimits& limits) : s_(s), limits_(limits) {}

  Status Run(int64_t* copied_ns) {
    UniqueFd ws(open(s_.workspace.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (!ws) return Errno("opening the workspace " + s_.workspace);
    WARD_TRY(Measure(ws.get(), ""));
    struct stat root;
    if (fstat(ws.get(), &root) != 0) return Errno("stat " + s_.workspace);
    if (mkdir(s_.copy().c_str(), 0700) != 0) return Errno("creating " + s_.copy());
    UniqueFd dst(open(s_.copy().c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (!dst) return Errno("opening " + s_.copy());
    WARD_TRY(CopyDir(ws.get(), dst.get(), ""));
    (void)fchmod(dst.get(), root.st_mode & 01777);
    WARD_TRY(WriteManifest());
    *copied_ns = AfterEveryCtimeSoFar();
    return Ok();
  }

 private:
  // Refuses a workspace above the limits before anything is copied.
  Status Measure(int dirfd, const std::string& rel) {
    for (const std::string& name : Names(dirfd)) {
      struct stat st;
      if (fstatat(dirfd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
      ++entries_;
      if (S_ISREG(st.st_mode)) bytes_ += static_cast<uint64_t>(st.st_size);
      if (entries_ > limits_.max_entries || bytes_ > limits_.max_bytes) {
        return Error(Code::kResourceExhausted,
                     "review mode needs a copy of the workspace here (" + s_.note +
                         "), and " + s_.workspace + " holds more than " +
                         std::to_string(limits_.max_entries) + " entries or " +
                         HumanBytes(limits_.max_bytes) +
                         ": too much to copy. Make overlayfs available (Linux >= 5.11, ward's "
                         "state directory on a file system with user.* extended attributes, "
                         "XDG_STATE_HOME), or run with --workspace=direct");
      }
      if (S_ISDIR(st.st_mode)) {
        UniqueFd sub(openat(dirfd, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
        if (sub) WARD_TRY(Measure(sub.get(), Join(rel, name)));
      }
    }
    return Ok();
  }

  Status CopyDir(int src, int dst, const std::string& rel) {
    for (const std::string& name : Names(src)) {
      struct stat st;
      if (fstatat(src, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
      const std::string path = Join(rel, name);
      if (S_ISDIR(st.st_mode)) {
        UniqueFd from(openat(src, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
        if (!from) continue;  // unreadable: the sandbox could not have read it either
        if (mkdirat(dst, name.c_str(), 0700) != 0) return Errno("creating " + path + " in the copy");
        UniqueFd to(openat(dst, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
        if (!to) return Errno("opening " + path + " in the copy");
        WARD_TRY(CopyDir(from.get(), to.get(), path));
        (void)fchmod(to.get(), st.st_mode & 01777);
        const struct timespec times[2] = {st.st_atim, st.st_mtim};
        (void)futimens(to.get(), times);
      } else if (S_ISLNK(st.st_mode)) {
        std::string target(static_cast<size_t>(st.st_size) + 1, '\0');
        ssize_t n = readlinkat(src, name.c_str(), target.data(), target.size());
        if (n < 0 || static_cast<size_t>(n) >= target.size()) continue;
        target.resize(static_cast<size_t>(n));
        if (symlinkat(target.c_str(), dst, name.c_str()) != 0) {
          return Errno("creating " + path + " in the copy");
        }
      } else if (S_ISREG(st.st_mode)) {
        UniqueFd from(openat(src, name.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
        if (!from) continue;
        WARD_TRY(CopyFile(from.get(), st, dst, name, path));
      } else {
        continue;  // fifos, sockets, devices: not copied
      }
      manifest_ += path;
      manifest_ += '\0';
    }
    return Ok();
  }

  Status CopyFile(int from, const struct stat& st, int dst, const std::string& name,
                  const std::string& path) {
    UniqueFd to(openat(dst, name.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
                       0600));
    if (!to) return Errno("creating " + path + " in the copy");
    if (ioctl(to.get(), FICLONE, from) != 0) WARD_TRY(CopyRange(from, to.get(), st.st_size, path));
    (void)fchmod(to.get(), st.st_mode & 0777);  // never a setuid or setgid bit
    const struct timespec times[2] = {st.st_atim, st.st_mtim};
    (void)futimens(to.get(), times);
    return Ok();
  }

  // No clone to be had: the kernel copies the data (copy_file_range), or where it cannot between
  // these files, it is read and written.
  static Status CopyRange(int from, int to, off_t size, const std::string& path) {
    off_t left = size;
    while (left > 0) {
      ssize_t n = copy_file_range(from, nullptr, to, nullptr, static_cast<size_t>(left), 0);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && (errno == EXDEV || errno == EINVAL || errno == EOPNOTSUPP)) {
        return CopyByReading(from, to, path);
      }
      if (n < 0) return Errno("copying " + path);
      if (n == 0) break;  // the file shrank meanwhile
      left -= n;
    }
    return Ok();
  }

  static Status CopyByReading(int from, int to, const std::string& path) {
    char buf[65536];
    for (;;) {
      ssize_t n = read(from, buf, sizeof buf);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) return Errno("reading " + path);
      if (n == 0) return Ok();
      for (ssize_t off = 0; off < n;) {
        ssize_t w = write(to, buf + off, static_cast<size_t>(n - off));
        if (w < 0 && errno == EINTR) continue;
        if (w < 0) return Errno("copying " + path);
        off += w;
      }
    }
  }

  Status WriteManifest() {
    UniqueFd fd(open(s_.manifest().c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
                     0600));
    if (!fd) return Errno("writing " + s_.manifest());
    for (size_t off = 0; off < manifest_.size();) {
      ssize_t w = write(fd.get(), manifest_.data() + off, manifest_.size() - off);
      if (w < 0 && errno == EINTR) continue;
      if (w < 0) return Errno("writing " + s_.manifest());
      off += static_cast<size_t>(w);
    }
    return Ok();
  }

  // A time after every ctime the copy has, and before every ctime a later change gets: the
  // copy's ctimes are at most the precise clock now; a later change's is at least the coarse
  // clock of its time, so the coarse clock is waited for until it has passed now.
  static int64_t AfterEveryCtimeSoFar() {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    const int64_t now = static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
    while (CoarseNowNs() <= now) {
      const struct timespec nap = {0, 1000000};
      nanosleep(&nap, nullptr);
    }
    return now;
  }

  const ReviewSession& s_;
  const CopyLimits& limits_;
  uint64_t entries_ = 0;
  uint64_t bytes_ = 0;
  std::string manifest_;
};

}  // namespace

Status CopyWorkspace(const ReviewSession& s, const CopyLimits& limits, int64_t* copied_ns) {
  Copier c(s, limits);
  return c.Run(copied_ns);
}

Result<std::set<std::string>> ReadManifest(const ReviewSession& s) {
  UniqueFd fd(open(s.manifest().c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
  if (!fd) return Errno("reading " + s.manifest());
  std::string text;
  char buf[65536];
  for (;;) {
    ssize_t n = read(fd.get(), buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Errno("reading " + s.manifest());
    if (n == 0) break;
    text.append(buf, static_cast<size_t>(n));
  }
  std::set<std::string> out;
  for (size_t i = 0; i < text.size();) {
    size_t nul = text.find('\0', i);
    if (nul == std::string::npos) nul = text.size();
    if (nul > i) out.insert(text.substr(i, nul - i));
    i = nul + 1;
  }
  return out;
}

}  // namespace ward::supervisor
