#include "api/service.h"

#include "api/params.h"
#include "api/service_internal.h"

namespace ward::api {

using namespace internal;  // what the service*.cc files share (service_internal.h)

namespace {

nlohmann::json InfoJson(const FileInfo& f) {
  return {{"path", f.path}, {"type", f.type},         {"size", f.size},
          {"mode", f.mode}, {"mtime_ms", f.mtime_ms}, {"writable", f.writable}};
}

// One fs.* call on a sandbox's workspace. What it changes is recorded in the sandbox's audit
// session, and so is a refusal by the policy.
class FsCall {
 public:
  FsCall(const std::string& op, const WorkspaceFs& fs, audit::SessionLog* log)
      : op_(op), fs_(fs), log_(log) {}

  Expected<nlohmann::json> Read(Params& p);
  Expected<nlohmann::json> Write(Params& p);
  Expected<nlohmann::json> List(Params& p);
  Expected<nlohmann::json> Stat(Params& p);
  Expected<nlohmann::json> Mkdir(Params& p);
  Expected<nlohmann::json> Remove(Params& p);
  Expected<nlohmann::json> Rename(Params& p);

 private:
  void Emit(std::string_view type, nlohmann::json data) {
    if (log_) log_->Emit(type, std::move(data));
  }
  // A change whose record could not be written is reported as such, not as a success.
  Expected<nlohmann::json> Recorded(nlohmann::json result) {
    if (auto failed = AuditFailure(log_)) {
      failed->message = "fs." + op_ + " was done but not recorded: " + failed->message;
      return *failed;
    }
    return result;
  }
  Error Denied(const Error& e, const std::string& path) {
    if (e.kind == ErrorKind::kPolicyDenied) {
      Emit("fs.deny", {{"op", op_}, {"path", path}, {"reason", e.message}});
    }
    return e;
  }

  const std::string& op_;
  const WorkspaceFs& fs_;
  audit::SessionLog* log_;
};

Expected<nlohmann::json> FsCall::Read(Params& p) {
  p.Require("path");
  auto path = p.String("path", 4096);
  auto offset = p.Int("offset", 0, INT64_MAX);
  auto length = p.Int("length", 0, static_cast<int64_t>(kMaxDataBytes));
  auto encoding = p.String("encoding", 16);
  if (!p.Finish()) return p.error();
  std::string enc = encoding.value_or("utf8");
  if (enc != "utf8" && enc != "base64") return InvalidError("encoding must be utf8 or base64");
  auto r = fs_.Read(*path, static_cast<uint64_t>(offset.value_or(0)),
                    static_cast<size_t>(length.value_or(kDefaultReadBytes)));
  if (!r.ok()) return Denied(r.error(), *path);
  return nlohmann::json{{"path", *path},
                        {"offset", offset.value_or(0)},
                        {"size", r->size},
                        {"eof", r->eof},
                        {"encoding", enc},
                        {"length", r->data.size()},
                        {"data", EncodeData(r->data, enc)}};
}

Expected<nlohmann::json> FsCall::Write(Params& p) {
  p.Require("path");
  p.Require("data");
  auto path = p.String("path", 4096);
  auto data = p.Bytes("data", kMaxDataBytes * 2);
  auto encoding = p.String("encoding", 16);
  auto mode = p.Int("mode", 0, 0777);
  auto atomic = p.Bool("atomic");
  if (!p.Finish()) return p.error();
  WARD_API_ASSIGN_OR_RETURN(std::string bytes,
                            DecodeData(*data, encoding.value_or("utf8"), "data"));
  if (bytes.size() > kMaxDataBytes) {
    return MakeError(ErrorKind::kResourceExhausted, "data is larger than 16 MiB");
  }
  std::optional<uint32_t> m;
  if (mode) m = static_cast<uint32_t>(*mode);
  auto r = fs_.Write(*path, bytes, m, atomic.value_or(true));
  if (!r.ok()) return Denied(r.error(), *path);
  Emit("fs.write", {{"path", r->path}, {"bytes", bytes.size()}});
  return Recorded(InfoJson(*r));
}

Expected<nlohmann::json> FsCall::List(Params& p) {
  auto path = p.String("path", 4096);
  auto depth = p.Int("depth", 1, kMaxListDepth);
  auto max_entries = p.Int("max_entries", 1, static_cast<int64_t>(kMaxListEntries));
  if (!p.Finish()) return p.error();
  bool truncated = false;
  auto r = fs_.List(path.value_or("."), static_cast<int>(depth.value_or(1)),
                    static_cast<size_t>(max_entries.value_or(kMaxListEntries)), &truncated);
  if (!r.ok()) return Denied(r.error(), path.value_or("."));
  nlohmann::json entries = nlohmann::json::array();
  for (const auto& f : *r) entries.push_back(InfoJson(f));
  return nlohmann::json{
      {"path", path.value_or(".")}, {"entries", entries}, {"truncated", truncated}};
}

Expected<nlohmann::json> FsCall::Stat(Params& p) {
  p.Require("path");
  auto path = p.String("path", 4096);
  if (!p.Finish()) return p.error();
  auto r = fs_.Stat(*path);
  if (!r.ok()) return Denied(r.error(), *path);
  return InfoJson(*r);
}

Expected<nlohmann::json> FsCall::Mkdir(Params& p) {
  p.Require("path");
  auto path = p.String("path", 4096);
  auto parents = p.Bool("parents");
  if (!p.Finish()) return p.error();
  auto r = fs_.Mkdir(*path, parents.value_or(false));
  if (!r.ok()) return Denied(r.error(), *path);
  Emit("fs.mkdir", {{"path", r->path}});
  return Recorded(InfoJson(*r));
}

Expected<nlohmann::json> FsCall::Remove(Params& p) {
  p.Require("path");
  auto path = p.String("path", 4096);
  auto recursive = p.Bool("recursive");
  if (!p.Finish()) return p.error();
  auto r = fs_.Remove(*path, recursive.value_or(false));
  if (!r.ok()) return Denied(r.error(), *path);
  Emit("fs.remove", {{"path", *path}, {"recursive", recursive.value_or(false)}});
  return Recorded({{"path", *path}, {"removed", true}});
}

Expected<nlohmann::json> FsCall::Rename(Params& p) {
  p.Require("from");
  p.Require("to");
  auto from = p.String("from", 4096);
  auto to = p.String("to", 4096);
  auto overwrite = p.Bool("overwrite");
  if (!p.Finish()) return p.error();
  auto r = fs_.Rename(*from, *to, overwrite.value_or(false));
  if (!r.ok()) return Denied(r.error(), *from + " -> " + *to);
  Emit("fs.rename", {{"from", *from}, {"to", *to}});
  return Recorded({{"from", *from}, {"to", *to}, {"renamed", true}});
}

}  // namespace

Expected<nlohmann::json> Service::Fs(const std::string& op, const nlohmann::json& params) {
  Params p(params);
  WARD_API_ASSIGN_OR_RETURN(Sandbox * s, FindSandbox(p));
  if (auto failed = AuditFailure(s->log.get())) return *failed;
  if (s->review) {
    return MakeError(ErrorKind::kUnsupported,
                     "fs." + op + " in a review-mode sandbox would go around its overlay (the "
                     "workspace the execs see is not the host's): use exec.run, and "
                     "review.diff to see what changed");
  }
  FsCall call(op, *s->fs, s->log.get());
  if (op == "read") return call.Read(p);
  if (op == "write") return call.Write(p);
  if (op == "list") return call.List(p);
  if (op == "stat") return call.Stat(p);
  if (op == "mkdir") return call.Mkdir(p);
  if (op == "remove") return call.Remove(p);
  if (op == "rename") return call.Rename(p);
  Error e = MakeError(ErrorKind::kUnsupported, "unknown method \"fs." + op + "\"");
  e.code = kMethodNotFoundCode;
  return e;
}

}  // namespace ward::api
