// The inline prompt: approval questions asked on the supervisor's own terminal. The terminal
// belongs to the supervisor (the sandbox has its own pty), so asking never races the sandboxed
// program for input: the Prompter implementation (on the pty relay) holds the sandbox's
// output, shows the question, reads the answer and resumes. Used only when the run is
// interactive and no other approver is configured.
//
// The answer names the question: every question gets a fresh code from the kernel's CSPRNG,
// shown with it, and only that code typed out allows. The sandbox cannot type it (it has no
// way to the terminal's input), cannot know it in advance, and a look-alike question it drew
// on the screen carries no valid code.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "supervisor/approvals/approval_broker.h"

namespace ward::supervisor {

struct PromptQuestion {
  std::string request;       // "request 3: process 812 (...) asks to read ..." (terminal-safe)
  std::string code;          // the code that allows it (digits)
  std::string instructions;  // how to answer, with the code (terminal-safe)
};

// What a typed answer means: the code allows once, the code then 's' allows for the session;
// anything else denies ('n' or an empty answer plainly, anything else as not the code).
struct PromptReply {
  enum class Verdict { kAllowOnce, kAllowSession, kDeny } verdict = Verdict::kDeny;
  std::string outcome;  // shown after the answer: "allowed once", "denied (not the code)"
};
PromptReply JudgeTyped(std::string_view typed, std::string_view code);
// The keys an answer is made of (the code's digits, 's' for the session); any other key ends
// the answer where it stands.
bool IsAnswerKey(char c);
// A fresh code (4 digits from getrandom), or nullopt when the kernel gives no randomness.
std::optional<std::string> NewPromptCode();

// Implemented by the terminal owner. Called on the loop thread only.
class Prompter {
 public:
  // What the human typed (the answer, ended by Enter or by a key that is no part of one), or
  // nullopt when the terminal cannot answer (end of input, an error).
  using AnswerFn = std::function<void(std::optional<std::string> typed)>;
  virtual ~Prompter() = default;
  // Shows the question and calls `answer` once, on the loop thread. One question at a time:
  // Ask is not called again before `answer` ran or Cancel() returned.
  virtual void Ask(const PromptQuestion& question, AnswerFn answer) = 0;
  // Withdraws the question (decided elsewhere, timed out) and gives the terminal back.
  // `answer` must not be called after Cancel() returns.
  virtual void Cancel() = 0;
};

// An ApprovalChannel over a Prompter: one question at a time, the others queued in order.
// A typed answer is judged by JudgeTyped against the question's code; no answer (nullopt)
// leaves the question to the other channels and the timeout.
class PromptChannel final : public ApprovalChannel {
 public:
  // `prompter` is not owned and must outlive the channel.
  explicit PromptChannel(Prompter* prompter) : prompter_(prompter) {}
  ~PromptChannel() override;

  std::string_view name() const override { return "terminal"; }
  void Ask(const ApprovalRequest& request, std::chrono::milliseconds timeout,
           AnswerFn answer) override;
  void Cancel(uint64_t request_id) override;

  // The question shown for a request (exposed for tests).
  static std::string Question(const ApprovalRequest& request, std::chrono::milliseconds timeout);
  static std::string Instructions(const std::string& code);

 private:
  struct Item {
    ApprovalRequest request;
    std::chrono::milliseconds timeout;
    AnswerFn answer;
    std::string code;
  };
  void ShowNext();
  void OnTyped(uint64_t id, std::optional<std::string> typed);

  Prompter* prompter_;
  std::deque<Item> queue_;
  std::optional<Item> current_;
};

}  // namespace ward::supervisor
