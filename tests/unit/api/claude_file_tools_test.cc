#include "api/claude_file_tools.h"

#include <gtest/gtest.h>

namespace ward::api {
namespace {

using Op = FileAccess::Op;
using V = policy::PathDecision::Visibility;

ClaudeToolCall Call(const std::string& tool, nlohmann::json input, std::string cwd = "/ws") {
  ClaudeToolCall c;
  c.event = "PreToolUse";
  c.tool = tool;
  c.input = std::move(input);
  c.cwd = std::move(cwd);
  return c;
}

TEST(ClaudeFileToolsTest, EachToolNamesWhatItTouches) {
  auto one = [](const ClaudeToolCall& c) {
    Result<std::vector<FileAccess>> a = FileAccessesOf(c);
    EXPECT_TRUE(a.ok()) << a.status().ToString();
    return a.ok() && a->size() == 1 ? (*a)[0] : FileAccess{};
  };
  FileAccess a = one(Call("Read", {{"file_path", "/ws/a"}}));
  EXPECT_EQ(a.op, Op::kRead);
  EXPECT_EQ(a.path, "/ws/a");
  EXPECT_EQ(one(Call("Read", {{"file_path", "rel/b"}})).path, "/ws/rel/b");
  ClaudeToolCall tilde = Call("Read", {{"file_path", "~/.ssh/id"}});
  EXPECT_FALSE(FileAccessesOf(tilde).ok());  // no HOME known: not guessed
  tilde.home = "/home/u";
  EXPECT_EQ(one(tilde).path, "/home/u/.ssh/id");
  for (const char* t : {"Write", "Edit", "MultiEdit"}) {
    EXPECT_EQ(one(Call(t, {{"file_path", "/x"}})).op, Op::kWrite) << t;
  }
  EXPECT_EQ(one(Call("NotebookEdit", {{"notebook_path", "/n.ipynb"}})).op, Op::kWrite);
  EXPECT_EQ(one(Call("Grep", {{"pattern", "x"}})).path, "/ws");  // the cwd
  EXPECT_EQ(one(Call("LS", {{"path", "/etc"}})).op, Op::kList);
  // A Glob's pattern reaches as far as its first wildcard.
  Result<std::vector<FileAccess>> g = FileAccessesOf(Call("Glob", {{"pattern", "/home/u/.ssh/*"}}));
  ASSERT_TRUE(g.ok());
  ASSERT_EQ(g->size(), 2u);
  EXPECT_EQ((*g)[1].path, "/home/u/.ssh");
  EXPECT_EQ(FileAccessesOf(Call("Glob", {{"pattern", "src/**/*.cc"}}))->size(), 2u);
  EXPECT_EQ(FileAccessesOf(Call("Glob", {{"pattern", "**/*.cc"}}))->size(), 1u);
  EXPECT_FALSE(FileAccessesOf(Call("Glob", {{"pattern", "../home/*"}})).ok());
  // Tools without host paths: none. Unknown tools naming a path: a write there.
  EXPECT_TRUE(FileAccessesOf(Call("Bash", {{"command", "cat /etc/passwd"}}))->empty());
  EXPECT_TRUE(FileAccessesOf(Call("mcp__ward__exec", {{"path", "/x"}}))->empty());
  EXPECT_EQ(one(Call("NewTool", {{"path", "/x"}})).op, Op::kWrite);
  // Malformed: blocked.
  EXPECT_FALSE(FileAccessesOf(Call("Read", nlohmann::json::object())).ok());
  EXPECT_FALSE(FileAccessesOf(Call("Read", {{"file_path", 7}})).ok());
  EXPECT_FALSE(FileAccessesOf(Call("Read", {{"file_path", "rel"}}, "")).ok());
  EXPECT_FALSE(FileAccessesOf(Call("Read", {{"file_path", std::string("/a\0b", 4)}})).ok());
}

TEST(ClaudeFileToolsTest, ParsesTheHookInput) {
  auto c = ParseClaudeToolCall(
      R"({"hook_event_name":"PreToolUse","tool_name":"Read","tool_input":{"file_path":"/a"},)"
      R"("cwd":"/ws","session_id":"s1"})");
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->tool, "Read");
  EXPECT_EQ(c->cwd, "/ws");
  EXPECT_EQ(c->session_id, "s1");
  EXPECT_EQ(ParseClaudeToolCall(R"({"hook_event_name":"PostToolUse"})")->event, "PostToolUse");
  EXPECT_FALSE(ParseClaudeToolCall("[").ok());
  EXPECT_FALSE(ParseClaudeToolCall(R"({"tool_name":"Read","tool_input":[]})").ok());
  EXPECT_FALSE(ParseClaudeToolCall(R"({"tool_input":{}})").ok());
}

TEST(ClaudeFileToolsTest, FetchTargets) {
  EXPECT_EQ(FetchTargetOf("https://a.example/x")->port, 443);
  EXPECT_EQ(FetchTargetOf("http://a.example")->port, 80);
  auto t = FetchTargetOf("https://user:pw@b.example:8443/p?q#f");
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->host, "b.example");
  EXPECT_EQ(t->port, 8443);
  EXPECT_EQ(FetchTargetOf("http://[::1]:9/")->host, "::1");
  EXPECT_FALSE(FetchTargetOf("file:///etc/passwd").ok());
  EXPECT_FALSE(FetchTargetOf("https://a.example:99999/").ok());
  EXPECT_FALSE(FetchTargetOf("https:///x").ok());
}

TEST(ClaudeFileToolsTest, JudgesAccessLikeASandboxOfThePolicy) {
  policy::Policy pol;
  pol.deny.push_back({"/ws/secret", {}});
  auto judge = [&](Op op, const std::string& path, V vis, bool host, bool prot = false,
                   bool exec = false, bool masked = false) {
    policy::PathDecision d;
    d.visibility = vis;
    d.host_file = host;
    d.is_protected = prot;
    d.host_executed = exec;
    d.masked = masked;
    return JudgeFileAccess(pol, FileAccess{op, "file_path", path}, path, d).allowed;
  };
  EXPECT_TRUE(judge(Op::kRead, "/ws/a", V::kWrite, true));
  EXPECT_TRUE(judge(Op::kRead, "/usr/a", V::kRead, true));
  EXPECT_FALSE(judge(Op::kRead, "/h/.ssh/k", V::kHidden, false));
  EXPECT_FALSE(judge(Op::kRead, "/h/.bashrc", V::kWrite, false));  // private HOME
  EXPECT_FALSE(judge(Op::kRead, "/ws/.env", V::kRead, true, false, false, true));
  EXPECT_TRUE(judge(Op::kWrite, "/ws/a", V::kWrite, true));
  EXPECT_FALSE(judge(Op::kWrite, "/usr/a", V::kRead, true));
  EXPECT_FALSE(judge(Op::kWrite, "/ws/.git/hooks/x", V::kRead, true, true));
  EXPECT_FALSE(judge(Op::kWrite, "/ws/.git/config", V::kWrite, true, false, true));
  EXPECT_TRUE(judge(Op::kList, "/ws/src", V::kWrite, true));
  EXPECT_FALSE(judge(Op::kList, "/ws", V::kWrite, true));  // /ws/secret is hidden under it
}

}  // namespace
}  // namespace ward::api
