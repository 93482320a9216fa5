// ward quarantine list|show|restore|drop: what the check after a run took out of a writable
// root (supervisor/quarantine.h), and a human's decision about each item. Restoring and
// dropping are recorded in the audit trail, in a session of their own.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <memory>
#include <string>

#include "audit/session_log.h"
#include "audit/sessions.h"
#include "cli/commands.h"
#include "common/unique_fd.h"
#include "supervisor/quarantine.h"

namespace ward::cli {
namespace {

constexpr size_t kShowBytes = 64 * 1024;

struct QuarantineOptions {
  std::string state_dir;
  std::string id;
  bool json = false;
};

std::string StateDir(const QuarantineOptions& o) {
  return o.state_dir.empty() ? audit::DefaultStateDir() : o.state_dir;
}

std::string Shown(const std::string& s) { return audit::SanitizeForTerminal(s); }

// Content shown line by line: each line made safe for the terminal on its own.
std::string ShownLines(const std::string& s) {
  std::string out;
  size_t i = 0;
  while (i <= s.size()) {
    size_t nl = s.find('\n', i);
    if (nl == std::string::npos) nl = s.size();
    std::string line = audit::SanitizeForTerminal(s.substr(i, nl - i));
    for (size_t t; (t = line.find("\\x09")) != std::string::npos;) line.replace(t, 4, "\t");
    out += line;
    if (nl < s.size()) out += '\n';
    i = nl + 1;
  }
  return out;
}

int List(const QuarantineOptions& o) {
  supervisor::QuarantineStore store(StateDir(o));
  Result<std::vector<supervisor::QuarantineItem>> items = store.List();
  if (!items.ok()) {
    std::fprintf(stderr, "ward quarantine: %s\n", items.status().ToString().c_str());
    return kExitFailed;
  }
  if (o.json) {
    nlohmann::json a = nlohmann::json::array();
    for (const auto& q : *items) a.push_back(q.ToJson());
    std::printf("%s\n", a.dump(2).c_str());
    return kExitOk;
  }
  if (items->empty()) std::printf("nothing is in the quarantine\n");
  for (const auto& q : *items) {
    std::printf("%s  %-10s %s\n    %s\n", q.id.c_str(), q.kind.c_str(), Shown(q.path).c_str(),
                Shown(q.reason).c_str());
  }
  return kExitOk;
}

// A file's first bytes (as text the terminal cannot act on), or a directory's entries.
void ShowObject(const supervisor::QuarantineItem& q) {
  UniqueFd fd(open(q.object.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
  struct stat st;
  if (!fd || fstat(fd.get(), &st) != 0) {
    struct stat lst;
    if (lstat(q.object.c_str(), &lst) == 0 && S_ISLNK(lst.st_mode)) {
      char target[4096];
      ssize_t n = readlink(q.object.c_str(), target, sizeof target - 1);
      if (n >= 0) std::printf("a symlink to %s\n", Shown(std::string(target, n)).c_str());
      return;
    }
    std::printf("(it holds no content: a socket, FIFO or device)\n");
    return;
  }
  if (S_ISDIR(st.st_mode)) {
    std::printf("a directory; look inside: ls -la %s\n", Shown(q.object).c_str());
    return;
  }
  std::string buf(kShowBytes, '\0');
  ssize_t n = read(fd.get(), buf.data(), buf.size());
  buf.resize(n > 0 ? static_cast<size_t>(n) : 0);
  std::printf("mode %04o, %lld bytes:\n%s%s\n", st.st_mode & 07777,
              static_cast<long long>(st.st_size), ShownLines(buf).c_str(),
              st.st_size > static_cast<off_t>(kShowBytes) ? "\n[...]" : "");
}

int Show(const QuarantineOptions& o) {
  supervisor::QuarantineStore store(StateDir(o));
  Result<supervisor::QuarantineItem> q = store.Get(o.id);
  if (!q.ok()) {
    std::fprintf(stderr, "ward quarantine: %s\n", q.status().ToString().c_str());
    return kExitFailed;
  }
  if (o.json) {
    std::printf("%s\n", q->ToJson().dump(2).c_str());
    return kExitOk;
  }
  std::printf("id:      %s\nsession: %s\nwas at:  %s\nkind:    %s\nwhy:     %s\nnow at:  %s\n",
              q->id.c_str(), q->session.c_str(), Shown(q->path).c_str(), q->kind.c_str(),
              Shown(q->reason).c_str(), Shown(q->object).c_str());
  if (q->replaced) std::printf("in its place: a copy with only its inert keys\n");
  std::printf("\n");
  ShowObject(*q);
  return kExitOk;
}

// A session of its own records a human's decision (the run's session is closed by then).
void Record(const QuarantineOptions& o, const char* verb, const supervisor::QuarantineItem& q) {
  Status st = audit::WriteShortSession(
      StateDir(o),
      {{"ward_version", WARD_VERSION}, {"command", {"ward", "quarantine", verb, q.id}},
       {"uid", getuid()}},
      {{std::string("quarantine.") + verb, q.ToJson()}}, 0);
  if (!st.ok()) {
    std::fprintf(stderr, "ward quarantine: not recorded in the audit trail: %s\n",
                 st.ToString().c_str());
  }
}

int Restore(const QuarantineOptions& o) {
  supervisor::QuarantineStore store(StateDir(o));
  Result<supervisor::QuarantineItem> q = store.Get(o.id);
  Status st = q.ok() ? store.Restore(o.id) : q.status();
  if (!st.ok()) {
    std::fprintf(stderr, "ward quarantine: %s\n", st.ToString().c_str());
    return kExitFailed;
  }
  Record(o, "restore", *q);
  std::printf("restored %s\n", Shown(q->path).c_str());
  return kExitOk;
}

int Drop(const QuarantineOptions& o) {
  supervisor::QuarantineStore store(StateDir(o));
  Result<supervisor::QuarantineItem> q = store.Get(o.id);
  Status st = q.ok() ? store.Drop(o.id) : q.status();
  if (!st.ok()) {
    std::fprintf(stderr, "ward quarantine: %s\n", st.ToString().c_str());
    return kExitFailed;
  }
  Record(o, "drop", *q);
  std::printf("dropped %s (it was at %s)\n", q->id.c_str(), Shown(q->path).c_str());
  return kExitOk;
}

}  // namespace

void AddQuarantineCommand(CLI::App& app, int* exit_code) {
  auto o = std::make_shared<QuarantineOptions>();
  CLI::App* q = app.add_subcommand(
      "quarantine", "What the check after a run took out of the workspace, and what to do with it");
  q->require_subcommand(1);
  q->add_option("--state-dir", o->state_dir,
                "ward's state directory (default: $XDG_STATE_HOME/ward or ~/.local/state/ward)");
  CLI::App* list = q->add_subcommand("list", "Every quarantined item: id, kind, where, why");
  list->add_flag("--json", o->json, "As JSON");
  list->callback([o, exit_code] { *exit_code = List(*o); });
  CLI::App* show = q->add_subcommand("show", "One item: where it was, why, and its content");
  show->add_option("id", o->id, "The item's id (ward quarantine list)")->required();
  show->add_flag("--json", o->json, "As JSON");
  show->callback([o, exit_code] { *exit_code = Show(*o); });
  CLI::App* restore =
      q->add_subcommand("restore", "Put an item back where it was (only if nothing took its place)");
  restore->add_option("id", o->id, "The item's id")->required();
  restore->callback([o, exit_code] { *exit_code = Restore(*o); });
  CLI::App* drop = q->add_subcommand("drop", "Delete an item for good");
  drop->add_option("id", o->id, "The item's id")->required();
  drop->callback([o, exit_code] { *exit_code = Drop(*o); });
}

}  // namespace ward::cli
