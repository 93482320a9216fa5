// The inline prompt: approval questions asked on the supervisor's own terminal. The terminal
// belongs to the supervisor (the sandbox has its own pty), so asking never races the sandboxed
// program for input: the Prompter implementation (on the pty relay) pauses the input relay,
// shows the question, reads one key and resumes. Used only when the run is interactive and no
// other approver is configured.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "supervisor/approvals.h"

namespace ward::supervisor {

struct PromptChoice {
  char key;           // 'y'
  std::string label;  // "allow once"
};

// Implemented by the terminal owner. Called on the loop thread only.
class Prompter {
 public:
  virtual ~Prompter() = default;
  // Shows `question` (already safe for a terminal: no control characters) and the choices, and
  // calls `answer` once, on the loop thread, with the key pressed (one of the choices' keys),
  // or '\0' when the terminal cannot answer (end of input, an error). One question at a time:
  // Ask is not called again before `answer` ran or Cancel() returned.
  virtual void Ask(const std::string& question, const std::vector<PromptChoice>& choices,
                   std::function<void(char key)> answer) = 0;
  // Withdraws the question (decided elsewhere, timed out): erase it and give the terminal back.
  // `answer` must not be called after Cancel() returns.
  virtual void Cancel() = 0;
};

// An ApprovalChannel over a Prompter: one question at a time, the others queued in order.
// Keys: 'y' allow once, 's' allow for the session, 'n' deny; any other key denies; '\0'
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
  static const std::vector<PromptChoice>& Choices();

 private:
  struct Item {
    ApprovalRequest request;
    std::chrono::milliseconds timeout;
    AnswerFn answer;
  };
  void ShowNext();
  void OnKey(uint64_t id, char key);

  Prompter* prompter_;
  std::deque<Item> queue_;
  std::optional<Item> current_;
};

}  // namespace ward::supervisor
