#include "oci/config.h"

#include <algorithm>
#include <limits>
#include <nlohmann/json.hpp>

namespace ward::oci {
namespace {

using Json = nlohmann::json;

Status Bad(const std::string& field, const std::string& what) {
  return InvalidArgument("config.json: " + field + ": " + what);
}

// The member `key` of `obj`, or null when absent. An object is required of `obj`.
const Json* Member(const Json& obj, const char* key) {
  auto it = obj.find(key);
  return it == obj.end() || it->is_null() ? nullptr : &*it;
}

Status ReadString(const Json& obj, const char* key, const std::string& field, std::string* out) {
  const Json* v = Member(obj, key);
  if (v == nullptr) return Ok();
  if (!v->is_string()) return Bad(field, "must be a string");
  *out = v->get<std::string>();
  if (out->find('\0') != std::string::npos) return Bad(field, "contains a NUL byte");
  return Ok();
}

Status ReadBool(const Json& obj, const char* key, const std::string& field, bool* out) {
  const Json* v = Member(obj, key);
  if (v == nullptr) return Ok();
  if (!v->is_boolean()) return Bad(field, "must be true or false");
  *out = v->get<bool>();
  return Ok();
}

template <typename T>
Status ReadUnsigned(const Json& v, const std::string& field, T* out) {
  if (!v.is_number_unsigned() && !(v.is_number_integer() && v.get<int64_t>() >= 0)) {
    return Bad(field, "must be a non-negative integer");
  }
  const uint64_t n = v.get<uint64_t>();
  if (n > std::numeric_limits<T>::max()) return Bad(field, "is too large");
  *out = static_cast<T>(n);
  return Ok();
}

Status ReadStrings(const Json& obj, const char* key, const std::string& field,
                   std::vector<std::string>* out) {
  const Json* v = Member(obj, key);
  if (v == nullptr) return Ok();
  if (!v->is_array()) return Bad(field, "must be an array of strings");
  for (const Json& e : *v) {
    if (!e.is_string()) return Bad(field, "must be an array of strings");
    std::string s = e.get<std::string>();
    if (s.find('\0') != std::string::npos) return Bad(field, "contains a NUL byte");
    out->push_back(std::move(s));
  }
  return Ok();
}

Status ReadRlimits(const Json& process, Process* p) {
  const Json* v = Member(process, "rlimits");
  if (v == nullptr) return Ok();
  if (!v->is_array()) return Bad("process.rlimits", "must be an array");
  for (const Json& r : *v) {
    if (!r.is_object()) return Bad("process.rlimits", "each entry must be an object");
    Rlimit l;
    WARD_TRY(ReadString(r, "type", "process.rlimits[].type", &l.type));
    if (!l.type.starts_with("RLIMIT_")) {
      return Bad("process.rlimits[].type", "\"" + l.type + "\" is not an RLIMIT_ name");
    }
    const Json* soft = Member(r, "soft");
    const Json* hard = Member(r, "hard");
    if (soft == nullptr || hard == nullptr) {
      return Bad("process.rlimits[" + l.type + "]", "needs soft and hard");
    }
    WARD_TRY(ReadUnsigned(*soft, "process.rlimits[" + l.type + "].soft", &l.soft));
    WARD_TRY(ReadUnsigned(*hard, "process.rlimits[" + l.type + "].hard", &l.hard));
    if (l.soft > l.hard) return Bad("process.rlimits[" + l.type + "]", "soft is above hard");
    p->rlimits.push_back(std::move(l));
  }
  return Ok();
}

Status ReadUser(const Json& process, Process* p) {
  const Json* user = Member(process, "user");
  if (user == nullptr) return Ok();
  if (!user->is_object()) return Bad("process.user", "must be an object");
  if (const Json* uid = Member(*user, "uid")) WARD_TRY(ReadUnsigned(*uid, "process.user.uid", &p->uid));
  if (const Json* gid = Member(*user, "gid")) WARD_TRY(ReadUnsigned(*gid, "process.user.gid", &p->gid));
  if (const Json* extra = Member(*user, "additionalGids")) {
    if (!extra->is_array()) return Bad("process.user.additionalGids", "must be an array");
    for (const Json& g : *extra) {
      gid_t id = 0;
      WARD_TRY(ReadUnsigned(g, "process.user.additionalGids[]", &id));
      p->additional_gids.push_back(id);
    }
  }
  return Ok();
}

Status ReadProcess(const Json& root, Process* p) {
  const Json* process = Member(root, "process");
  if (process == nullptr || !process->is_object()) {
    return Bad("process", "missing (the container's process: args, env, cwd)");
  }
  WARD_TRY(ReadStrings(*process, "args", "process.args", &p->args));
  if (p->args.empty() || p->args[0].empty()) {
    return Bad("process.args", "must name the program to run");
  }
  WARD_TRY(ReadStrings(*process, "env", "process.env", &p->env));
  for (const std::string& e : p->env) {
    if (e.find('=') == std::string::npos || e[0] == '=') {
      return Bad("process.env", "\"" + e.substr(0, 64) + "\" is not NAME=VALUE");
    }
  }
  WARD_TRY(ReadString(*process, "cwd", "process.cwd", &p->cwd));
  if (p->cwd.empty() || p->cwd[0] != '/') return Bad("process.cwd", "must be an absolute path");
  WARD_TRY(ReadBool(*process, "terminal", "process.terminal", &p->terminal));
  WARD_TRY(ReadBool(*process, "noNewPrivileges", "process.noNewPrivileges", &p->no_new_privileges));
  WARD_TRY(ReadUser(*process, p));
  WARD_TRY(ReadRlimits(*process, p));
  if (const Json* caps = Member(*process, "capabilities")) {
    if (!caps->is_object()) return Bad("process.capabilities", "must be an object");
    WARD_TRY(ReadStrings(*caps, "bounding", "process.capabilities.bounding", &p->capabilities));
  }
  return Ok();
}

Status ReadMounts(const Json& root, std::vector<Mount>* out) {
  const Json* mounts = Member(root, "mounts");
  if (mounts == nullptr) return Ok();
  if (!mounts->is_array()) return Bad("mounts", "must be an array");
  for (const Json& m : *mounts) {
    if (!m.is_object()) return Bad("mounts", "each entry must be an object");
    Mount mount;
    WARD_TRY(ReadString(m, "destination", "mounts[].destination", &mount.destination));
    if (mount.destination.empty() || mount.destination[0] != '/') {
      return Bad("mounts[].destination", "\"" + mount.destination + "\" is not an absolute path");
    }
    const std::string at = "mounts[" + mount.destination + "]";
    WARD_TRY(ReadString(m, "type", at + ".type", &mount.type));
    WARD_TRY(ReadString(m, "source", at + ".source", &mount.source));
    WARD_TRY(ReadStrings(m, "options", at + ".options", &mount.options));
    out->push_back(std::move(mount));
  }
  return Ok();
}

Status ReadResources(const Json& linux, Resources* r) {
  const Json* res = Member(linux, "resources");
  if (res == nullptr) return Ok();
  if (!res->is_object()) return Bad("linux.resources", "must be an object");
  if (const Json* memory = Member(*res, "memory"); memory && memory->is_object()) {
    if (const Json* limit = Member(*memory, "limit")) {
      if (!limit->is_number_integer()) return Bad("linux.resources.memory.limit", "must be an integer");
      if (limit->get<int64_t>() > 0) r->memory_limit = limit->get<int64_t>();
    }
  }
  if (const Json* pids = Member(*res, "pids"); pids && pids->is_object()) {
    if (const Json* limit = Member(*pids, "limit")) {
      if (!limit->is_number_integer()) return Bad("linux.resources.pids.limit", "must be an integer");
      if (limit->get<int64_t>() > 0) r->pids_limit = limit->get<int64_t>();
    }
  }
  if (const Json* cpu = Member(*res, "cpu"); cpu && cpu->is_object()) {
    const Json* quota = Member(*cpu, "quota");
    const Json* period = Member(*cpu, "period");
    if (quota && quota->is_number_integer() && quota->get<int64_t>() > 0) {
      r->cpu_quota_us = quota->get<uint64_t>();
      r->cpu_period_us = 100000;
      if (period) WARD_TRY(ReadUnsigned(*period, "linux.resources.cpu.period", &*r->cpu_period_us));
      if (*r->cpu_period_us == 0) return Bad("linux.resources.cpu.period", "must not be 0");
    }
  }
  return Ok();
}

bool Known(const std::vector<std::string>& known, const std::string& s) {
  return std::find(known.begin(), known.end(), s) != known.end();
}

Status ReadSeccompAction(const Json& obj, const char* key, const std::string& field,
                         std::string* out) {
  WARD_TRY(ReadString(obj, key, field, out));
  if (*out == "SCMP_ACT_NOTIFY") {
    return Bad(field, "SCMP_ACT_NOTIFY is not supported: ward's supervisor holds the container's "
                      "only seccomp listener");
  }
  if (!Known(SeccompActions(), *out)) {
    return Bad(field, "\"" + *out + "\" is not a seccomp action");
  }
  return Ok();
}

Status ReadErrnoRet(const Json& obj, const char* key, const std::string& field,
                    std::optional<uint32_t>* out) {
  const Json* v = Member(obj, key);
  if (v == nullptr) return Ok();
  uint32_t e = 0;
  WARD_TRY(ReadUnsigned(*v, field, &e));
  if (e > 4095) return Bad(field, "must be an errno (at most 4095)");
  *out = e;
  return Ok();
}

Status ReadSeccompRule(const Json& r, const std::string& field, SeccompRule* rule) {
  if (!r.is_object()) return Bad(field, "must be an object");
  WARD_TRY(ReadStrings(r, "names", field + ".names", &rule->names));
  WARD_TRY(ReadSeccompAction(r, "action", field + ".action", &rule->action));
  WARD_TRY(ReadErrnoRet(r, "errnoRet", field + ".errnoRet", &rule->errno_ret));
  const Json* args = Member(r, "args");
  if (args == nullptr) return Ok();
  if (!args->is_array()) return Bad(field + ".args", "must be an array");
  if (args->size() > 6) return Bad(field + ".args", "more than 6 comparisons in one rule");
  for (const Json& a : *args) {
    const std::string f = field + ".args[]";
    if (!a.is_object()) return Bad(f, "must be an object");
    SeccompArg arg;
    if (const Json* i = Member(a, "index")) WARD_TRY(ReadUnsigned(*i, f + ".index", &arg.index));
    if (arg.index > 5) return Bad(f + ".index", "must be 0 to 5");
    if (const Json* v = Member(a, "value")) WARD_TRY(ReadUnsigned(*v, f + ".value", &arg.value));
    if (const Json* v = Member(a, "valueTwo")) {
      WARD_TRY(ReadUnsigned(*v, f + ".valueTwo", &arg.value_two));
    }
    WARD_TRY(ReadString(a, "op", f + ".op", &arg.op));
    if (!Known(SeccompOperators(), arg.op)) return Bad(f + ".op", "\"" + arg.op + "\" is not a comparison");
    rule->args.push_back(arg);
  }
  return Ok();
}

Status ReadSeccomp(const Json& linux, Config* c) {
  const Json* v = Member(linux, "seccomp");
  if (v == nullptr) return Ok();
  if (!v->is_object()) return Bad("linux.seccomp", "must be an object");
  Seccomp s;
  WARD_TRY(ReadSeccompAction(*v, "defaultAction", "linux.seccomp.defaultAction", &s.default_action));
  WARD_TRY(ReadErrnoRet(*v, "defaultErrnoRet", "linux.seccomp.defaultErrnoRet",
                        &s.default_errno_ret));
  WARD_TRY(ReadStrings(*v, "architectures", "linux.seccomp.architectures", &s.architectures));
  WARD_TRY(ReadStrings(*v, "flags", "linux.seccomp.flags", &s.flags));
  if (Member(*v, "listenerPath") != nullptr) {
    return Bad("linux.seccomp.listenerPath", "is not supported: ward's supervisor holds the "
                                             "container's only seccomp listener");
  }
  if (const Json* rules = Member(*v, "syscalls")) {
    if (!rules->is_array()) return Bad("linux.seccomp.syscalls", "must be an array");
    for (size_t i = 0; i < rules->size(); ++i) {
      SeccompRule rule;
      WARD_TRY(ReadSeccompRule((*rules)[i], "linux.seccomp.syscalls[" + std::to_string(i) + "]",
                               &rule));
      s.syscalls.push_back(std::move(rule));
    }
  }
  c->seccomp = std::move(s);
  return Ok();
}

Status ReadLinux(const Json& root, Config* c) {
  const Json* linux = Member(root, "linux");
  if (linux == nullptr) return Ok();
  if (!linux->is_object()) return Bad("linux", "must be an object");
  if (const Json* nss = Member(*linux, "namespaces")) {
    if (!nss->is_array()) return Bad("linux.namespaces", "must be an array");
    static const std::vector<std::string> kKnown = {"pid",  "network", "mount", "ipc",
                                                    "uts",  "user",    "cgroup", "time"};
    for (const Json& n : *nss) {
      if (!n.is_object()) return Bad("linux.namespaces", "each entry must be an object");
      Namespace ns;
      WARD_TRY(ReadString(n, "type", "linux.namespaces[].type", &ns.type));
      if (std::find(kKnown.begin(), kKnown.end(), ns.type) == kKnown.end()) {
        return Bad("linux.namespaces[].type", "\"" + ns.type + "\" is not a namespace type");
      }
      WARD_TRY(ReadString(n, "path", "linux.namespaces[" + ns.type + "].path", &ns.path));
      if (!ns.path.empty() && ns.path[0] != '/') {
        return Bad("linux.namespaces[" + ns.type + "].path", "must be an absolute path");
      }
      c->namespaces.push_back(std::move(ns));
    }
  }
  WARD_TRY(ReadString(*linux, "cgroupsPath", "linux.cgroupsPath", &c->cgroups_path));
  WARD_TRY(ReadResources(*linux, &c->resources));
  return ReadSeccomp(*linux, c);
}

Status ReadRootAndNames(const Json& root, Config* c) {
  const Json* r = Member(root, "root");
  if (r == nullptr || !r->is_object()) return Bad("root", "missing (the container's root file system)");
  WARD_TRY(ReadString(*r, "path", "root.path", &c->root_path));
  if (c->root_path.empty()) return Bad("root.path", "must name the root file system");
  WARD_TRY(ReadBool(*r, "readonly", "root.readonly", &c->root_readonly));
  WARD_TRY(ReadString(root, "hostname", "hostname", &c->hostname));
  WARD_TRY(ReadString(root, "ociVersion", "ociVersion", &c->oci_version));
  if (const Json* a = Member(root, "annotations")) {
    if (!a->is_object()) return Bad("annotations", "must be an object of strings");
    for (const auto& [k, v] : a->items()) {
      if (!v.is_string()) return Bad("annotations." + k, "must be a string");
      c->annotations[k] = v.get<std::string>();
    }
  }
  return Ok();
}

}  // namespace

const std::vector<std::string>& SeccompActions() {
  static const std::vector<std::string> kActions = {
      "SCMP_ACT_KILL",  "SCMP_ACT_KILL_THREAD", "SCMP_ACT_KILL_PROCESS", "SCMP_ACT_TRAP",
      "SCMP_ACT_ERRNO", "SCMP_ACT_TRACE",       "SCMP_ACT_ALLOW",        "SCMP_ACT_LOG"};
  return kActions;
}

const std::vector<std::string>& SeccompOperators() {
  static const std::vector<std::string> kOperators = {
      "SCMP_CMP_NE", "SCMP_CMP_LT", "SCMP_CMP_LE",       "SCMP_CMP_EQ",
      "SCMP_CMP_GE", "SCMP_CMP_GT", "SCMP_CMP_MASKED_EQ"};
  return kOperators;
}

bool Mount::bind() const {
  if (type == "bind" || type == "rbind") return true;
  return std::any_of(options.begin(), options.end(),
                     [](const std::string& o) { return o == "bind" || o == "rbind"; });
}

bool Mount::read_only() const {
  return std::find(options.begin(), options.end(), "ro") != options.end();
}

std::string PodNetworkPath(const Config& config) {
  std::string path;
  for (const Namespace& ns : config.namespaces) {
    if (ns.type == "network" && !ns.path.empty()) path = ns.path;
  }
  return path;
}

Result<Config> ParseConfig(std::string_view text) {
  if (text.size() > kMaxConfigBytes) return Bad("the file", "larger than 4 MiB");
  Json root = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (root.is_discarded()) return Bad("the file", "not valid JSON");
  if (!root.is_object()) return Bad("the file", "not a JSON object");
  Config c;
  WARD_TRY(ReadRootAndNames(root, &c));
  WARD_TRY(ReadProcess(root, &c.process));
  WARD_TRY(ReadMounts(root, &c.mounts));
  WARD_TRY(ReadLinux(root, &c));
  return c;
}

namespace {

// A part of config.json given on its own (an exec's process, an update's resources), read with
// that part's checks under `key`; an error names the field within it ("NAME: field: ...").
template <typename T>
Result<T> ParseAlone(std::string_view text, const std::string& name, const char* key,
                     std::string_view field_prefix, Status (*read)(const Json&, T*)) {
  if (text.size() > kMaxConfigBytes) return InvalidArgument(name + ": larger than 4 MiB");
  Json part = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (part.is_discarded()) return InvalidArgument(name + ": not valid JSON");
  if (!part.is_object()) return InvalidArgument(name + ": not a JSON object");
  T out;
  const Json holder = {{key, std::move(part)}};
  if (Status status = read(holder, &out); !status.ok()) {
    std::string message = status.message();
    if (message.starts_with(field_prefix)) message = name + ": " + message.substr(field_prefix.size());
    return InvalidArgument(message);
  }
  return out;
}

}  // namespace

Result<Resources> ParseResources(std::string_view text) {
  return ParseAlone<Resources>(text, "resources", "resources", "config.json: linux.resources.",
                               ReadResources);
}

Result<Process> ParseProcess(std::string_view text) {
  return ParseAlone<Process>(text, "process", "process", "config.json: process.", ReadProcess);
}

}  // namespace ward::oci
