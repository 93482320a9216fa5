// The MCP server without stdio: version negotiation for both revisions, tool definitions,
// tool calls through a fake `ward run`, file tools, progress and cancellation.
#include "api/mcp.h"

#include <gtest/gtest.h>

#include "api_test_util.h"

namespace ward::api {
namespace {

using testing::RunUntil;
using testing::TempDir;

class McpTest : public ::testing::Test {
 protected:
  void SetUp() override {
    testing::Write(ws_ / "hello.txt", "one\ntwo\nthree\n");
    auto p = testing::LoadTestPolicy(ws_.path());
    ASSERT_TRUE(p.ok());
    policy_ = std::move(p).value();
    Start(policy::RunFlags());
  }
  // (Re)starts the server with `flags` as its run options (`ward mcp -w ...`).
  void Start(const policy::RunFlags& flags) {
    if (server_) server_->Shutdown();
    McpConfig c;
    c.flags = flags;
    c.version = "test";
    c.workspace = ws_.path();
    c.policy = &policy_;
    c.exec.ward_binary = testing::WriteFakeRunner(bin_.path());
    c.exec.state_dir = state_.path() + "/mcp";
    c.default_yield_ms = 500;
    c.progress_interval = std::chrono::milliseconds(100);
    server_ = std::make_unique<McpServer>(
        io_, c, [this](const std::string& line) { out_.push_back(nlohmann::json::parse(line)); });
    ASSERT_TRUE(server_->Init().ok());
  }
  void SendLine(const nlohmann::json& j) { server_->HandleLine(j.dump()); }
  std::optional<nlohmann::json> Response(const nlohmann::json& id) {
    for (const auto& m : out_) {
      if (m.contains("id") && m["id"] == id && !m.contains("method")) return m;
    }
    return std::nullopt;
  }
  nlohmann::json Request(const std::string& method, nlohmann::json params, int ms = 10000) {
    nlohmann::json id = ++next_;
    SendLine({{"jsonrpc", "2.0"}, {"id", id}, {"method", method}, {"params", params}});
    RunUntil(
        io_, [&] { return Response(id).has_value(); }, std::chrono::milliseconds(ms));
    auto r = Response(id);
    EXPECT_TRUE(r.has_value()) << method;
    return r.value_or(nlohmann::json::object());
  }
  nlohmann::json Tool(const std::string& name, nlohmann::json args) {
    auto r = Request("tools/call", {{"name", name}, {"arguments", args}});
    EXPECT_TRUE(r.contains("result")) << r.dump();
    return r.contains("result") ? r["result"] : nlohmann::json::object();
  }

  asio::io_context io_;
  TempDir ws_, bin_, state_;
  policy::Policy policy_;
  std::unique_ptr<McpServer> server_;
  std::vector<nlohmann::json> out_;
  int next_ = 0;
};

TEST_F(McpTest, InitializeNegotiatesTheLegacyRevision) {
  auto r = Request("initialize", {{"protocolVersion", "2025-11-25"},
                                  {"capabilities", nlohmann::json::object()},
                                  {"clientInfo", {{"name", "t"}, {"version", "1"}}}});
  EXPECT_EQ(r["result"]["protocolVersion"], "2025-11-25");
  EXPECT_TRUE(r["result"]["capabilities"].contains("tools"));
  EXPECT_EQ(r["result"]["serverInfo"]["name"], "ward");
  EXPECT_FALSE(r["result"].contains("resultType"));
  r = Request("initialize", {{"protocolVersion", "2025-06-18"}});
  EXPECT_EQ(r["result"]["protocolVersion"], "2025-06-18");
  r = Request("initialize", {{"protocolVersion", "1999-01-01"}});
  EXPECT_EQ(r["result"]["protocolVersion"], "2025-11-25");  // ours, for the client to judge
  SendLine({{"jsonrpc", "2.0"}, {"method", "notifications/initialized"}});
  EXPECT_EQ(Request("ping", nlohmann::json::object())["result"], nlohmann::json::object());
}

TEST_F(McpTest, StatelessRevisionDiscoveryAndPerRequestVersion) {
  nlohmann::json meta = {{"io.modelcontextprotocol/protocolVersion", "2026-07-28"},
                         {"io.modelcontextprotocol/clientCapabilities", nlohmann::json::object()}};
  auto d = Request("server/discover", {{"_meta", meta}});
  EXPECT_EQ(d["result"]["resultType"], "complete");
  EXPECT_EQ(d["result"]["supportedVersions"], nlohmann::json::array({"2026-07-28"}));
  EXPECT_TRUE(d["result"]["capabilities"].contains("tools"));
  // No handshake needed: a tools/list with _meta works and says resultType.
  auto l = Request("tools/list", {{"_meta", meta}});
  EXPECT_EQ(l["result"]["resultType"], "complete");
  EXPECT_EQ(l["result"]["tools"].size(), 8u);
  nlohmann::json bad = {{"io.modelcontextprotocol/protocolVersion", "2099-01-01"}};
  auto e = Request("tools/list", {{"_meta", bad}});
  EXPECT_EQ(e["error"]["code"], kMcpUnsupportedVersionCode);
  EXPECT_EQ(e["error"]["data"]["supported"][0], "2026-07-28");
  EXPECT_EQ(e["error"]["data"]["requested"], "2099-01-01");
}

TEST_F(McpTest, ToolDefinitionsAreWellFormed) {
  auto tools = McpServer::ToolDefinitions();
  std::set<std::string> names;
  for (const auto& t : tools) {
    names.insert(t["name"].get<std::string>());
    EXPECT_EQ(t["inputSchema"]["type"], "object") << t["name"];
    EXPECT_FALSE(t["description"].get<std::string>().empty());
    if (t.contains("outputSchema")) {
      EXPECT_EQ(t["outputSchema"]["type"], "object");
    }
  }
  EXPECT_EQ(names, (std::set<std::string>{"exec", "exec_poll", "exec_kill", "read_file",
                                          "write_file", "edit_file", "list_files",
                                          "reset_sandbox"}));
}

TEST_F(McpTest, ExecReturnsStructuredResults) {
  auto r = Tool("exec", {{"command", "echo hi; echo err >&2"}});
  EXPECT_EQ(r["isError"], false);
  auto& s = r["structuredContent"];
  EXPECT_EQ(s["status"], "exited");
  EXPECT_EQ(s["exit_code"], 0);
  EXPECT_EQ(s["stdout"], "hi\n");
  EXPECT_EQ(s["stderr"], "err\n");
  EXPECT_EQ(s["truncated"], false);
  EXPECT_TRUE(s["exec_id"].is_string());
  EXPECT_EQ(nlohmann::json::parse(r["content"][0]["text"].get<std::string>()), s);
  r = Tool("exec", {{"argv", {"/bin/sh", "-c", "exit 2"}}});
  EXPECT_EQ(r["isError"], true);
  EXPECT_EQ(r["structuredContent"]["exit_code"], 2);
  r = Tool("exec", {{"argv", {"__refuse__"}}});
  EXPECT_EQ(r["isError"], true);
  EXPECT_EQ(r["structuredContent"]["status"], "denied");
  r = Tool("exec", {{"command", "true"}, {"cwd", "../.."}});
  EXPECT_EQ(r["isError"], true);
  r = Tool("exec", {{"command", "true"}, {"argv", {"true"}}});
  EXPECT_EQ(r["isError"], true);
  r = Tool("exec", {{"bogus", 1}});
  EXPECT_EQ(r["isError"], true);
}

TEST_F(McpTest, LongCommandsReturnAHandleThenPollAndKill) {
  auto r = Tool("exec", {{"command", "echo start; sleep 30"}, {"yield_ms", 200}});
  EXPECT_EQ(r["structuredContent"]["status"], "running");
  EXPECT_EQ(r["isError"], false);
  std::string id = r["structuredContent"]["exec_id"];
  auto p = Tool("exec_poll", {{"exec_id", id}, {"wait_ms", 100}, {"stdout_offset", 6}});
  EXPECT_EQ(p["structuredContent"]["status"], "running");
  EXPECT_EQ(p["structuredContent"]["stdout"], "");
  auto k = Tool("exec_kill", {{"exec_id", id}});
  EXPECT_EQ(k["structuredContent"]["status"], "exited");
  EXPECT_EQ(k["structuredContent"]["signal"], 9);
  EXPECT_EQ(k["isError"], true);
  EXPECT_EQ(Tool("exec_poll", {{"exec_id", "ex-0000000000000000"}})["isError"], true);
}

TEST_F(McpTest, ProgressNotificationsWhileRunning) {
  nlohmann::json id = ++next_;
  SendLine({{"jsonrpc", "2.0"},
            {"id", id},
            {"method", "tools/call"},
            {"params",
             {{"name", "exec"},
              {"arguments", {{"command", "sleep 0.5"}}},
              {"_meta", {{"progressToken", "tok"}}}}}});
  ASSERT_TRUE(RunUntil(io_, [&] { return Response(id).has_value(); }));
  int progress = 0;
  for (const auto& m : out_) {
    if (m.value("method", "") == "notifications/progress") {
      EXPECT_EQ(m["params"]["progressToken"], "tok");
      ++progress;
    }
  }
  EXPECT_GE(progress, 1);
}

TEST_F(McpTest, CancellationKillsTheCommandAndSendsNoResponse) {
  nlohmann::json id = "call-1";
  SendLine({{"jsonrpc", "2.0"},
            {"id", id},
            {"method", "tools/call"},
            {"params", {{"name", "exec"}, {"arguments", {{"command", "sleep 30"}}}}}});
  RunUntil(
      io_, [] { return false; }, std::chrono::milliseconds(100));
  SendLine({{"jsonrpc", "2.0"},
            {"method", "notifications/cancelled"},
            {"params", {{"requestId", id}, {"reason", "user"}}}});
  RunUntil(
      io_, [] { return false; }, std::chrono::milliseconds(1000));
  EXPECT_FALSE(Response(id).has_value());
  // The command is gone: a new call with the same id is accepted.
  auto r = Request("tools/call", {{"name", "exec"}, {"arguments", {{"command", "true"}}}});
  EXPECT_EQ(r["result"]["isError"], false);
}

// The server's own paths in the workspace are resolved there before each exec: a command can
// leave a symlink where one of them was, to make the next `ward run` bind a host directory.
TEST_F(McpTest, ARunPathSwappedForASymlinkIsRefused) {
  ASSERT_EQ(mkdir((ws_ / "out").c_str(), 0755), 0);
  policy::RunFlags flags;
  flags.write = {ws_ / "out"};
  Start(flags);
  auto r = Tool("exec", {{"command", "true"}});
  EXPECT_EQ(r["isError"], false) << r.dump();  // positive control
  ASSERT_EQ(rename((ws_ / "out").c_str(), (ws_ / "out.old").c_str()), 0);
  ASSERT_EQ(symlink(state_.path().c_str(), (ws_ / "out").c_str()), 0);
  r = Tool("exec", {{"command", "true"}});
  EXPECT_EQ(r["isError"], true);
  EXPECT_NE(r.dump().find(ws_ / "out is a symbolic link inside the workspace"), std::string::npos)
      << r.dump();
}

TEST_F(McpTest, FileTools) {
  auto r = Tool("read_file", {{"path", "hello.txt"}, {"offset", 2}, {"limit", 1}});
  EXPECT_EQ(r["isError"], false);
  EXPECT_NE(r["content"][0]["text"].get<std::string>().find("two\n"), std::string::npos);
  EXPECT_EQ(r["content"][0]["text"].get<std::string>().find("one"), std::string::npos);
  r = Tool("write_file", {{"path", "new.txt"}, {"content", "a b a"}});
  EXPECT_EQ(r["isError"], false);
  EXPECT_EQ(testing::Slurp(ws_ / "new.txt"), "a b a");
  r = Tool("edit_file", {{"path", "new.txt"}, {"old_string", "a"}, {"new_string", "x"}});
  EXPECT_EQ(r["isError"], true);  // not unique
  EXPECT_EQ(testing::Slurp(ws_ / "new.txt"), "a b a");
  r = Tool("edit_file", {{"path", "new.txt"}, {"old_string", "b"}, {"new_string", "B"}});
  EXPECT_EQ(r["isError"], false);
  EXPECT_EQ(testing::Slurp(ws_ / "new.txt"), "a B a");
  r = Tool("edit_file",
           {{"path", "new.txt"}, {"old_string", "a"}, {"new_string", "z"}, {"replace_all", true}});
  EXPECT_EQ(testing::Slurp(ws_ / "new.txt"), "z B z");
  r = Tool("edit_file", {{"path", "new.txt"}, {"old_string", "nope"}, {"new_string", "x"}});
  EXPECT_EQ(r["isError"], true);
  r = Tool("list_files", nlohmann::json::object());
  EXPECT_NE(r["content"][0]["text"].get<std::string>().find("new.txt"), std::string::npos);
  // Denials are tool errors, never protocol errors.
  r = Tool("write_file", {{"path", ".envrc"}, {"content", "evil"}});
  EXPECT_EQ(r["isError"], true);
  r = Tool("read_file", {{"path", "../../etc/shadow"}});
  EXPECT_EQ(r["isError"], true);
  r = Tool("nope", nlohmann::json::object());
  EXPECT_EQ(r["isError"], true);
}

TEST_F(McpTest, MalformedInputGetsErrorsAndTheServerContinues) {
  server_->HandleLine("{broken");
  server_->HandleLine("[]");
  server_->HandleLine("   ");
  ASSERT_GE(out_.size(), 2u);
  EXPECT_EQ(out_[0]["error"]["code"], kParseErrorCode);
  auto r = Request("no/such", nlohmann::json::object());
  EXPECT_EQ(r["error"]["code"], kMethodNotFoundCode);
  r = Request("tools/call", {{"arguments", 5}});
  EXPECT_EQ(r["result"]["isError"], true);
  EXPECT_EQ(Request("ping", nlohmann::json::object())["result"], nlohmann::json::object());
}

}  // namespace
}  // namespace ward::api
