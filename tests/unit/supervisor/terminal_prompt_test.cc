// The terminal prompt: the pty's output is held while a question is up and written after it,
// the terminal is reset first, only the question's code allows, what was typed before the
// question was drawn is not its answer, and the keys a terminal sends are read as keys.
#include <fcntl.h>
#include <poll.h>
#include <pty.h>
#include <termios.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <optional>
#include <string>

#include "supervisor/terminal.h"

namespace ward::supervisor {
namespace {

std::string ReadAvailable(int fd) {
  std::string out;
  char buf[4096];
  while (true) {
    struct pollfd p = {fd, POLLIN, 0};
    if (poll(&p, 1, 0) <= 0 || !(p.revents & POLLIN)) break;
    ssize_t n = read(fd, buf, sizeof buf);
    if (n <= 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  return out;
}

PromptQuestion Question(const std::string& code) {
  PromptQuestion q;
  q.request = "request 1: process 2 asks to read /data/x";
  q.code = code;
  q.instructions = "type " + code + " and Enter to allow once";
  return q;
}

// A pipe stands for the terminal's output; the prompter's input comes through OnInput.
class PromptTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(pipe2(screen_, O_NONBLOCK | O_CLOEXEC), 0);
    // Room for everything a question can hold back, so that no test needs a reader thread.
    ASSERT_GE(fcntl(screen_[1], F_SETPIPE_SZ, 1 << 20), static_cast<int>(PtyOutput::kMaxHeld * 2));
    output_.emplace(screen_[1], TerminalFilter::Options{});
    output_->set_on_resume([this] { ++resumed_; });
    prompter_.emplace(-1, screen_[1], &*output_);
  }
  void TearDown() override {
    prompter_.reset();
    output_.reset();
    close(screen_[0]);
    close(screen_[1]);
  }
  void Ask(const std::string& code) {
    prompter_->Ask(Question(code), [this](std::optional<std::string> t) {
      ++answers_;
      typed_ = std::move(t);
    });
  }
  std::string Screen() { return ReadAvailable(screen_[0]); }

  int screen_[2] = {-1, -1};
  std::optional<PtyOutput> output_;
  std::optional<TerminalPrompter> prompter_;
  int answers_ = 0, resumed_ = 0;
  std::optional<std::string> typed_;
};

TEST_F(PromptTest, OutputIsHeldWhileAskingAndTheTerminalIsResetFirst) {
  output_->Relay("before\x1b[?1049h\x1b[?25l\x1b[?1000h");
  EXPECT_EQ(Screen(), "before\x1b[?1049h\x1b[?25l\x1b[?1000h");
  Ask("4821");
  std::string shown = Screen();
  ASSERT_EQ(shown.rfind(std::string(kPromptPreamble), 0), 0u) << "the reset comes first";
  EXPECT_NE(shown.find("[ward] request 1: process 2 asks to read /data/x"), std::string::npos);
  EXPECT_NE(shown.find("type 4821"), std::string::npos);
  // The preamble puts the terminal in a known state.
  for (const char* s : {"\x1b[?1049l", "\x1b[r", "\x1b[0m", "\x1b[?25h", "\x1b[2K", "\x1b[?7h",
                        "\x1b[?1000l", "\x1b[?2026l"}) {
    EXPECT_NE(kPromptPreamble.find(s), std::string::npos) << s + 1;
  }
  // The command's output (a repaint with a look-alike question) waits.
  output_->Relay("\x1b[H\x1b[2J[ward] request 1: ... /harmless");
  output_->Relay("more");
  EXPECT_EQ(Screen(), "");
  EXPECT_TRUE(output_->held());
  EXPECT_TRUE(prompter_->OnInput("4821\r", 5));
  EXPECT_EQ(answers_, 1);
  EXPECT_EQ(typed_, std::optional<std::string>("4821"));
  EXPECT_EQ(resumed_, 1);
  std::string after = Screen();
  size_t outcome = after.find("allowed once");
  size_t restore = after.find(PromptEpilogue(output_->modes()));
  size_t held = after.find(
      "\x1b[H\x1b[2J[ward] request 1: ... /harmless"
      "more");
  ASSERT_NE(outcome, std::string::npos) << after;
  ASSERT_NE(restore, std::string::npos) << after;
  ASSERT_NE(held, std::string::npos) << after;
  EXPECT_LT(outcome, restore);
  EXPECT_LT(restore, held);  // the program's screen is back before its output resumes
  // The epilogue gives back what the preamble took: the alternate screen, the hidden cursor,
  // mouse reports, the keyboard mode.
  std::string epilogue = PromptEpilogue(output_->modes());
  for (const char* s : {"\x1b[<u", "\x1b[?1049h", "\x1b[?25l", "\x1b[?1000h"}) {
    EXPECT_NE(epilogue.find(s), std::string::npos) << s + 1;
  }
  EXPECT_FALSE(output_->held());
  output_->Relay("later");
  EXPECT_EQ(Screen(), "later");
}

TEST_F(PromptTest, HeldOutputIsBoundedAndNothingIsDropped) {
  Ask("1111");
  Screen();
  std::string chunk(64 * 1024, 'x');
  size_t relayed = 0;
  while (output_->accepting()) {
    output_->Relay(chunk);
    relayed += chunk.size();
    ASSERT_LE(relayed, PtyOutput::kMaxHeld + chunk.size());
  }
  EXPECT_GE(relayed, PtyOutput::kMaxHeld);
  prompter_->Cancel();
  EXPECT_EQ(answers_, 0) << "a withdrawn question is not answered";
  // Everything kept is written after the question.
  std::string all = Screen();
  size_t withdrawn = all.find("withdrawn");
  ASSERT_NE(withdrawn, std::string::npos);
  EXPECT_EQ(all.find('x'), all.find('x', withdrawn));
  EXPECT_EQ(static_cast<size_t>(std::count(all.begin(), all.end(), 'x')), relayed);
  EXPECT_TRUE(output_->accepting());
}

TEST_F(PromptTest, OnlyTheCodeAllows) {
  struct Case {
    std::string input;
    std::string typed;
    PromptReply::Verdict verdict;
  };
  using V = PromptReply::Verdict;
  for (const Case& c :
       {Case{"4821\r", "4821", V::kAllowOnce}, Case{"4821s\r", "4821s", V::kAllowSession},
        Case{"y", "y", V::kDeny},  // the old one-key answer
        Case{"Y", "Y", V::kDeny}, Case{"n", "n", V::kDeny}, Case{"\r", "", V::kDeny},
        Case{"4822\r", "4822", V::kDeny}, Case{"482\r", "482", V::kDeny},
        Case{"48210\r", "48210", V::kDeny}, Case{"48x", "48x", V::kDeny},
        Case{"\x03", "\x03", V::kDeny},
        Case{"4831\x7f\x7f"
             "21\r",
             "4821", V::kAllowOnce}}) {
    SCOPED_TRACE(c.input);
    answers_ = 0;
    Ask("4821");
    EXPECT_TRUE(prompter_->OnInput(c.input.data(), c.input.size()));
    ASSERT_EQ(answers_, 1);
    ASSERT_TRUE(typed_.has_value());
    EXPECT_EQ(*typed_, c.typed);
    EXPECT_EQ(JudgeTyped(*typed_, "4821").verdict, c.verdict);
    EXPECT_FALSE(prompter_->asking());
    Screen();
  }
}

TEST_F(PromptTest, AKeyStrayFromTheCodeEndsTheAnswer) {
  Ask("4821");
  // 'y' denies at once; the rest of the read ("4821\r") answers nothing.
  EXPECT_TRUE(prompter_->OnInput("y4821\r", 6));
  EXPECT_EQ(typed_, std::optional<std::string>("y"));
  EXPECT_EQ(answers_, 1);
  EXPECT_FALSE(prompter_->OnInput("4821\r", 5)) << "no question open: the input goes on";
}

TEST_F(PromptTest, TheRestOfAReadDoesNotAnswerTheNextQuestion) {
  std::optional<std::string> second;
  prompter_->Ask(Question("4821"), [&](std::optional<std::string> t) {
    typed_ = t;
    // The channel asks the next question from the answer's callback.
    prompter_->Ask(Question("9999"), [&](std::optional<std::string> t2) { second = t2; });
  });
  EXPECT_TRUE(prompter_->OnInput("4821\r9999\r", 10));
  EXPECT_EQ(typed_, std::optional<std::string>("4821"));
  EXPECT_FALSE(second.has_value()) << "typed before the second question was drawn";
  EXPECT_TRUE(prompter_->asking());
  EXPECT_TRUE(prompter_->OnInput("9999\r", 5));
  EXPECT_EQ(second, std::optional<std::string>("9999"));
}

TEST_F(PromptTest, KeysFromTheTerminalAreReadAsKeys) {
  struct Case {
    std::string input;
    std::string typed;
  };
  for (const Case& c : {
           // focus and mouse reports (SGR and X10), bracketed paste marks: skipped
           Case{"\x1b[I\x1b[<0;10;5M48\x1b[<0;10;5m21\x1b[O\r", "4821"},
           Case{"\x1b[M !!4821\r", "4821"},
           Case{"\x1b[200~4821\x1b[201~\r", "4821"},
           // the kitty keyboard protocol (presses, repeats; releases skipped), keypad
           Case{"\x1b[52u\x1b[56;1:1u\x1b[56;1:3u\x1b[50u\x1b[49u\x1b[13u", "4821"},
           Case{"\x1b[57403u\x1b[57407u\x1b[57401u\x1b[57400u\x1b[57414u", "4821"},
           Case{"\x1bOt\x1bOx\x1bOr\x1bOq\x1bOM", "4821"},
           Case{"\x1b[99;5u", "\x03"},
           // late answers to report requests: skipped whole
           Case{"\x1b]11;rgb:0000/0000/0000\x1b\\\x1b[?62;22c\x1bP1$r0m\x1b\\4821\r", "4821"},
           // Alt and a key is no key of the answer
           Case{"\x1b"
                "14821\r",
                "4821"},
       }) {
    SCOPED_TRACE(c.input);
    answers_ = 0;
    typed_.reset();
    Ask("4821");
    prompter_->OnInput(c.input.data(), c.input.size());
    ASSERT_EQ(answers_, 1);
    EXPECT_EQ(typed_, std::optional<std::string>(c.typed));
    Screen();
  }
  // A lone ESC at the end of a read is the Escape key: the next read is not swallowed.
  answers_ = 0;
  Ask("4821");
  prompter_->OnInput("\x1b", 1);
  prompter_->OnInput("4821\r", 5);
  EXPECT_EQ(typed_, std::optional<std::string>("4821"));
}

TEST_F(PromptTest, EndOfInputLeavesTheQuestionToOthers) {
  Ask("4821");
  prompter_->OnInputClosed();
  EXPECT_EQ(answers_, 1);
  EXPECT_FALSE(typed_.has_value());
  EXPECT_FALSE(output_->held());
  Ask("4821");
  prompter_->Abandon("the sandbox ended");
  EXPECT_EQ(answers_, 1) << "abandoned, not answered";
  EXPECT_FALSE(output_->held());
  EXPECT_NE(Screen().find("(the sandbox ended)"), std::string::npos);
}

// On a real pty: keys typed before the question was drawn are flushed, not read as its answer.
TEST(TerminalPromptTypeahead, InputTypedBeforeTheQuestionIsNotItsAnswer) {
  int master = -1, slave = -1;
  ASSERT_EQ(openpty(&master, &slave, nullptr, nullptr, nullptr), 0);
  struct termios t;
  ASSERT_EQ(tcgetattr(slave, &t), 0);
  cfmakeraw(&t);
  ASSERT_EQ(tcsetattr(slave, TCSANOW, &t), 0);
  // Typed ahead: Enter (which would deny) and digits.
  ASSERT_EQ(write(master, "12\r", 3), 3);
  struct pollfd p = {slave, POLLIN, 0};
  ASSERT_EQ(poll(&p, 1, 5000), 1) << "the typeahead reached the terminal's input queue";
  TerminalPrompter prompter(slave, slave, nullptr);
  std::optional<std::string> typed;
  int answers = 0;
  prompter.Ask(Question("4821"), [&](std::optional<std::string> v) {
    ++answers;
    typed = std::move(v);
  });
  EXPECT_EQ(ReadAvailable(slave), "") << "the typeahead is gone";
  ASSERT_EQ(write(master, "4821\r", 5), 5);
  ASSERT_EQ(poll(&p, 1, 5000), 1);
  std::string in = ReadAvailable(slave);
  EXPECT_EQ(in, "4821\r");
  prompter.OnInput(in.data(), in.size());
  EXPECT_EQ(answers, 1);
  EXPECT_EQ(typed, std::optional<std::string>("4821"));
  std::string screen = ReadAvailable(master);
  EXPECT_NE(screen.find("allowed once"), std::string::npos) << screen;
  close(master);
  close(slave);
}

}  // namespace
}  // namespace ward::supervisor
