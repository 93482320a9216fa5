#include "api/error.h"

#include <cerrno>

namespace ward::api {

namespace {
struct KindInfo {
  ErrorKind kind;
  std::string_view name;
  int code;
};
constexpr KindInfo kKinds[] = {
    {ErrorKind::kNotFound, "not_found", -32001},
    {ErrorKind::kPolicyDenied, "policy_denied", -32002},
    {ErrorKind::kApprovalRequired, "approval_required", -32003},
    {ErrorKind::kTimeout, "timeout", -32004},
    {ErrorKind::kInterrupted, "interrupted", -32005},
    {ErrorKind::kResourceExhausted, "resource_exhausted", -32006},
    {ErrorKind::kInvalidRequest, "invalid_request", kInvalidParamsCode},
    {ErrorKind::kUnsupported, "unsupported", kMethodNotFoundCode},
};
}  // namespace

std::string_view ErrorKindName(ErrorKind kind) {
  for (const auto& k : kKinds) {
    if (k.kind == kind) return k.name;
  }
  return "invalid_request";
}

std::optional<ErrorKind> ParseErrorKind(std::string_view name) {
  for (const auto& k : kKinds) {
    if (k.name == name) return k.kind;
  }
  return std::nullopt;
}

int ErrorCodeFor(ErrorKind kind) {
  for (const auto& k : kKinds) {
    if (k.kind == kind) return k.code;
  }
  return kInvalidParamsCode;
}

nlohmann::json Error::ToJson() const {
  nlohmann::json d = data.is_object() ? data : nlohmann::json::object();
  d["kind"] = std::string(ErrorKindName(kind));
  return {{"code", code != 0 ? code : ErrorCodeFor(kind)}, {"message", message}, {"data", d}};
}

Error MakeError(ErrorKind kind, std::string message) {
  Error e;
  e.kind = kind;
  e.message = std::move(message);
  return e;
}

Error FromStatus(const Status& st) {
  ErrorKind kind = ErrorKind::kInterrupted;
  switch (st.code()) {
    case Code::kOk:
    case Code::kInvalidArgument:
    // A request the present state does not allow (revoking a grant that is no longer live,
    // applying a review session that has ended): the request is what is wrong, so
    // invalid_request, as docs/agents.md says; `unsupported` is for unknown methods.
    case Code::kFailedPrecondition:
      kind = ErrorKind::kInvalidRequest;
      break;
    case Code::kNotFound:
      kind = ErrorKind::kNotFound;
      break;
    case Code::kPermissionDenied:
      kind = ErrorKind::kPolicyDenied;
      break;
    case Code::kResourceExhausted:
      kind = ErrorKind::kResourceExhausted;
      break;
    case Code::kTimeout:
      kind = ErrorKind::kTimeout;
      break;
    case Code::kUnavailable:
    case Code::kInternal:
      kind = ErrorKind::kInterrupted;
      break;
  }
  Error e = MakeError(kind, st.ToString());
  if (st.err() != 0) e.data["errno"] = st.err();
  return e;
}

namespace {
// What an errno of a file operation in the workspace means to a client where that differs from
// ErrnoError's coarse code (common/status.cc): the workspace boundary refuses with EXDEV and
// ELOOP, a path of the wrong type is the request's fault, and a kernel without the call is
// unsupported.
std::optional<ErrorKind> FileErrnoKind(int err) {
  switch (err) {
    case EXDEV:  // RESOLVE_BENEATH: the path leaves the workspace
    case ELOOP:  // RESOLVE_NO_SYMLINKS or O_NOFOLLOW: a symlink on the way
    case EROFS:
    case ETXTBSY:
      return ErrorKind::kPolicyDenied;
    case EFBIG:
      return ErrorKind::kResourceExhausted;
    case ENOTDIR:
    case EISDIR:
    case ENAMETOOLONG:
    case EEXIST:
    case ENOTEMPTY:
    case EBUSY:
      return ErrorKind::kInvalidRequest;
    case ENOSYS:
    case EOPNOTSUPP:
      return ErrorKind::kUnsupported;
    default:
      return std::nullopt;
  }
}
}  // namespace

Error FromErrno(std::string what, int err) {
  Error e = FromStatus(ErrnoError(std::move(what), err));
  if (std::optional<ErrorKind> kind = FileErrnoKind(err)) e.kind = *kind;
  return e;
}

}  // namespace ward::api
