#include "oci/state.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "common/unique_fd.h"
#include "common/write_all.h"
#include "common/untrusted_file.h"

namespace ward::oci {
namespace {

constexpr size_t kMaxStateBytes = 1u << 20;

std::string Dir(const std::string& root, const std::string& id) { return root + "/" + id; }

}  // namespace

Status CheckContainerId(const std::string& id) {
  if (id.empty() || id.size() > 128 || id[0] == '.') {
    return InvalidArgument("container id \"" + id.substr(0, 64) +
                           "\": 1 to 128 of A-Z a-z 0-9 _ . + -, not starting with '.'");
  }
  for (char c : id) {
    if (!isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '.' && c != '+' && c != '-') {
      return InvalidArgument("container id \"" + id.substr(0, 64) +
                             "\": 1 to 128 of A-Z a-z 0-9 _ . + -, not starting with '.'");
    }
  }
  return Ok();
}

uint64_t ProcessStartTime(pid_t pid) {
  if (pid <= 0) return 0;
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  // The command name (field 2) may hold spaces and parentheses: fields count from the last ')'.
  size_t close = stat.rfind(')');
  if (close == std::string::npos) return 0;
  std::istringstream rest(stat.substr(close + 1));
  std::string field;
  for (int i = 3; i <= 22 && rest >> field; ++i) {
    if (i == 22) return std::strtoull(field.c_str(), nullptr, 10);
  }
  return 0;
}

std::string ContainerStatus(const ContainerState& s) {
  if (s.pid <= 0) return "creating";
  if (s.pid_start == 0 || ProcessStartTime(s.pid) != s.pid_start) return "stopped";
  return s.started ? "running" : "created";
}

nlohmann::json StateJson(const ContainerState& s) {
  const std::string status = ContainerStatus(s);
  nlohmann::json j = {{"ociVersion", kOciVersion},
                      {"id", s.id},
                      {"status", status},
                      {"bundle", s.bundle},
                      {"annotations", s.annotations}};
  j["pid"] = status == "created" || status == "running" ? s.pid : 0;
  if (!s.created.empty()) j["created"] = s.created;
  return j;
}

namespace {

// The state root and any missing parent, as runc makes them (the engines name a root below
// their own state, which may not exist yet); the root itself 0700.
Status MakeRoot(const std::string& root) {
  if (root.empty() || root[0] != '/') return InvalidArgument("--root " + root + " is not absolute");
  for (size_t i = root.find('/', 1); i != std::string::npos; i = root.find('/', i + 1)) {
    const std::string parent = root.substr(0, i);
    if (mkdir(parent.c_str(), 0711) != 0 && errno != EEXIST) return ErrnoError("--root " + parent, errno);
  }
  if (mkdir(root.c_str(), 0700) != 0 && errno != EEXIST) return ErrnoError("--root " + root, errno);
  return Ok();
}

}  // namespace

std::string StateDir(const std::string& root, const std::string& id) { return Dir(root, id); }


Status ClaimState(const std::string& root, const std::string& id) {
  WARD_TRY(CheckContainerId(id));
  WARD_TRY(MakeRoot(root));
  if (mkdir(Dir(root, id).c_str(), 0700) != 0) {
    if (errno == EEXIST) return InvalidArgument("container " + id + " already exists");
    return ErrnoError(Dir(root, id), errno);
  }
  return Ok();
}

Status SaveState(const std::string& root, const ContainerState& s) {
  WARD_TRY(CheckContainerId(s.id));
  WARD_TRY(MakeRoot(root));
  const std::string dir = Dir(root, s.id);
  if (mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) return ErrnoError(dir, errno);
  nlohmann::json j = {{"id", s.id},           {"bundle", s.bundle},   {"pid", s.pid},
                      {"pid_start", s.pid_start}, {"started", s.started}, {"created", s.created},
                      {"annotations", s.annotations}, {"cgroup_leaf", s.cgroup_leaf}};
  const std::string tmp = dir + "/state.json.tmp";
  UniqueFd fd(open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600));
  if (!fd) return ErrnoError(tmp, errno);
  WARD_TRY(WriteAll(fd.get(), j.dump(), tmp));
  if (rename(tmp.c_str(), (dir + "/state.json").c_str()) != 0) {
    return ErrnoError(dir + "/state.json", errno);
  }
  return Ok();
}

Result<ContainerState> LoadState(const std::string& root, const std::string& id) {
  WARD_TRY(CheckContainerId(id));
  UntrustedFileRules rules;
  rules.max_bytes = kMaxStateBytes;
  rules.owners = {geteuid()};
  Result<std::string> text = ReadUntrustedFile(Dir(root, id) + "/state.json", rules);
  if (!text.ok()) {
    if (text.status().code() == Code::kNotFound) {
      return NotFound("container " + id + " does not exist");
    }
    return std::move(text).take_status().With("container " + id);
  }
  nlohmann::json j = nlohmann::json::parse(*text, nullptr, /*allow_exceptions=*/false);
  ContainerState s;
  try {
    s.id = j.at("id").get<std::string>();
    s.bundle = j.at("bundle").get<std::string>();
    s.pid = j.at("pid").get<pid_t>();
    s.pid_start = j.at("pid_start").get<uint64_t>();
    s.started = j.at("started").get<bool>();
    s.created = j.at("created").get<std::string>();
    s.annotations = j.at("annotations").get<std::map<std::string, std::string>>();
    s.cgroup_leaf = j.value("cgroup_leaf", std::string());
  } catch (const nlohmann::json::exception&) {
    return Error(Code::kFailedPrecondition, "container " + id + ": its state file is damaged");
  }
  if (s.id != id) return Error(Code::kFailedPrecondition, "container " + id + ": its state names another");
  return s;
}

Status KillInit(const ContainerState& s, int sig) {
  if (s.pid <= 0 || s.pid_start == 0) return Ok();
  UniqueFd pidfd(static_cast<int>(syscall(SYS_pidfd_open, s.pid, 0)));
  if (!pidfd) return errno == ESRCH ? Ok() : Errno("pidfd_open");
  // Checked after the pidfd is held: the pid cannot be reused while it is.
  if (ProcessStartTime(s.pid) != s.pid_start) return Ok();
  if (syscall(SYS_pidfd_send_signal, pidfd.get(), sig, nullptr, 0) != 0 && errno != ESRCH) {
    return Errno("pidfd_send_signal");
  }
  return Ok();
}

Status RemoveState(const std::string& root, const std::string& id) {
  WARD_TRY(CheckContainerId(id));
  const std::string dir = Dir(root, id);
  for (const char* name : {"state.json", "state.json.tmp", kStartSocket, kExecSocket}) {
    const std::string path = dir + "/" + name;
    if (unlink(path.c_str()) != 0 && errno != ENOENT) return ErrnoError(path, errno);
  }
  if (rmdir(dir.c_str()) != 0 && errno != ENOENT) return ErrnoError(dir, errno);
  return Ok();
}

}  // namespace ward::oci
