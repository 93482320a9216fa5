// Typed, validating access to the `params` object of a request. Every accessor rejects wrong
// types with an invalid_request Error naming the key; Finish() rejects unknown keys, so a typo
// (or a widening option this version does not know) is never silently ignored.
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "api/error.h"

namespace ward::api {

// Strings from clients end up in argv and paths: no NUL, bounded length.
inline constexpr size_t kMaxStringBytes = 64 << 10;
inline constexpr size_t kMaxListItems = 1024;

class Params {
 public:
  // `what` prefixes error messages ("params", "policy").
  Params(const nlohmann::json& j, std::string what = "params");

  bool ok() const { return !error_.has_value(); }
  const Error& error() const { return *error_; }
  bool Has(const std::string& key) const;

  std::optional<std::string> String(const std::string& key, size_t max = kMaxStringBytes);
  // Raw bytes (may contain NUL); for file and stdin data.
  std::optional<std::string> Bytes(const std::string& key, size_t max);
  std::optional<int64_t> Int(const std::string& key, int64_t min, int64_t max);
  std::optional<double> Number(const std::string& key, double min, double max);
  std::optional<bool> Bool(const std::string& key);
  std::vector<std::string> StringList(const std::string& key, size_t max_items = kMaxListItems);
  // An object of string values (labels); values may be null when allow_null.
  std::map<std::string, std::optional<std::string>> StringMap(const std::string& key,
                                                              bool allow_null = false);
  // The raw value (object) for nested parsing; nullopt when absent.
  std::optional<nlohmann::json> Object(const std::string& key);
  // Any value, unchecked (the caller validates it).
  std::optional<nlohmann::json> Raw(const std::string& key);
  // A string or a number, as text ("2G", 1024, 1.5).
  std::optional<std::string> Scalar(const std::string& key);

  void Require(const std::string& key);
  void Fail(std::string message);
  // Rejects keys never asked for. Returns ok().
  bool Finish();

 private:
  const nlohmann::json* Get(const std::string& key);
  void TypeError(const std::string& key, const char* want);
  bool CheckString(const std::string& key, const std::string& s, size_t max, bool allow_nul);

  const nlohmann::json& j_;
  std::string what_;
  std::set<std::string> seen_;
  std::optional<Error> error_;
  bool is_object_ = true;
};

}  // namespace ward::api
