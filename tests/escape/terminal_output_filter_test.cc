// A sandboxed command's output cannot make the user's terminal type into its own input or
// write the clipboard: report requests (cursor position, title, DECRQSS, device attributes,
// clipboard read) and clipboard writes never reach the terminal, so no answer comes back to
// the command. The test plays a terminal that answers every request it sees; --raw-terminal
// is the positive control (the same bytes reach it, and its answers reach the command).
#include <glob.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>

#include "harness.h"
#include "pty_session.h"

namespace ward::test {
namespace {

struct Request {
  std::string ask;
  std::string answer;  // what a terminal that obeys types into its input
};

const std::vector<Request>& Requests() {
  static const std::vector<Request> kRequests = {
      {"\x1b[6n", "\x1b[12;34R"},                     // cursor position report
      {"\x1b[21t", "\x1b]lrm -rf ~\x1b\\"},           // the window title
      {"\x1bP$qm\x1b\\", "\x1bP1$r0m\x1b\\"},         // DECRQSS
      {"\x1b[c", "\x1b[?62;22c"},                     // device attributes
      {"\x1b]52;c;?\x07", "\x1b]52;c;c2VjcmV0\x07"},  // clipboard read
  };
  return kRequests;
}
const std::string kClipboardWrite = "\x1b]52;c;Y3VybCBldmlsIHwgc2gK\x07";

std::string Hex(const std::string& s) {
  std::string out;
  char b[3];
  for (unsigned char c : s) {
    snprintf(b, sizeof b, "%02x", c);
    out += b;
  }
  return out;
}

std::string Unhex(const std::string& h) {
  std::string out;
  for (size_t i = 0; i + 1 < h.size(); i += 2) {
    out.push_back(static_cast<char>(std::stoi(h.substr(i, 2), nullptr, 16)));
  }
  return out;
}

class TerminalOutputFilterTest : public SandboxTest {
 protected:
  struct Outcome {
    int status = -1;
    std::string terminal;   // every byte the terminal received
    std::string stdin_got;  // what the command read from its terminal
  };

  // The command writes BEFORE, a clipboard write, every request, AFTER, then listens on its
  // terminal for 3 s; the test's terminal answers each request it receives.
  Outcome RunAsking(const std::vector<std::string>& ward_opts) {
    RunOptions o = Defaults();
    o.env["XDG_STATE_HOME"] = root_->path() + "/state";
    std::string out = "BEFORE" + kClipboardWrite;
    for (const Request& r : Requests()) out += r.ask;
    out += "AFTER";
    std::vector<std::string> argv = {WardBin(), "run"};
    argv.insert(argv.end(), ward_opts.begin(), ward_opts.end());
    for (const std::string& a : {std::string("-r"), StageDir(), std::string("--"), ProbeBin(),
                                 std::string("tty-ask"), Hex(out), std::string("3000")}) {
      argv.push_back(a);
    }
    PtySession s(argv, o);
    std::vector<bool> answered(Requests().size(), false);
    s.on_read = [&answered](PtySession& t) {
      for (size_t i = 0; i < Requests().size(); ++i) {
        if (!answered[i] && t.output().find(Requests()[i].ask) != std::string::npos) {
          answered[i] = true;
          t.Type(Requests()[i].answer);
        }
      }
    };
    Outcome r;
    r.status = s.Finish(std::chrono::seconds(30));
    r.terminal = s.output();
    size_t at = r.terminal.find("ok stdin:");
    if (at != std::string::npos) {
      size_t end = r.terminal.find_first_of("\r\n", at);
      r.stdin_got = Unhex(r.terminal.substr(at + 9, end - at - 9));
    } else {
      ADD_FAILURE() << "no report from the probe: " << r.terminal;
    }
    return r;
  }

  // The session's audit records (one run per test).
  std::vector<nlohmann::json> Events() {
    glob_t g;
    std::string pattern = root_->path() + "/state/ward/sessions/*/events.jsonl";
    std::vector<nlohmann::json> out;
    if (glob(pattern.c_str(), 0, nullptr, &g) != 0) return out;
    std::ifstream in(g.gl_pathv[g.gl_pathc - 1]);
    globfree(&g);
    std::string line;
    while (std::getline(in, line)) out.push_back(nlohmann::json::parse(line, nullptr, false));
    return out;
  }

  std::optional<bool> FilterLayer(const std::vector<nlohmann::json>& events) {
    for (const auto& e : events) {
      if (!e.is_object() || e.value("type", "") != "session.start") continue;
      for (const auto& l : e["data"]["layers"]) {
        if (l.value("layer", "") == "terminal output filter") return l.value("applied", false);
      }
    }
    return std::nullopt;
  }
};

TEST_F(TerminalOutputFilterTest, RequestsAndClipboardWritesNeverReachTheTerminal) {
  Outcome r = RunAsking({});
  EXPECT_EQ(r.status, 0) << r.terminal;
  EXPECT_NE(r.terminal.find("BEFOREAFTER"), std::string::npos) << "the text around them passes";
  EXPECT_EQ(r.terminal.find("\x1b]52"), std::string::npos);
  for (const Request& q : Requests()) {
    EXPECT_EQ(r.terminal.find(q.ask), std::string::npos) << Hex(q.ask);
  }
  EXPECT_EQ(r.stdin_got, "") << "no answer reached the command: " << Hex(r.stdin_got);
  // Recorded: each kind of sequence dropped, and the filter in session.start.
  std::vector<nlohmann::json> events = Events();
  std::set<std::string> kinds;
  for (const auto& e : events) {
    if (e.is_object() && e.value("type", "") == "terminal.deny") {
      kinds.insert(e["data"].value("sequence", ""));
    }
  }
  for (const char* k : {"OSC 52 (clipboard)", "DSR (status or cursor position report request)",
                        "XTWINOPS (window report, move, resize, iconify)",
                        "DCS (device control string)", "DA (device attributes request)"}) {
    EXPECT_TRUE(kinds.count(k)) << k;
  }
  EXPECT_EQ(FilterLayer(events), std::optional<bool>(true));
}

// The positive control: the same run with --raw-terminal hands the terminal every request, and
// its answers reach the command, which could read the title, the clipboard and more.
TEST_F(TerminalOutputFilterTest, RawTerminalPassesThemThrough) {
  Outcome r = RunAsking({"--raw-terminal"});
  EXPECT_EQ(r.status, 0) << r.terminal;
  EXPECT_NE(r.terminal.find(kClipboardWrite), std::string::npos);
  for (const Request& q : Requests()) {
    EXPECT_NE(r.terminal.find(q.ask), std::string::npos) << Hex(q.ask);
    EXPECT_NE(r.stdin_got.find(q.answer), std::string::npos)
        << Hex(q.answer) << " in " << Hex(r.stdin_got);
  }
  std::vector<nlohmann::json> events = Events();
  EXPECT_EQ(FilterLayer(events), std::optional<bool>(false)) << "--raw-terminal is recorded";
  for (const auto& e : events) {
    EXPECT_NE(e.value("type", ""), "terminal.deny");
  }
}

TEST_F(TerminalOutputFilterTest, ExplainShowsTheFilter) {
  RunOptions o = Defaults();
  RunResult on = RunWard({"explain"}, o);
  EXPECT_NE(on.out.find("[on]  terminal output filter"), std::string::npos) << on.out;
  RunResult off = RunWard({"explain", "--raw-terminal"}, o);
  EXPECT_NE(off.out.find("[off] terminal output filter: off (--raw-terminal)"), std::string::npos)
      << off.out;
}

}  // namespace
}  // namespace ward::test
