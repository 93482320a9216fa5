// Errors as values: Status and Result<T>. Untrusted input always becomes a Status; broken
// internal invariants abort (WARD_CHECK).
#pragma once

#include <cerrno>
#include <cstdlib>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

namespace ward {

// Coarse error kinds: what a caller (or an API client) can act upon.
enum class Code {
  kOk = 0,
  kInvalidArgument,     // bad input: malformed profile, bogus request
  kNotFound,            // a named thing does not exist
  kPermissionDenied,    // policy said no
  kFailedPrecondition,  // the host cannot do what was asked (missing kernel feature)
  kResourceExhausted,   // limits, full disk
  kTimeout,
  kUnavailable,  // transient: try again
  kInternal,     // a syscall failed where it should not have
};

std::string_view CodeName(Code code);

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(Code code, std::string message, int err = 0)
      : code_(code), err_(err), message_(std::move(message)) {}

  bool ok() const { return code_ == Code::kOk; }
  Code code() const { return code_; }
  // The errno that caused this error, 0 when none.
  int err() const { return err_; }
  const std::string& message() const { return message_; }

  // Adds context on the way up: "loading profile: line 3: unknown key".
  Status& With(std::string_view context) &;
  Status&& With(std::string_view context) &&;

  // "message" plus ": strerror" when an errno is attached.
  std::string ToString() const;

 private:
  Code code_ = Code::kOk;
  int err_ = 0;
  std::string message_;
};

inline Status Ok() { return Status(); }
Status Error(Code code, std::string message);
Status InvalidArgument(std::string message);
Status NotFound(std::string message);
// An error carrying an errno value; ToString() appends strerror(err).
Status ErrnoError(std::string message, int err);
// Same with the current errno.
Status Errno(std::string message);

template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}        // NOLINT(google-explicit-constructor)
  Result(Status status) : v_(std::move(status)) {  // NOLINT(google-explicit-constructor)
    if (std::get<Status>(v_).ok()) std::abort();   // a Result error must be an error
  }

  bool ok() const { return std::holds_alternative<T>(v_); }
  const Status& status() const {
    static const Status kOkStatus;
    return ok() ? kOkStatus : std::get<Status>(v_);
  }
  Status take_status() && { return ok() ? Status() : std::move(std::get<Status>(v_)); }

  T& value() & { return std::get<T>(v_); }
  const T& value() const& { return std::get<T>(v_); }
  T&& value() && { return std::get<T>(std::move(v_)); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

 private:
  std::variant<T, Status> v_;
};

namespace internal {
inline Status AsStatus(Status s) { return s; }
template <typename T>
Status AsStatus(Result<T>&& r) {
  return std::move(r).take_status();
}
[[noreturn]] void CheckFailed(const char* file, int line, const char* expr);
}  // namespace internal

}  // namespace ward

#define WARD_CONCAT_INNER(a, b) a##b
#define WARD_CONCAT(a, b) WARD_CONCAT_INNER(a, b)

// Returns the error of a Status- or Result-valued expression.
#define WARD_TRY(expr)                                            \
  do {                                                            \
    ::ward::Status _ward_st = ::ward::internal::AsStatus((expr)); \
    if (!_ward_st.ok()) return _ward_st;                          \
  } while (0)

#define WARD_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr)    \
  auto tmp = (expr);                                  \
  if (!tmp.ok()) return std::move(tmp).take_status(); \
  lhs = std::move(tmp).value()

// WARD_ASSIGN_OR_RETURN(auto x, Compute()); declares x or returns the error.
#define WARD_ASSIGN_OR_RETURN(lhs, expr) \
  WARD_ASSIGN_OR_RETURN_IMPL(WARD_CONCAT(_ward_r_, __LINE__), lhs, expr)

// Internal invariants only, never for input validation.
#define WARD_CHECK(cond) \
  ((cond) ? (void)0 : ::ward::internal::CheckFailed(__FILE__, __LINE__, #cond))
