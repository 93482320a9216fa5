#include "policy/toml.h"

#include <cstdio>
#include <cstdlib>

namespace ward::policy {

void TomlUnreachable() {
  std::fputs("ward: the TOML parser (toml++) reached a point it takes for unreachable; stopping "
             "rather than going on undefined\n",
             stderr);
  std::abort();
}

}  // namespace ward::policy
