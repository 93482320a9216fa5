// Writing all of a buffer to a descriptor (a short write is continued, EINTR retried).
#pragma once

#include <string_view>

#include "common/status.h"

namespace ward {

// Ok once every byte of `bytes` is written to `fd`; else the errno's error, named by `what`.
Status WriteAll(int fd, std::string_view bytes, const std::string& what);

}  // namespace ward
