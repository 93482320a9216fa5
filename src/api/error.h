// Errors of the agent API (`ward serve`, `ward mcp`): every failure a client sees carries one of
// a closed set of kinds, so clients can act on it without parsing messages.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

#include "common/status.h"

namespace ward::api {

enum class ErrorKind {
  kNotFound,           // no such sandbox, exec or file
  kPolicyDenied,       // the sandbox's policy (or the workspace boundary) says no
  kApprovalRequired,   // needs a grant through the approval broker
  kTimeout,            // a wait ran out
  kInterrupted,        // the operation or command was cut short (daemon, sandbox or I/O died)
  kResourceExhausted,  // a limit of the daemon or the host
  kInvalidRequest,     // malformed JSON, bad parameters, widening where only narrowing is allowed
  kUnsupported,        // unknown method, or a feature this build does not have
};

// "not_found", "policy_denied", ...
std::string_view ErrorKindName(ErrorKind kind);
std::optional<ErrorKind> ParseErrorKind(std::string_view name);

// JSON-RPC error codes: the standard ones where they fit, -320xx for the rest.
inline constexpr int kParseErrorCode = -32700;
inline constexpr int kInvalidRequestCode = -32600;
inline constexpr int kMethodNotFoundCode = -32601;
inline constexpr int kInvalidParamsCode = -32602;
int ErrorCodeFor(ErrorKind kind);

struct Error {
  ErrorKind kind = ErrorKind::kInvalidRequest;
  std::string message;
  int code = 0;                                    // 0: ErrorCodeFor(kind)
  nlohmann::json data = nlohmann::json::object();  // extra fields for the error's `data`

  // {"code", "message", "data": {"kind", ...data}}
  nlohmann::json ToJson() const;
};

Error MakeError(ErrorKind kind, std::string message);
inline Error NotFoundError(std::string m) { return MakeError(ErrorKind::kNotFound, std::move(m)); }
inline Error DeniedError(std::string m) {
  return MakeError(ErrorKind::kPolicyDenied, std::move(m));
}
inline Error InvalidError(std::string m) {
  return MakeError(ErrorKind::kInvalidRequest, std::move(m));
}
// From a ward::Status (code mapping documented in docs/agents.md).
Error FromStatus(const Status& st);
// From an errno of a file operation on `what`.
Error FromErrno(std::string what, int err);

// A value or an Error (Result<T> carries a Status, whose codes are coarser than ErrorKind).
template <typename T>
class [[nodiscard]] Expected {
 public:
  Expected(T value) : v_(std::move(value)) {}      // NOLINT(google-explicit-constructor)
  Expected(Error error) : v_(std::move(error)) {}  // NOLINT(google-explicit-constructor)
  bool ok() const { return std::holds_alternative<T>(v_); }
  T& value() & { return std::get<T>(v_); }
  const T& value() const& { return std::get<T>(v_); }
  T&& value() && { return std::get<T>(std::move(v_)); }
  const Error& error() const { return std::get<Error>(v_); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

 private:
  std::variant<T, Error> v_;
};

// Empty success.
struct Done {};

}  // namespace ward::api

// Returns the error of an Expected-valued expression.
#define WARD_API_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                                   \
  if (!tmp.ok()) return tmp.error();                   \
  lhs = std::move(tmp).value()
#define WARD_API_ASSIGN_OR_RETURN(lhs, expr) \
  WARD_API_ASSIGN_OR_RETURN_IMPL(WARD_CONCAT(_ward_api_r_, __LINE__), lhs, expr)
#define WARD_API_TRY(expr)                             \
  do {                                                 \
    auto _ward_api_e = (expr);                         \
    if (!_ward_api_e.ok()) return _ward_api_e.error(); \
  } while (0)
