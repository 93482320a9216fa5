#include "api/params.h"

#include <cmath>

namespace ward::api {

namespace {
const nlohmann::json kEmpty = nlohmann::json::object();
}

Params::Params(const nlohmann::json& j, std::string what)
    : j_(j.is_null() ? kEmpty : j), what_(std::move(what)) {
  if (!j_.is_object()) {
    is_object_ = false;
    Fail(what_ + " must be an object");
  }
}

bool Params::Has(const std::string& key) const {
  return is_object_ && j_.contains(key) && !j_[key].is_null();
}

void Params::Fail(std::string message) {
  if (!error_) error_ = InvalidError(std::move(message));
}

void Params::TypeError(const std::string& key, const char* want) {
  Fail(what_ + "." + key + " must be " + want);
}

const nlohmann::json* Params::Get(const std::string& key) {
  seen_.insert(key);
  if (!is_object_) return nullptr;
  auto it = j_.find(key);
  if (it == j_.end() || it->is_null()) return nullptr;
  return &*it;
}

bool Params::CheckString(const std::string& key, const std::string& s, size_t max, bool allow_nul) {
  if (s.size() > max) {
    Fail(what_ + "." + key + " is too long (more than " + std::to_string(max) + " bytes)");
    return false;
  }
  if (!allow_nul && s.find('\0') != std::string::npos) {
    Fail(what_ + "." + key + " must not contain NUL");
    return false;
  }
  return true;
}

void Params::Require(const std::string& key) {
  seen_.insert(key);
  if (!Has(key)) Fail(what_ + "." + key + " is required");
}

std::optional<std::string> Params::String(const std::string& key, size_t max) {
  const auto* v = Get(key);
  if (!v) return std::nullopt;
  if (!v->is_string()) {
    TypeError(key, "a string");
    return std::nullopt;
  }
  const auto& s = v->get_ref<const std::string&>();
  if (!CheckString(key, s, max, false)) return std::nullopt;
  return s;
}

std::optional<std::string> Params::Bytes(const std::string& key, size_t max) {
  const auto* v = Get(key);
  if (!v) return std::nullopt;
  if (!v->is_string()) {
    TypeError(key, "a string");
    return std::nullopt;
  }
  const auto& s = v->get_ref<const std::string&>();
  if (!CheckString(key, s, max, true)) return std::nullopt;
  return s;
}

std::optional<int64_t> Params::Int(const std::string& key, int64_t min, int64_t max) {
  const auto* v = Get(key);
  if (!v) return std::nullopt;
  int64_t x = 0;
  if (v->is_number_integer()) {
    x = v->get<int64_t>();
  } else if (v->is_number_unsigned()) {
    uint64_t u = v->get<uint64_t>();
    if (u > static_cast<uint64_t>(max)) {
      Fail(what_ + "." + key + " is out of range");
      return std::nullopt;
    }
    x = static_cast<int64_t>(u);
  } else if (v->is_number_float()) {
    double d = v->get<double>();
    if (!std::isfinite(d) || d != std::floor(d) || d < static_cast<double>(min) ||
        d > static_cast<double>(max)) {
      TypeError(key, "an integer in range");
      return std::nullopt;
    }
    x = static_cast<int64_t>(d);
  } else {
    TypeError(key, "an integer");
    return std::nullopt;
  }
  if (x < min || x > max) {
    Fail(what_ + "." + key + " must be between " + std::to_string(min) + " and " +
         std::to_string(max));
    return std::nullopt;
  }
  return x;
}

std::optional<double> Params::Number(const std::string& key, double min, double max) {
  const auto* v = Get(key);
  if (!v) return std::nullopt;
  if (!v->is_number()) {
    TypeError(key, "a number");
    return std::nullopt;
  }
  double d = v->get<double>();
  if (!std::isfinite(d) || d < min || d > max) {
    Fail(what_ + "." + key + " is out of range");
    return std::nullopt;
  }
  return d;
}

std::optional<bool> Params::Bool(const std::string& key) {
  const auto* v = Get(key);
  if (!v) return std::nullopt;
  if (!v->is_boolean()) {
    TypeError(key, "a boolean");
    return std::nullopt;
  }
  return v->get<bool>();
}

std::vector<std::string> Params::StringList(const std::string& key, size_t max_items) {
  std::vector<std::string> out;
  const auto* v = Get(key);
  if (!v) return out;
  if (!v->is_array()) {
    TypeError(key, "an array of strings");
    return out;
  }
  if (v->size() > max_items) {
    Fail(what_ + "." + key + " has too many items");
    return out;
  }
  for (const auto& item : *v) {
    if (!item.is_string()) {
      TypeError(key, "an array of strings");
      return {};
    }
    const auto& s = item.get_ref<const std::string&>();
    if (!CheckString(key, s, kMaxStringBytes, false)) return {};
    out.push_back(s);
  }
  return out;
}

std::map<std::string, std::optional<std::string>> Params::StringMap(const std::string& key,
                                                                    bool allow_null) {
  std::map<std::string, std::optional<std::string>> out;
  seen_.insert(key);
  if (!is_object_ || !j_.contains(key) || j_[key].is_null()) return out;
  const auto& v = j_[key];
  if (!v.is_object()) {
    TypeError(key, "an object of strings");
    return out;
  }
  if (v.size() > kMaxListItems) {
    Fail(what_ + "." + key + " has too many entries");
    return out;
  }
  for (const auto& [k, val] : v.items()) {
    if (!CheckString(key, k, 1024, false)) return {};
    if (val.is_null() && allow_null) {
      out[k] = std::nullopt;
    } else if (val.is_string()) {
      if (!CheckString(key, val.get_ref<const std::string&>(), kMaxStringBytes, false)) return {};
      out[k] = val.get<std::string>();
    } else {
      TypeError(key, allow_null ? "an object of strings (or null)" : "an object of strings");
      return {};
    }
  }
  return out;
}

std::optional<nlohmann::json> Params::Object(const std::string& key) {
  const auto* v = Get(key);
  if (!v) return std::nullopt;
  if (!v->is_object()) {
    TypeError(key, "an object");
    return std::nullopt;
  }
  return *v;
}

std::optional<nlohmann::json> Params::Raw(const std::string& key) {
  const auto* v = Get(key);
  if (!v) return std::nullopt;
  return *v;
}

std::optional<std::string> Params::Scalar(const std::string& key) {
  const auto* v = Get(key);
  if (!v) return std::nullopt;
  if (v->is_string()) {
    const auto& s = v->get_ref<const std::string&>();
    if (!CheckString(key, s, 256, false)) return std::nullopt;
    return s;
  }
  if (v->is_number_integer() || v->is_number_unsigned()) return v->dump();
  if (v->is_number_float()) {
    double d = v->get<double>();
    if (!std::isfinite(d)) {
      TypeError(key, "a finite number");
      return std::nullopt;
    }
    return v->dump();
  }
  TypeError(key, "a string or a number");
  return std::nullopt;
}

bool Params::Finish() {
  if (error_ || !is_object_) return ok();
  for (const auto& [k, v] : j_.items()) {
    if (seen_.count(k) == 0) {
      Fail(what_ + ": unknown key \"" + k + "\"");
      break;
    }
  }
  return ok();
}

}  // namespace ward::api
