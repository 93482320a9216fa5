#include "common/status.h"

#include <cstdio>
#include <cstring>

namespace ward {

std::string_view CodeName(Code code) {
  switch (code) {
    case Code::kOk:
      return "ok";
    case Code::kInvalidArgument:
      return "invalid_argument";
    case Code::kNotFound:
      return "not_found";
    case Code::kPermissionDenied:
      return "permission_denied";
    case Code::kFailedPrecondition:
      return "failed_precondition";
    case Code::kResourceExhausted:
      return "resource_exhausted";
    case Code::kTimeout:
      return "timeout";
    case Code::kUnavailable:
      return "unavailable";
    case Code::kInternal:
      return "internal";
  }
  return "unknown";
}

Status& Status::With(std::string_view context) & {
  if (!ok() && !context.empty()) {
    std::string m(context);
    m += ": ";
    m += message_;
    message_ = std::move(m);
  }
  return *this;
}

Status&& Status::With(std::string_view context) && {
  With(context);
  return std::move(*this);
}

std::string Status::ToString() const {
  if (ok()) return "ok";
  std::string s = message_;
  if (err_ != 0) {
    s += ": ";
    s += std::strerror(err_);
  }
  return s;
}

Status Error(Code code, std::string message) { return Status(code, std::move(message)); }
Status InvalidArgument(std::string message) {
  return Status(Code::kInvalidArgument, std::move(message));
}
Status NotFound(std::string message) { return Status(Code::kNotFound, std::move(message)); }

Status ErrnoError(std::string message, int err) {
  Code code = Code::kInternal;
  switch (err) {
    case ENOENT:
      code = Code::kNotFound;
      break;
    case EACCES:
    case EPERM:
      code = Code::kPermissionDenied;
      break;
    case ENOSPC:
    case EDQUOT:
    case EMFILE:
    case ENFILE:
    case ENOMEM:
      code = Code::kResourceExhausted;
      break;
    case EINVAL:
      code = Code::kInvalidArgument;
      break;
    case ETIMEDOUT:
      code = Code::kTimeout;
      break;
    case ENOSYS:
    case EOPNOTSUPP:
      code = Code::kFailedPrecondition;
      break;
    default:
      break;
  }
  return Status(code, std::move(message), err);
}

Status Errno(std::string message) { return ErrnoError(std::move(message), errno); }

namespace internal {
void CheckFailed(const char* file, int line, const char* expr) {
  std::fprintf(stderr, "ward: internal error: %s:%d: check failed: %s\n", file, line, expr);
  std::abort();
}
}  // namespace internal

}  // namespace ward
