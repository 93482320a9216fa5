// Building nlohmann::json values without its brace lists, where a record is made on every run.
#pragma once

#include <cstddef>
#include <nlohmann/json.hpp>
#include <utility>

namespace ward {

// A JSON object built member by member: JsonObject()("a", 1)("b", "x") converts to a json.
// nlohmann's brace lists ({{"a", 1}, {"b", "x"}}) first build each member as a two-element
// array and then copy it into the object: slow for the policy in every session's start record,
// which holds every rule with its origin.
class JsonObject {
 public:
  template <typename T>
  JsonObject&& operator()(const char* key, T&& value) && {
    members_.emplace(key, std::forward<T>(value));
    return std::move(*this);
  }
  operator nlohmann::json() && { return nlohmann::json(std::move(members_)); }

 private:
  nlohmann::json::object_t members_;
};

// An array of `n` elements made by make(i).
template <typename Make>
nlohmann::json JsonArray(size_t n, Make make) {
  nlohmann::json::array_t a;
  a.reserve(n);
  for (size_t i = 0; i < n; ++i) a.emplace_back(make(i));
  return nlohmann::json(std::move(a));
}

}  // namespace ward
