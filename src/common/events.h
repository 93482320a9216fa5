// The one interface through which every module reports what happened (denials, grants,
// setup errors). The audit module implements the durable, hash-chained sink; tests use a
// memory sink. Emitting must never throw and never block on the sandbox.
#pragma once

#include <nlohmann/json.hpp>

#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace ward {

struct Event {
  std::string type;     // dotted: "net.deny", "setup.error", "session.end"
  nlohmann::json data;  // an object; never secret values
};

class EventSink {
 public:
  virtual ~EventSink() = default;
  virtual void Emit(std::string_view type, nlohmann::json data) = 0;
};

class NullEventSink final : public EventSink {
 public:
  void Emit(std::string_view, nlohmann::json) override {}
};

// Keeps events in memory (tests, and the daemon's per-exec view).
class MemoryEventSink final : public EventSink {
 public:
  void Emit(std::string_view type, nlohmann::json data) override {
    std::lock_guard<std::mutex> lock(mu_);
    events_.push_back(Event{std::string(type), std::move(data)});
  }
  std::vector<Event> events() const {
    std::lock_guard<std::mutex> lock(mu_);
    return events_;
  }

 private:
  mutable std::mutex mu_;
  std::vector<Event> events_;
};

}  // namespace ward
