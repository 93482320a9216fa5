// Helpers shared by the approval broker tests: a temporary directory, a manual clock, a loop
// runner, and scripted channels and prompters.
#pragma once

#include <ftw.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <asio/io_context.hpp>
#include <asio/post.hpp>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/events.h"
#include "supervisor/approvals/approval_broker.h"
#include "supervisor/approvals/prompt.h"

namespace ward::supervisor::testing {

class TempDir {
 public:
  TempDir() {
    std::string tmpl = "/tmp/ward-approvals-test-XXXXXX";
    char* p = ::mkdtemp(tmpl.data());
    EXPECT_NE(p, nullptr);
    path_ = tmpl;
  }
  ~TempDir() {
    ::nftw(
        path_.c_str(),
        [](const char* fpath, const struct stat*, int, struct FTW*) { return ::remove(fpath); }, 16,
        FTW_DEPTH | FTW_PHYS);
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// A clock the test moves by hand.
struct ManualClock {
  std::chrono::steady_clock::time_point now =
      std::chrono::steady_clock::time_point() + std::chrono::hours(1000);
  std::function<std::chrono::steady_clock::time_point()> Fn() {
    return [this] { return now; };
  }
};

// Runs the loop until `done` holds or `limit` passes; returns whether it holds.
inline bool RunUntil(asio::io_context& io, const std::function<bool()>& done,
                     std::chrono::milliseconds limit = std::chrono::seconds(10)) {
  auto end = std::chrono::steady_clock::now() + limit;
  while (!done()) {
    if (std::chrono::steady_clock::now() >= end) return false;
    io.restart();
    io.run_for(std::chrono::milliseconds(5));
  }
  return true;
}

inline ApprovalRequest FileRequest(std::string path, FileAccess access = FileAccess::kRead) {
  ApprovalRequest r;
  r.kind = RequestKind::kFile;
  r.subject = std::move(path);
  r.access = access;
  r.pid = 42;
  r.exe = "/usr/bin/cat";
  return r;
}

inline ApprovalRequest HostRequest(std::string host, uint16_t port = 443) {
  ApprovalRequest r;
  r.kind = RequestKind::kHost;
  r.subject = std::move(host);
  r.port = port;
  r.pid = 43;
  r.exe = "/usr/bin/curl";
  return r;
}

inline std::vector<std::string> EventTypes(const MemoryEventSink& sink) {
  std::vector<std::string> out;
  for (const Event& e : sink.events()) out.push_back(e.type);
  return out;
}

inline std::vector<Event> EventsOfType(const MemoryEventSink& sink, const std::string& type) {
  std::vector<Event> out;
  for (const Event& e : sink.events()) {
    if (e.type == type) out.push_back(e);
  }
  return out;
}

// A channel the test answers by hand; records what it was asked and what was withdrawn.
class ScriptedChannel : public ApprovalChannel {
 public:
  struct State {
    std::map<uint64_t, AnswerFn> asked;
    std::vector<ApprovalRequest> requests;
    std::vector<uint64_t> cancelled;
    std::optional<ChannelAnswer> immediate;  // answer within Ask
  };
  ScriptedChannel(std::string name, std::shared_ptr<State> state)
      : name_(std::move(name)), state_(std::move(state)) {}
  std::string_view name() const override { return name_; }
  void Ask(const ApprovalRequest& r, std::chrono::milliseconds, AnswerFn answer) override {
    state_->requests.push_back(r);
    if (state_->immediate) {
      answer(*state_->immediate);
      return;
    }
    state_->asked[r.id] = std::move(answer);
  }
  void Cancel(uint64_t id) override {
    state_->cancelled.push_back(id);
    state_->asked.erase(id);
  }

 private:
  std::string name_;
  std::shared_ptr<State> state_;
};

// A prompter the test answers by hand.
class FakePrompter : public Prompter {
 public:
  void Ask(const PromptQuestion& question, AnswerFn answer) override {
    EXPECT_FALSE(answer_) << "two questions at once";
    questions.push_back(question.request);
    codes.push_back(question.code);
    instructions = question.instructions;
    answer_ = std::move(answer);
  }
  void Cancel() override {
    ++cancels;
    answer_ = nullptr;
  }
  bool showing() const { return static_cast<bool>(answer_); }
  // The human types `typed` and Enter (nullopt: the terminal's input ended).
  void Type(std::optional<std::string> typed) {
    ASSERT_TRUE(answer_);
    auto fn = std::move(answer_);
    answer_ = nullptr;
    fn(std::move(typed));
  }
  const std::string& code() const { return codes.back(); }

  std::vector<std::string> questions;
  std::vector<std::string> codes;
  std::string instructions;
  int cancels = 0;

 private:
  AnswerFn answer_;
};

// The decision a callback received.
struct DecisionBox {
  std::optional<ApprovalDecision> d;
  ApprovalBroker::Callback Fn() {
    return [this](const ApprovalDecision& x) {
      EXPECT_FALSE(d.has_value()) << "callback ran twice";
      d = x;
    };
  }
};

}  // namespace ward::supervisor::testing
