#include "net/synthetic_names.h"

#include <array>

namespace ward::net {
namespace {

constexpr uint32_t kV4Base = 0xC6120000;  // 198.18.0.0
constexpr int kV4Prefix = 15;
constexpr std::array<uint8_t, 16> kV6Base = {0xfd, 0x77, 0x61, 0x72, 0x64, 0x00, 0x00, 0x00,
                                             0, 0, 0, 0, 0, 0, 0, 0};
constexpr int kV6Prefix = 64;
// Index 0 (the range's own first address) is never given out; the v4 range bounds the rest.
constexpr uint32_t kMaxIndex = (uint32_t{1} << (32 - kV4Prefix)) - 1;

IpAddress V6At(uint32_t index) {
  std::array<uint8_t, 16> b = kV6Base;
  b[12] = static_cast<uint8_t>(index >> 24);
  b[13] = static_cast<uint8_t>(index >> 16);
  b[14] = static_cast<uint8_t>(index >> 8);
  b[15] = static_cast<uint8_t>(index);
  return IpAddress::V6(b);
}

}  // namespace

const IpNet& SyntheticNames::V4Range() {
  static const IpNet net(IpAddress::V4(kV4Base), kV4Prefix);
  return net;
}

const IpNet& SyntheticNames::V6Range() {
  static const IpNet net(IpAddress::V6(kV6Base), kV6Prefix);
  return net;
}

SyntheticNames::SyntheticNames(size_t max_names)
    : max_names_(max_names < kMaxIndex ? max_names : kMaxIndex - 1) {}

std::optional<SyntheticNames::Pair> SyntheticNames::AddressesFor(std::string_view name) {
  std::lock_guard<std::mutex> lock(mu_);
  uint32_t index = 0;
  if (auto it = index_.find(std::string(name)); it != index_.end()) {
    index = it->second;
  } else {
    if (names_.size() >= max_names_) return std::nullopt;
    names_.emplace_back(name);
    index = static_cast<uint32_t>(names_.size());
    index_.emplace(std::string(name), index);
  }
  return Pair{IpAddress::V4(kV4Base + index), V6At(index)};
}

std::optional<uint32_t> SyntheticNames::IndexOf(const IpAddress& addr) const {
  const IpAddress a = addr.Unmapped();
  uint32_t index = 0;
  if (a.is_v4()) {
    if (!V4Range().Contains(a)) return std::nullopt;
    index = a.v4() - kV4Base;
  } else {
    if (!V6Range().Contains(a)) return std::nullopt;
    const auto& b = a.bytes();
    // Only the low 32 bits are ever given out: anything else in the /64 is no one's.
    if (b[8] != 0 || b[9] != 0 || b[10] != 0 || b[11] != 0) return std::nullopt;
    index = (uint32_t{b[12]} << 24) | (uint32_t{b[13]} << 16) | (uint32_t{b[14]} << 8) | b[15];
  }
  return index;
}

std::optional<std::string> SyntheticNames::NameOf(const IpAddress& addr) const {
  std::optional<uint32_t> index = IndexOf(addr);
  if (!index || *index == 0) return std::nullopt;
  std::lock_guard<std::mutex> lock(mu_);
  if (*index > names_.size()) return std::nullopt;
  return names_[*index - 1];
}

bool SyntheticNames::Contains(const IpAddress& addr) const {
  const IpAddress a = addr.Unmapped();
  return a.is_v4() ? V4Range().Contains(a) : V6Range().Contains(a);
}

size_t SyntheticNames::size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return names_.size();
}

}  // namespace ward::net
