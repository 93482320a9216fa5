#include "supervisor/review_diff.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>

#include "common/line_diff.h"
#include "common/linux.h"
#include "common/sha256.h"
#include "common/unique_fd.h"
#include "enforce/beneath.h"

namespace ward::supervisor {
namespace {

// Text larger than this is shown as a binary change.
constexpr size_t kMaxTextBytes = 4 << 20;
// git's test for binary content: a NUL in the first 8000 bytes.
constexpr size_t kBinaryProbeBytes = 8000;

struct Content {
  bool present = false;
  bool too_big = false;
  std::string bytes;
};

// A file below `root_fd` opened following no symlink on the way (enforce/beneath.h), read up
// to kMaxTextBytes (`too_big` beyond).
Content ReadBeneath(int root_fd, const std::string& rel, bool tree, size_t max = kMaxTextBytes) {
  Content c;
  const int flags = O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC;
  UniqueFd fd = tree ? OpenTreeEntry(root_fd, rel, flags)
                     : UniqueFd(sys::Openat2(root_fd, rel.c_str(), flags, 0, enforce::kResolveBeneath));
  if (!fd) return c;
  struct stat st;
  if (fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode)) return c;
  c.present = true;
  char buf[65536];
  for (;;) {
    ssize_t n = read(fd.get(), buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    if (c.bytes.size() + static_cast<size_t>(n) > max) {
      c.too_big = true;
      c.bytes.clear();
      break;
    }
    c.bytes.append(buf, static_cast<size_t>(n));
  }
  return c;
}

bool LooksBinary(const Content& c) {
  if (c.too_big) return true;
  return std::memchr(c.bytes.data(), '\0', std::min(c.bytes.size(), kBinaryProbeBytes)) != nullptr;
}

// The length of the UTF-8 sequence at s[i] and its code point, or 0 when invalid.
size_t Utf8At(std::string_view s, size_t i, uint32_t* cp) {
  const unsigned char c = static_cast<unsigned char>(s[i]);
  size_t len;
  uint32_t v;
  if (c < 0x80) {
    *cp = c;
    return 1;
  } else if ((c & 0xE0) == 0xC0) {
    len = 2, v = c & 0x1F;
  } else if ((c & 0xF0) == 0xE0) {
    len = 3, v = c & 0x0F;
  } else if ((c & 0xF8) == 0xF0) {
    len = 4, v = c & 0x07;
  } else {
    return 0;
  }
  if (i + len > s.size()) return 0;
  for (size_t k = 1; k < len; ++k) {
    const unsigned char b = static_cast<unsigned char>(s[i + k]);
    if ((b & 0xC0) != 0x80) return 0;
    v = (v << 6) | (b & 0x3F);
  }
  static constexpr uint32_t kMin[5] = {0, 0, 0x80, 0x800, 0x10000};
  if (v < kMin[len] || v > 0x10FFFF || (v >= 0xD800 && v <= 0xDFFF)) return 0;
  *cp = v;
  return len;
}

bool Hidden(uint32_t cp) {
  return (cp < 0x20 && cp != '\t') || cp == 0x7F || (cp >= 0x80 && cp <= 0x9F) || cp == 0x200E ||
         cp == 0x200F || (cp >= 0x202A && cp <= 0x202E) || (cp >= 0x2066 && cp <= 0x2069);
}

// One line of text for the terminal: what could act on it or hide text is an escape.
std::string RenderLine(std::string_view line) {
  std::string out;
  out.reserve(line.size());
  char esc[16];
  for (size_t i = 0; i < line.size();) {
    uint32_t cp = 0;
    const size_t len = Utf8At(line, i, &cp);
    if (len == 0) {
      std::snprintf(esc, sizeof esc, "\\x%02x", static_cast<unsigned char>(line[i]));
      out += esc;
      ++i;
      continue;
    }
    const bool crlf = cp == '\r' && i + 1 == line.size();
    if (Hidden(cp) && !crlf) {
      std::snprintf(esc, sizeof esc, cp < 0x80 ? "\\x%02x" : "\\u%04x", cp);
      out += esc;
    } else {
      out.append(line, i, len);
    }
    i += len;
  }
  return out;
}

std::string ModeText(mode_t type_bits, mode_t mode) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "%06o", static_cast<unsigned>(type_bits | mode));
  return buf;
}

mode_t TypeBits(EntryType t) {
  switch (t) {
    case EntryType::kFile:
      return S_IFREG;
    case EntryType::kDir:
      return S_IFDIR;
    case EntryType::kSymlink:
      return S_IFLNK;
    default:
      return S_IFIFO;
  }
}

class Renderer {
 public:
  Renderer(int host_fd, int tree_fd) : host_fd_(host_fd), tree_fd_(tree_fd) {}

  void Change(const ReviewChange& c) {
    const bool type_changed = c.kind == ReviewChange::Kind::kModify && c.old_type != c.new_type;
    if (type_changed) {
      // Shown as git shows it: the old entry deleted, the new one added.
      Side(c, /*old_side=*/true, /*new_side=*/false);
      Side(c, false, true);
      return;
    }
    Side(c, c.kind != ReviewChange::Kind::kAdd, c.kind != ReviewChange::Kind::kDelete);
  }

  std::string Take() { return std::move(out_); }
  size_t files() const { return files_; }

 private:
  // A block for the change's old side, new side, or both (a modification of the same type).
  void Side(const ReviewChange& c, bool old_side, bool new_side) {
    ++files_;
    const std::string a = QuotePath("a/" + c.path), b = QuotePath("b/" + c.path);
    out_ += "diff --git " + a + " " + b + "\n";
    const EntryType type = new_side ? c.new_type : c.old_type;
    const std::string dir_word = type == EntryType::kDir ? "directory" : "file";
    if (old_side && !new_side) {
      out_ += "deleted " + dir_word + " mode " + ModeText(TypeBits(c.old_type), c.old_mode) + "\n";
    } else if (new_side && !old_side) {
      out_ += "new " + dir_word + " mode " + ModeText(TypeBits(c.new_type), c.new_mode) + "\n";
    } else if (c.old_mode != c.new_mode) {
      out_ += "old mode " + ModeText(TypeBits(c.old_type), c.old_mode) + "\n";
      out_ += "new mode " + ModeText(TypeBits(c.new_type), c.new_mode) + "\n";
    }
    if (type == EntryType::kDir) return;
    if (type == EntryType::kOther) {
      out_ += "(a special file: ward apply leaves it out)\n";
      return;
    }
    if (old_side && new_side && !c.content_changed) return;
    Content before, after;
    if (old_side) before = Read(host_fd_, c, c.old_type, c.old_link, /*tree=*/false);
    if (new_side) after = Read(tree_fd_, c, c.new_type, c.new_link, /*tree=*/true);
    const std::string from = old_side ? a : "/dev/null";
    const std::string to = new_side ? b : "/dev/null";
    if ((old_side && LooksBinary(before)) || (new_side && LooksBinary(after))) {
      out_ += "Binary files " + from + " and " + to + " differ\n";
      return;
    }
    std::string hunks =
        UnifiedHunks(SplitLines(before.bytes), SplitLines(after.bytes), 3, &RenderLine);
    if (hunks.empty()) return;
    out_ += "--- " + from + "\n+++ " + to + "\n" + hunks;
  }

  // A symlink's content is its target, as git shows it (no final newline).
  static Content Read(int root_fd, const ReviewChange& c, EntryType type, const std::string& link,
                      bool tree) {
    if (type == EntryType::kSymlink) {
      Content l;
      l.present = true;
      l.bytes = link;
      return l;
    }
    return ReadBeneath(root_fd, c.path, tree);
  }

  const int host_fd_;
  const int tree_fd_;
  std::string out_;
  size_t files_ = 0;
};

}  // namespace

std::string QuotePath(const std::string& path) {
  bool plain = true;
  for (unsigned char ch : path) {
    if (ch < 0x20 || ch >= 0x7F || ch == '"' || ch == '\\') plain = false;
  }
  if (plain) return path;
  std::string out = "\"";
  char esc[8];
  for (unsigned char ch : path) {
    switch (ch) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (ch < 0x20 || ch >= 0x7F) {
          std::snprintf(esc, sizeof esc, "\\%03o", ch);
          out += esc;
        } else {
          out += static_cast<char>(ch);
        }
    }
  }
  return out + "\"";
}

Result<RenderedDiff> RenderDiff(const ReviewSession& s, const std::vector<ReviewChange>& changes) {
  UniqueFd host(open(s.workspace.c_str(), O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!host) return Errno("opening the workspace " + s.workspace);
  UniqueFd tree(open(s.tree().c_str(), O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!tree) return Errno("opening the run's tree " + s.tree());
  Renderer r(host.get(), tree.get());
  for (const ReviewChange& c : changes) r.Change(c);
  RenderedDiff d;
  d.files = r.files();
  d.text = r.Take();
  d.sha256 = Sha256Hex(d.text);
  return d;
}

std::string NewContentSha256(const ReviewSession& s, const ReviewChange& c) {
  if (c.new_type == EntryType::kSymlink) return Sha256Hex(c.new_link);
  if (c.new_type != EntryType::kFile) return "";
  UniqueFd tree(open(s.tree().c_str(), O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!tree) return "";
  UniqueFd fd = OpenTreeEntry(tree.get(), c.path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (!fd) return "";
  Sha256 h;
  char buf[65536];
  for (;;) {
    ssize_t n = read(fd.get(), buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    h.Update(std::string_view(buf, static_cast<size_t>(n)));
  }
  return h.FinalHex();
}

}  // namespace ward::supervisor
