// Fetching a credential's real secret on the host, in the supervisor, once per session and
// before the sandbox starts (a missing source stops the run with an error naming it):
//   env:VAR      the caller's environment;
//   file:PATH    a regular file owned by the caller (or root) that neither group nor others may
//                write (whoever can write it chooses what the broker sends), at most 64 KiB;
//   command:CMD  /bin/sh -c CMD on the host with stdin from /dev/null, stdout captured, stderr
//                kept for the error message, in its own process group, killed at the timeout;
//                a nonzero exit, a signal or the timeout is an error.
// The value is trimmed of surrounding whitespace and must then be one non-empty line of
// printable characters (it goes into HTTP header fields).
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <optional>
#include <string>

#include "common/status.h"
#include "policy/policy.h"

namespace ward::net {

struct SecretSourceOptions {
  // The caller's environment; default: getenv.
  std::function<std::optional<std::string>(const std::string&)> getenv;
  std::chrono::milliseconds command_timeout{30000};
  size_t max_bytes = 64 << 10;
};

// Errors never contain the secret (nor the command's output).
Result<std::string> FetchSecret(const policy::CredentialSource& from,
                                const SecretSourceOptions& options = {});

// Trims and validates a fetched value (exposed for tests).
Result<std::string> CleanSecret(std::string raw);

}  // namespace ward::net
