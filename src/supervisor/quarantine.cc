#include "supervisor/quarantine.h"

#include <dirent.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <algorithm>
#include <ctime>

#include "enforce/beneath.h"
#include "common/unique_fd.h"

namespace ward::supervisor {
namespace {

// What a move off the file system may copy before the item is renamed beside itself instead.
constexpr uint64_t kMaxCopyBytes = 64ull << 20;
constexpr uint64_t kMaxCopyEntries = 10000;
constexpr const char* kObject = "object";
constexpr const char* kItemFile = "item.json";

struct Budget {
  uint64_t bytes = kMaxCopyBytes;
  uint64_t entries = kMaxCopyEntries;
};

// Copies one entry (a directory with everything below it) without following a symlink.
// Devices, FIFOs and sockets hold no content and are left out. -errno, or -EFBIG past the budget.
int CopyTree(int src_dir, const std::string& src, int dst_dir, const std::string& dst,
             Budget* budget) {
  if (budget->entries-- == 0) return -EFBIG;
  struct stat st;
  if (fstatat(src_dir, src.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) return -errno;
  if (S_ISLNK(st.st_mode)) {
    std::string target(static_cast<size_t>(st.st_size) + 1, '\0');
    ssize_t n = readlinkat(src_dir, src.c_str(), target.data(), target.size());
    if (n < 0) return -errno;
    target.resize(static_cast<size_t>(n));
    return symlinkat(target.c_str(), dst_dir, dst.c_str()) == 0 ? 0 : -errno;
  }
  if (S_ISREG(st.st_mode)) {
    if (static_cast<uint64_t>(st.st_size) > budget->bytes) return -EFBIG;
    budget->bytes -= static_cast<uint64_t>(st.st_size);
    UniqueFd in(openat(src_dir, src.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
    if (!in) return -errno;
    UniqueFd out(openat(dst_dir, dst.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
                        st.st_mode & 0777));
    if (!out) return -errno;
    char buf[65536];
    ssize_t n;
    uint64_t left = static_cast<uint64_t>(st.st_size);
    while (left > 0 && (n = read(in.get(), buf, std::min<uint64_t>(sizeof buf, left))) > 0) {
      if (write(out.get(), buf, static_cast<size_t>(n)) != n) return -EIO;
      left -= static_cast<uint64_t>(n);
    }
    return 0;
  }
  if (!S_ISDIR(st.st_mode)) return 0;
  if (mkdirat(dst_dir, dst.c_str(), 0700) != 0) return -errno;
  UniqueFd from(openat(src_dir, src.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  UniqueFd to(openat(dst_dir, dst.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!from || !to) return -errno;
  DIR* d = fdopendir(fcntl(from.get(), F_DUPFD_CLOEXEC, 3));
  if (!d) return -errno;
  int rc = 0;
  while (struct dirent* e = readdir(d)) {
    if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
    if ((rc = CopyTree(from.get(), e->d_name, to.get(), e->d_name, budget)) != 0) break;
  }
  closedir(d);
  if (rc == 0) fchmod(to.get(), st.st_mode & 0777);
  return rc;
}

// Removes one entry and, for a directory, everything below it, following no symlink.
int RemoveTree(int dir, const std::string& name) {
  struct stat st;
  if (fstatat(dir, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) return errno == ENOENT ? 0 : -errno;
  if (!S_ISDIR(st.st_mode)) return unlinkat(dir, name.c_str(), 0) == 0 ? 0 : -errno;
  UniqueFd sub(openat(dir, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!sub) return -errno;
  DIR* d = fdopendir(fcntl(sub.get(), F_DUPFD_CLOEXEC, 3));
  if (!d) return -errno;
  int rc = 0;
  while (struct dirent* e = readdir(d)) {
    if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
    if ((rc = RemoveTree(sub.get(), e->d_name)) != 0) break;
  }
  closedir(d);
  if (rc != 0) return rc;
  return unlinkat(dir, name.c_str(), AT_REMOVEDIR) == 0 ? 0 : -errno;
}

// Moves an entry between two directories: a rename, or across file systems a copy and a
// removal. -EFBIG when the copy would exceed the budget (nothing is left of the copy then).
int MoveEntry(int from_dir, const std::string& from, int to_dir, const std::string& to) {
  if (renameat2(from_dir, from.c_str(), to_dir, to.c_str(), RENAME_NOREPLACE) == 0) return 0;
  if (errno != EXDEV) return -errno;
  Budget budget;
  if (int rc = CopyTree(from_dir, from, to_dir, to, &budget); rc != 0) {
    RemoveTree(to_dir, to);
    return rc;
  }
  return RemoveTree(from_dir, from);
}

std::string BaseName(const std::string& path) {
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

std::string DirName(const std::string& path) {
  size_t slash = path.rfind('/');
  if (slash == std::string::npos || slash == 0) return "/";
  return path.substr(0, slash);
}

Result<std::string> ReadSmall(int dir, const char* name) {
  UniqueFd fd(openat(dir, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
  if (!fd) return ward::Errno(std::string("cannot open ") + name);
  std::string out;
  char buf[8192];
  ssize_t n;
  while ((n = read(fd.get(), buf, sizeof buf)) > 0) {
    out.append(buf, static_cast<size_t>(n));
    if (out.size() > (1u << 20)) return Error(Code::kInvalidArgument, "item.json is too large");
  }
  return out;
}

Status WriteNew(int dir, const std::string& name, const std::string& text, mode_t mode) {
  UniqueFd fd(openat(dir, name.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode));
  if (!fd) return ward::Errno("cannot create " + name);
  if (write(fd.get(), text.data(), text.size()) != static_cast<ssize_t>(text.size())) {
    return ward::Errno("cannot write " + name);
  }
  return Status();
}

// The directory that holds `path` (below `root`), opened with no symlink followed on the way.
Result<UniqueFd> OpenParentBeneath(const std::string& root, const std::string& path) {
  std::optional<std::string> rel = enforce::RelativeBeneath(root, DirName(path));
  if (!rel || path == root) {
    return Error(Code::kInvalidArgument, path + " is not below " + root);
  }
  UniqueFd root_fd(open(root.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (!root_fd) return ward::Errno("cannot open " + root);
  return enforce::OpenBeneath(root_fd.get(), root, *rel);
}

}  // namespace

nlohmann::json QuarantineItem::ToJson() const {
  nlohmann::json j = nlohmann::json::object();
  j["id"] = id;
  j["session"] = session;
  j["root"] = root;
  j["path"] = path;
  j["kind"] = kind;
  j["reason"] = reason;
  j["time"] = time;
  j["replaced"] = replaced;
  j["in_place"] = in_place;
  j["object"] = object;
  return j;
}

Result<QuarantineItem> QuarantineItem::FromJson(const nlohmann::json& j) {
  QuarantineItem q;
  try {
    q.id = j.at("id").get<std::string>();
    q.session = j.at("session").get<std::string>();
    q.root = j.at("root").get<std::string>();
    q.path = j.at("path").get<std::string>();
    q.kind = j.at("kind").get<std::string>();
    q.reason = j.at("reason").get<std::string>();
    q.time = j.at("time").get<int64_t>();
    q.replaced = j.at("replaced").get<bool>();
    q.in_place = j.at("in_place").get<bool>();
    q.object = j.at("object").get<std::string>();
  } catch (const std::exception& e) {
    return Error(Code::kInvalidArgument, std::string("a quarantine record is malformed: ") + e.what());
  }
  return q;
}

std::string QuarantineStore::Dir() const { return state_dir_ + "/quarantine"; }

Result<QuarantineItem> QuarantineStore::Take(int parent_fd, const std::string& name,
                                             QuarantineItem item, const std::string* replacement) {
  mkdir(state_dir_.c_str(), 0700);
  if (mkdir(Dir().c_str(), 0700) != 0 && errno != EEXIST) return ward::Errno("cannot create " + Dir());
  UniqueFd qdir(open(Dir().c_str(), O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!qdir) return ward::Errno("cannot open " + Dir());
  for (int n = 1;; ++n) {
    item.id = item.session + "." + std::to_string(n);
    if (mkdirat(qdir.get(), item.id.c_str(), 0700) == 0) break;
    if (errno != EEXIST || n > 100000) return ward::Errno("cannot create a quarantine entry");
  }
  UniqueFd idir(openat(qdir.get(), item.id.c_str(), O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!idir) return ward::Errno("cannot open the quarantine entry");
  item.time = static_cast<int64_t>(::time(nullptr));
  int rc = MoveEntry(parent_fd, name, idir.get(), kObject);
  if (rc == -EFBIG) {
    // Too large to copy off this file system: renamed beside itself, where nothing runs it.
    const std::string beside = ".ward-quarantined." + item.id + "." + name;
    if (renameat2(parent_fd, name.c_str(), parent_fd, beside.c_str(), RENAME_NOREPLACE) != 0) {
      rc = -errno;
    } else {
      rc = 0;
      item.in_place = true;
      item.object = DirName(item.path) + "/" + beside;
    }
  }
  if (rc != 0) {
    unlinkat(qdir.get(), item.id.c_str(), AT_REMOVEDIR);
    errno = -rc;
    return ward::Errno("cannot move " + item.path + " to the quarantine");
  }
  if (!item.in_place) item.object = Dir() + "/" + item.id + "/" + kObject;
  if (replacement) {
    Status st = WriteNew(parent_fd, name, *replacement, 0644);
    if (st.ok()) item.replaced = true;
  }
  if (Status st = WriteNew(idir.get(), kItemFile, item.ToJson().dump(2) + "\n", 0600); !st.ok()) {
    return st;
  }
  return item;
}

Result<std::vector<QuarantineItem>> QuarantineStore::List() const {
  std::vector<QuarantineItem> out;
  DIR* d = opendir(Dir().c_str());
  if (!d) {
    if (errno == ENOENT) return out;
    return ward::Errno("cannot read " + Dir());
  }
  while (struct dirent* e = readdir(d)) {
    if (e->d_name[0] == '.') continue;
    Result<QuarantineItem> q = Get(e->d_name);
    if (q.ok()) out.push_back(std::move(q).value());
  }
  closedir(d);
  std::sort(out.begin(), out.end(), [](const QuarantineItem& a, const QuarantineItem& b) {
    return a.time != b.time ? a.time < b.time : a.id < b.id;
  });
  return out;
}

Result<QuarantineItem> QuarantineStore::Get(const std::string& id) const {
  if (id.empty() || id.find('/') != std::string::npos || id[0] == '.') {
    return Error(Code::kInvalidArgument, "\"" + id + "\" is not a quarantine id (see ward quarantine list)");
  }
  UniqueFd idir(open((Dir() + "/" + id).c_str(), O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!idir) {
    return Error(Code::kNotFound, "no quarantined item " + id + " (see ward quarantine list)");
  }
  Result<std::string> text = ReadSmall(idir.get(), kItemFile);
  if (!text.ok()) return text.status();
  nlohmann::json j = nlohmann::json::parse(*text, nullptr, false);
  if (j.is_discarded()) return Error(Code::kInvalidArgument, "quarantine record " + id + " is not JSON");
  return QuarantineItem::FromJson(j);
}

Status QuarantineStore::Restore(const std::string& id) {
  Result<QuarantineItem> item = Get(id);
  if (!item.ok()) return item.status();
  Result<UniqueFd> parent = OpenParentBeneath(item->root, item->path);
  if (!parent.ok()) {
    return Error(Code::kFailedPrecondition, "cannot restore " + item->path + ": " +
                                                parent.status().message());
  }
  const std::string name = BaseName(item->path);
  struct stat st;
  if (item->replaced && fstatat(parent->get(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 &&
      S_ISREG(st.st_mode)) {
    unlinkat(parent->get(), name.c_str(), 0);
  }
  if (fstatat(parent->get(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0) {
    return Error(Code::kFailedPrecondition, "cannot restore " + item->path +
                                           ": something is there now; move it away first");
  }
  const std::string idpath = Dir() + "/" + id;
  int rc;
  if (item->in_place) {
    rc = renameat2(parent->get(), BaseName(item->object).c_str(), parent->get(), name.c_str(),
                   RENAME_NOREPLACE) == 0 ? 0 : -errno;
  } else {
    UniqueFd idir(open(idpath.c_str(), O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    rc = idir ? MoveEntry(idir.get(), kObject, parent->get(), name) : -errno;
  }
  if (rc != 0) {
    errno = -rc;
    return ward::Errno("cannot restore " + item->path);
  }
  UniqueFd qdir(open(Dir().c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (qdir) RemoveTree(qdir.get(), id);
  return Status();
}

Status QuarantineStore::Drop(const std::string& id) {
  Result<QuarantineItem> item = Get(id);
  if (!item.ok()) return item.status();
  if (item->in_place) {
    Result<UniqueFd> parent = OpenParentBeneath(item->root, item->object);
    if (parent.ok()) {
      if (int rc = RemoveTree(parent->get(), BaseName(item->object)); rc != 0) {
        errno = -rc;
        return ward::Errno("cannot remove " + item->object);
      }
    }
  }
  UniqueFd qdir(open(Dir().c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (!qdir) return ward::Errno("cannot open " + Dir());
  if (int rc = RemoveTree(qdir.get(), id); rc != 0) {
    errno = -rc;
    return ward::Errno("cannot remove quarantine entry " + id);
  }
  return Status();
}

}  // namespace ward::supervisor
