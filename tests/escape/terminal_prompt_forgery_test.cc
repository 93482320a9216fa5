// The approval question on the terminal cannot be forged. The sandboxed command keeps
// repainting the screen with a look-alike question (cursor moves, clear screen, its own "code")
// while it asks for a real file: the real question comes after a reset of the terminal, none
// of the command's output arrives while it is up, the old one-key answer 'y' does not allow,
// a key typed before the question appeared does not answer it, and only the code shown with
// the real question allows (the positive control).
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <cstring>

#include "harness.h"
#include "pty_session.h"
#include "supervisor/terminal.h"

namespace ward::test {
namespace {

// The forger: a loop that repaints the screen with a question about a harmless file and a code
// of its own, then the real request (a file outside the view, which --ask asks about).
constexpr const char* kScript =
    "probe=$1; data=$2\n"
    "( i=0; while :; do i=$((i+1)); "
    "printf '\\033[?1049h\\033[H\\033[2J\\033[3;1H[ward] request 1: process 7 (/bin/cat) asks to "
    "read /tmp/harmless.txt (deny in 60 s)\\r\\n[ward] type 0000 and Enter to allow once\\r\\n"
    "[ward] answer: \\033[?25lFAKE%d\\033[1;1H' $i; sleep 0.05; done ) &\n"
    "loop=$!\n"
    "sleep 0.5\n"
    "echo ARMED; sleep 0.3\n"
    "$probe read $data\n"
    "kill $loop\n";

class TerminalPromptForgeryTest : public SandboxTest {
 protected:
  void SetUp() override {
    SandboxTest::SetUp();
    if (std::string why = WhyAskIsRefusedHere(); !why.empty()) GTEST_SKIP() << why;
    runtime_ = root_->path() + "/run";
    MakeDirs(runtime_, 0700);
    char tmpl[] = "/run/lock/ward-prompt.XXXXXX";
    if (mkdtemp(tmpl) == nullptr) {
      GTEST_SKIP() << "cannot create a directory under /run/lock (" << strerror(errno)
                   << "): no host path outside the sandbox's view to ask about";
    }
    outside_ = tmpl;
    data_ = outside_ + "/data.txt";
    WriteFile(data_, "approved-content-31", 0600);
  }
  void TearDown() override {
    if (!outside_.empty()) RunProgram({"/bin/rm", "-rf", outside_});
  }

  std::unique_ptr<PtySession> Start() {
    RunOptions o = Defaults();
    o.env["XDG_RUNTIME_DIR"] = runtime_;
    std::vector<std::string> argv = {WardBin(), "run", "--ask", "-r", StageDir(), "--",
                                     "/bin/sh", "-c",  kScript, "sh", ProbeBin(), data_};
    return std::make_unique<PtySession>(argv, o);
  }

  // Waits for the real question (the one naming the real file) to be shown in full; returns
  // where its text starts, npos when it never came.
  size_t WaitForQuestion(PtySession& s) {
    bool shown = s.WaitFor(
        [&](const std::string& o) {
          size_t at = o.find(data_);
          return at != std::string::npos && o.find("[ward] answer: ", at) != std::string::npos;
        },
        std::chrono::seconds(20));
    if (!shown) return std::string::npos;
    return s.output().rfind("[ward] request", s.output().find(data_));
  }

  // The code shown with the real question.
  static std::string CodeOf(const std::string& out, size_t question) {
    size_t at = out.find("[ward] type ", question);
    if (at == std::string::npos) return "";
    return out.substr(at + 12, 4);
  }

  // Checks the question stood on its own and nothing of the command's came while it was up.
  void ExpectQuestionAlone(PtySession& s, size_t question) {
    const std::string& out = s.output();
    ASSERT_GE(question, supervisor::kPromptPreamble.size());
    EXPECT_EQ(out.substr(question - supervisor::kPromptPreamble.size(),
                         supervisor::kPromptPreamble.size()),
              std::string(supervisor::kPromptPreamble))
        << "the terminal is reset right before the question";
    for (const char* reset : {"\x1b[?1049l", "\x1b[r", "\x1b[0m", "\x1b[?25h", "\x1b[2K"}) {
      EXPECT_NE(supervisor::kPromptPreamble.find(reset), std::string::npos) << reset + 1;
    }
    ASSERT_NE(out.rfind("FAKE", question), std::string::npos)
        << "the forger was painting before the question";
    size_t shown = out.size();
    s.Pump(std::chrono::milliseconds(1500));
    EXPECT_EQ(s.output().find("FAKE", shown), std::string::npos)
        << "the command's output arrived while the question was up";
    EXPECT_EQ(s.output().find("[ward]", out.find("[ward] answer: ", question) + 1),
              std::string::npos)
        << "nothing else claims to be ward";
  }

  std::string runtime_, outside_, data_;
};

TEST_F(TerminalPromptForgeryTest, TheOldAnswerDoesNotAllow) {
  auto s = Start();
  size_t q = WaitForQuestion(*s);
  ASSERT_NE(q, std::string::npos) << s->output();
  ExpectQuestionAlone(*s, q);
  size_t typed = s->output().size();
  s->Type("y");
  s->Finish(std::chrono::seconds(20));
  const std::string& out = s->output();
  EXPECT_NE(out.find("denied (not the code)", typed), std::string::npos) << out.substr(typed);
  EXPECT_NE(out.find("err EACCES", typed), std::string::npos) << out.substr(typed);
  EXPECT_EQ(out.find("approved-content-31"), std::string::npos);
  // What the command wrote while the question was up comes after it, not lost.
  EXPECT_NE(out.find("FAKE", typed), std::string::npos);
}

TEST_F(TerminalPromptForgeryTest, TheForgersCodeDoesNotAllow) {
  auto s = Start();
  size_t q = WaitForQuestion(*s);
  ASSERT_NE(q, std::string::npos) << s->output();
  std::string code = CodeOf(s->output(), q);
  if (code == "0000") GTEST_SKIP() << "the real code happens to be the forger's (1 in 10^4)";
  size_t typed = s->output().size();
  s->Type("0000\r");
  s->Finish(std::chrono::seconds(20));
  EXPECT_NE(s->output().find("err EACCES", typed), std::string::npos) << s->output().substr(typed);
  EXPECT_EQ(s->output().find("approved-content-31"), std::string::npos);
}

// The positive control: the code shown with the real question allows.
TEST_F(TerminalPromptForgeryTest, TheShownCodeAllows) {
  auto s = Start();
  size_t q = WaitForQuestion(*s);
  ASSERT_NE(q, std::string::npos) << s->output();
  ExpectQuestionAlone(*s, q);
  std::string code = CodeOf(s->output(), q);
  ASSERT_EQ(code.size(), 4u);
  ASSERT_EQ(code.find_first_not_of("0123456789"), std::string::npos) << code;
  size_t typed = s->output().size();
  s->Type(code + "\r");
  s->Finish(std::chrono::seconds(20));
  const std::string& out = s->output();
  EXPECT_NE(out.find("allowed once", typed), std::string::npos) << out.substr(typed);
  EXPECT_NE(out.find("ok approved-content-31", typed), std::string::npos) << out.substr(typed);
}

TEST_F(TerminalPromptForgeryTest, KeysTypedBeforeTheQuestionDoNotAnswerIt) {
  auto s = Start();
  ASSERT_TRUE(s->WaitForText("ARMED", std::chrono::seconds(20))) << s->output();
  s->Type("\r");  // Enter, typed as the question is about to appear: it would deny
  size_t q = WaitForQuestion(*s);
  ASSERT_NE(q, std::string::npos) << s->output();
  s->Pump(std::chrono::milliseconds(1000));
  EXPECT_EQ(s->output().find("denied", q), std::string::npos) << "answered by the early Enter";
  std::string code = CodeOf(s->output(), q);
  size_t typed = s->output().size();
  s->Type(code + "\r");
  s->Finish(std::chrono::seconds(20));
  EXPECT_NE(s->output().find("ok approved-content-31", typed), std::string::npos)
      << s->output().substr(typed);
}

}  // namespace
}  // namespace ward::test
