#include "supervisor/approvals/prompt.h"

#include <fcntl.h>
#include <sys/random.h>
#include <unistd.h>

#include <cerrno>
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

// Bytes from the kernel's CSPRNG: getrandom, else /dev/urandom (a kernel without getrandom).
bool RandomBytes(unsigned char* buf, size_t n) {
  size_t got = 0;
  while (got < n) {
    ssize_t r = getrandom(buf + got, n - got, 0);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) break;
    got += static_cast<size_t>(r);
  }
  if (got == n) return true;
  int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  got = 0;
  while (got < n) {
    ssize_t r = read(fd, buf + got, n - got);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) break;
    got += static_cast<size_t>(r);
  }
  close(fd);
  return got == n;
}

bool EndsWithDenyKey(std::string_view typed) {
  if (typed.empty()) return true;
  char last = typed.back();
  return last == 'n' || last == 'N' || last == 0x03 || last == 0x04;  // Ctrl-C, Ctrl-D
}

}  // namespace

PromptReply JudgeTyped(std::string_view typed, std::string_view code) {
  using V = PromptReply::Verdict;
  if (!code.empty() && typed == code) return {V::kAllowOnce, "allowed once"};
  if (!code.empty() && typed.size() == code.size() + 1 && typed.substr(0, code.size()) == code &&
      (typed.back() == 's' || typed.back() == 'S')) {
    return {V::kAllowSession, "allowed for this session"};
  }
  if (EndsWithDenyKey(typed)) return {V::kDeny, "denied"};
  return {V::kDeny, "denied (not the code)"};
}

bool IsAnswerKey(char c) { return (c >= '0' && c <= '9') || c == 's' || c == 'S'; }

std::optional<std::string> NewPromptCode() {
  // Uniform over 0000..9999: 16-bit draws at or above the largest multiple of 10000 are redrawn.
  for (int attempt = 0; attempt < 64; ++attempt) {
    unsigned char b[2];
    if (!RandomBytes(b, sizeof b)) return std::nullopt;
    unsigned v = (static_cast<unsigned>(b[0]) << 8) | b[1];
    if (v >= 60000) continue;
    std::string code = std::to_string(v % 10000);
    return std::string(4 - code.size(), '0') + code;
  }
  return std::nullopt;
}

PromptChannel::~PromptChannel() {
  if (current_ && prompter_) prompter_->Cancel();
}

std::string PromptChannel::Instructions(const std::string& code) {
  return "type " + code + " and Enter to allow once, " + code +
         "s to allow for this session; n or Enter denies";
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
      : r.kind == RequestKind::kRequest
          ? "to send " + Shorten(r.method, 16) + " " + Shorten(r.subject, 200) + " port " +
                std::to_string(r.port) + " " + Shorten(r.path, 300)
          : "to connect to " + Shorten(r.subject, 300) + " port " + std::to_string(r.port);
  // Everything from the sandbox goes through the sanitiser: no escape sequence reaches the
  // terminal, no bidi override reorders what the human reads.
  return audit::SanitizeForTerminal("request " + std::to_string(r.id) + ": " + who + " asks " +
                                    what + " (deny in " + Seconds(timeout) + ")");
}

void PromptChannel::Ask(const ApprovalRequest& request, std::chrono::milliseconds timeout,
                        AnswerFn answer) {
  if (!prompter_) return;
  queue_.push_back(Item{request, timeout, std::move(answer)});
  if (!current_) ShowNext();
}

void PromptChannel::ShowNext() {
  while (!current_ && !queue_.empty()) {
    current_ = std::move(queue_.front());
    queue_.pop_front();
    std::optional<std::string> code = NewPromptCode();
    if (!code) {
      // No code to be had: the terminal cannot ask; the other channels and the timeout decide.
      current_.reset();
      continue;
    }
    current_->code = *code;
    uint64_t id = current_->request.id;
    PromptQuestion q;
    q.request = Question(current_->request, current_->timeout);
    q.code = *code;
    q.instructions = Instructions(*code);
    prompter_->Ask(q,
                   [this, id](std::optional<std::string> typed) { OnTyped(id, std::move(typed)); });
  }
}

void PromptChannel::OnTyped(uint64_t id, std::optional<std::string> typed) {
  if (!current_ || current_->request.id != id) return;  // withdrawn meanwhile
  Item item = std::move(*current_);
  current_.reset();
  if (typed) {
    PromptReply reply = JudgeTyped(*typed, item.code);
    ChannelAnswer a;
    a.allow = reply.verdict != PromptReply::Verdict::kDeny;
    if (reply.verdict == PromptReply::Verdict::kAllowSession) {
      a.scope.lifetime = Lifetime::kSession;
    }
    a.reason = "at the terminal: " + reply.outcome;
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
