// The addresses the DNS stub hands the sandbox when transparent capture is on: one per allowed
// name for the session, from reserved ranges that lead nowhere outside (198.18.0.0/15, the
// benchmarking range, and a unique-local IPv6 /64). Inside the sandbox's network namespace TCP
// to them reaches the supervisor's transparent listener (enforce/ns/capture.h), which maps the
// original destination back to the name here. So a real address never reaches the sandbox, and
// what it connects to is decided by the name it asked for.
#pragma once

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "net/addr.h"

namespace ward::net {

class SyntheticNames {
 public:
  static const IpNet& V4Range();  // 198.18.0.0/15
  static const IpNet& V6Range();  // fd77:6172:6400::/64

  // At most `max_names` names get addresses (beyond: none, and the stub answers SERVFAIL).
  explicit SyntheticNames(size_t max_names = kDefaultMaxNames);

  struct Pair {
    IpAddress v4, v6;
  };
  // The name's addresses, given on its first query and kept for the session. `name` is
  // normalised (lower case, no trailing dot). nullopt: the table is full.
  std::optional<Pair> AddressesFor(std::string_view name);
  // The name an address was given to; nullopt for any other address (IPv4-mapped IPv6 spellings
  // of a synthetic IPv4 address count as it).
  std::optional<std::string> NameOf(const IpAddress& addr) const;
  bool Contains(const IpAddress& addr) const;  // in either range, given out or not

  size_t size() const;
  static constexpr size_t kDefaultMaxNames = 65536;

 private:
  std::optional<uint32_t> IndexOf(const IpAddress& addr) const;

  const size_t max_names_;
  mutable std::mutex mu_;  // the stub and the proxy may run on different threads
  std::unordered_map<std::string, uint32_t> index_;
  std::vector<std::string> names_;  // names_[i - 1] has index i
};

}  // namespace ward::net
