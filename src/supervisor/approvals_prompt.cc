#include "supervisor/approvals_prompt.h"

#include <utility>

#include "audit/sessions.h"

namespace ward::supervisor {
namespace {

// Long subjects keep their head and their tail: the end of a path is what matters most, and a
// sandbox could pad the middle to push it off the line.
std::string Shorten(const std::string& s, size_t max) {
  if (s.size() <= max) return s;
  size_t head = max / 3;
  size_t tail = max - head;
  return s.substr(0, head) + "..." + s.substr(s.size() - tail);
}

std::string Seconds(std::chrono::milliseconds t) {
  auto s = std::chrono::duration_cast<std::chrono::seconds>(t).count();
  return std::to_string(s > 0 ? s : 1) + " s";
}

}  // namespace

PromptChannel::~PromptChannel() {
  if (current_ && prompter_) prompter_->Cancel();
}

const std::vector<PromptChoice>& PromptChannel::Choices() {
  static const std::vector<PromptChoice> kChoices = {
      {'y', "allow once"}, {'s', "allow for this session"}, {'n', "deny"}};
  return kChoices;
}

std::string PromptChannel::Question(const ApprovalRequest& r, std::chrono::milliseconds timeout) {
  std::string who;
  if (r.pid > 0) who = "process " + std::to_string(r.pid);
  if (!r.exe.empty()) {
    who += (who.empty() ? "" : " ") + std::string("(") + Shorten(r.exe, 120) + ")";
  }
  if (who.empty()) who = "the sandbox";
  std::string what =
      r.kind == RequestKind::kFile
          ? std::string("to ") + FileAccessName(r.access) + " " + Shorten(r.subject, 300)
          : "to connect to " + Shorten(r.subject, 300) + " port " + std::to_string(r.port);
  // Everything from the sandbox goes through the sanitiser: no escape sequence reaches the
  // terminal, no bidi override reorders what the human reads.
  return audit::SanitizeForTerminal("ward: request " + std::to_string(r.id) + ": " + who +
                                    " asks " + what + " (deny in " + Seconds(timeout) + ")");
}

void PromptChannel::Ask(const ApprovalRequest& request, std::chrono::milliseconds timeout,
                        AnswerFn answer) {
  if (!prompter_) return;
  queue_.push_back(Item{request, timeout, std::move(answer)});
  if (!current_) ShowNext();
}

void PromptChannel::ShowNext() {
  if (current_ || queue_.empty()) return;
  current_ = std::move(queue_.front());
  queue_.pop_front();
  uint64_t id = current_->request.id;
  prompter_->Ask(Question(current_->request, current_->timeout), Choices(),
                 [this, id](char key) { OnKey(id, key); });
}

void PromptChannel::OnKey(uint64_t id, char key) {
  if (!current_ || current_->request.id != id) return;  // withdrawn meanwhile
  Item item = std::move(*current_);
  current_.reset();
  if (key != '\0') {
    ChannelAnswer a;
    a.allow = key == 'y' || key == 'Y' || key == 's' || key == 'S';
    if (key == 's' || key == 'S') a.scope.lifetime = Lifetime::kSession;
    if (a.allow) {
      a.reason = a.scope.lifetime == Lifetime::kSession ? "allowed at the terminal (session)"
                                                        : "allowed at the terminal (once)";
    } else {
      a.reason = key == 'n' || key == 'N' ? "denied at the terminal"
                                          : "denied at the terminal (unexpected key)";
    }
    item.answer(std::move(a));
  }
  ShowNext();
}

void PromptChannel::Cancel(uint64_t request_id) {
  if (current_ && current_->request.id == request_id) {
    current_.reset();
    prompter_->Cancel();
    ShowNext();
    return;
  }
  for (auto it = queue_.begin(); it != queue_.end(); ++it) {
    if (it->request.id == request_id) {
      queue_.erase(it);
      return;
    }
  }
}

}  // namespace ward::supervisor
