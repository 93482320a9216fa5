// The encoding of what one side of ward sends the other in a memfd or a packet (the launch
// plan, an exec request): little more than lengths and bytes, both sides the same binary. The
// reader bounds every count and length by what is left, so hostile bytes fail with the field's
// name before anything is allocated for them.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

namespace ward::enforce::wire {

class Writer {
 public:
  template <typename T>
  void Raw(const T& v) {
    static_assert(std::is_trivially_copyable_v<T>);
    out_.append(reinterpret_cast<const char*>(&v), sizeof v);
  }
  void Bool(bool v) { Raw<uint8_t>(v ? 1 : 0); }
  void Str(const std::string& s) {
    Raw<uint64_t>(s.size());
    out_ += s;
  }
  // A count, then each element as `put` writes it.
  template <typename T, typename Put>
  void Vec(const std::vector<T>& v, Put put) {
    Raw<uint64_t>(v.size());
    for (const T& e : v) put(e);
  }
  void Strs(const std::vector<std::string>& v) {
    Vec(v, [this](const std::string& s) { Str(s); });
  }
  std::string Take() { return std::move(out_); }

 private:
  std::string out_;
};

// Reads in order; the first short or out-of-range read names its field and every later read
// fails too.
class Reader {
 public:
  explicit Reader(std::string_view in) : in_(in) {}

  template <typename T>
  bool Raw(const char* field, T* v) {
    static_assert(std::is_trivially_copyable_v<T>);
    if (!Need(field, sizeof *v)) return false;
    std::memcpy(v, in_.data(), sizeof *v);
    in_.remove_prefix(sizeof *v);
    return true;
  }
  bool Bool(const char* field, bool* v) {
    uint8_t b = 0;
    if (!Raw(field, &b)) return false;
    if (b > 1) return Fail(field, "not a boolean");
    *v = b == 1;
    return true;
  }
  bool Str(const char* field, std::string* s) {
    uint64_t n = 0;
    if (!Raw(field, &n) || !Need(field, n)) return false;
    s->assign(in_.data(), n);
    in_.remove_prefix(n);
    return true;
  }
  // A count of elements that each take at least `min_bytes`: larger than the rest could hold
  // is an error before anything is allocated for it.
  bool Count(const char* field, size_t min_bytes, size_t* n) {
    uint64_t v = 0;
    if (!Raw(field, &v)) return false;
    if (v > in_.size() / min_bytes) return Fail(field, "count larger than the message");
    *n = static_cast<size_t>(v);
    return true;
  }
  // What Writer::Vec wrote: a count (bounded as in Count), then each element as `get` reads it.
  template <typename T, typename Get>
  bool Vec(const char* field, size_t min_bytes, std::vector<T>* v, Get get) {
    size_t n = 0;
    if (!Count(field, min_bytes, &n)) return false;
    v->resize(n);
    for (T& e : *v) {
      if (!get(e)) return false;
    }
    return true;
  }
  bool Strs(const char* field, std::vector<std::string>* v) {
    return Vec(field, sizeof(uint64_t), v, [&](std::string& e) { return Str(field, &e); });
  }
  bool Fail(const char* field, const char* what) {
    if (error_.empty()) error_ = std::string(field) + ": " + what;
    in_ = {};
    return false;
  }
  bool AtEnd() const { return in_.empty(); }
  const std::string& error() const { return error_; }

 private:
  bool Need(const char* field, uint64_t n) {
    if (n <= in_.size()) return true;
    return Fail(field, "truncated");
  }

  std::string_view in_;
  std::string error_;
};

}  // namespace ward::enforce::wire
