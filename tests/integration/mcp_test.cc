// `ward mcp` driven by a real MCP client: the official TypeScript SDK's stdio client
// (mcp_client.mjs). The SDK is installed at test time with npm into a cache under the build
// tree (or under /tmp when the build tree is not writable, as for the unprivileged variant).
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <sstream>

#include "harness.h"

namespace ward::test {
namespace {

std::string Which(const std::string& name) {
  for (const char* dir : {"/usr/local/bin", "/usr/bin", "/bin"}) {
    std::string p = std::string(dir) + "/" + name;
    if (access(p.c_str(), X_OK) == 0) return p;
  }
  return "";
}

bool Strict() {
  const char* s = getenv("WARD_TEST_STRICT");
  return s && std::string(s) == "1";
}

bool HasSdk(const std::string& cache) {
  return PathExists(cache + "/node_modules/@modelcontextprotocol/sdk/package.json");
}

// Returns the cache dir holding node_modules/@modelcontextprotocol/sdk, or "" with *why set.
std::string EnsureSdk(const std::string& npm, std::string* why) {
  std::string build_cache = std::string(WARD_BUILD_BIN) + "/../mcp-sdk-cache";
  std::string tmp_cache = "/tmp/ward-mcp-sdk-" + std::to_string(geteuid());
  for (const std::string& c : {build_cache, tmp_cache}) {
    if (HasSdk(c)) return c;
  }
  std::string cache =
      access((std::string(WARD_BUILD_BIN) + "/..").c_str(), W_OK) == 0 ? build_cache : tmp_cache;
  MakeDirs(cache, 0755);
  // The caller's environment, for whatever proxy and CA settings reach the registry.
  RunOptions o;
  o.env["HOME"] = cache;
  o.env["npm_config_cache"] = cache + "/.npm";
  o.env["npm_config_update_notifier"] = "false";
  o.timeout_s = 600;
  RunResult r = RunProgram({npm, "install", "--prefix", cache, "--no-audit", "--no-fund",
                            "--loglevel=error", "@modelcontextprotocol/sdk@1"},
                           o);
  if (r.status != 0 || !HasSdk(cache)) {
    *why = "npm could not install @modelcontextprotocol/sdk into " + cache + ": " + r.err;
    return "";
  }
  return cache;
}

class McpTest : public SandboxTest {};

TEST_F(McpTest, TheTypeScriptSdkClientDrivesWardMcp) {
  std::string node = Which("node"), npm = Which("npm");
  if (node.empty() || npm.empty()) {
    if (Strict()) FAIL() << "node and npm are needed";
    GTEST_SKIP() << "node or npm is not installed";
  }
  std::string why;
  std::string cache = EnsureSdk(npm, &why);
  if (cache.empty()) {
    if (Strict()) FAIL() << why;
    GTEST_SKIP() << why;
  }
  // The script runs from a directory whose node_modules is the cache's.
  std::string dir = root_->path() + "/client";
  MakeDirs(dir, 0755);
  std::filesystem::copy_file(std::string(WARD_SOURCE_DIR) + "/tests/integration/mcp_client.mjs",
                             dir + "/mcp_client.mjs");
  ASSERT_EQ(symlink((cache + "/node_modules").c_str(), (dir + "/node_modules").c_str()), 0);

  RunOptions o = Defaults();
  o.env["WARD_BIN"] = WardBin();
  o.env["WARD_WS"] = ws_;
  o.env["WARD_STAGE"] = StageDir();
  o.env["WARD_CANARY"] = kCanarySecret;
  o.timeout_s = 240;
  RunResult r = RunProgram({node, dir + "/mcp_client.mjs"}, o);
  EXPECT_EQ(r.status, 0) << "stdout:\n" << r.out << "\nstderr:\n" << r.err;
  EXPECT_NE(r.out.find("MCP-OK"), std::string::npos) << r.out << r.err;
  // What the client wrote is in the workspace, edited.
  EXPECT_EQ(ReadFile(ws_ + "/mcp.txt"), "alpha\ngamma\n");
  EXPECT_FALSE(PathExists(ws_ + "/.envrc"));
}

TEST_F(McpTest, StdoutCarriesOnlyProtocolMessages) {
  // A raw session: every line on stdout must be a JSON-RPC message, whatever the commands print.
  RunOptions o = Defaults();
  o.stdin_data =
      "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{\"protocolVersion\":"
      "\"2025-11-25\",\"capabilities\":{},\"clientInfo\":{\"name\":\"t\",\"version\":\"1\"}}}\n"
      "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n"
      "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\",\"params\":{\"name\":\"exec\","
      "\"arguments\":{\"command\":\"echo noise; echo more-noise >&2\"}}}\n"
      "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"server/discover\",\"params\":{\"_meta\":{"
      "\"io.modelcontextprotocol/protocolVersion\":\"2026-07-28\","
      "\"io.modelcontextprotocol/clientCapabilities\":{}}}}\n"
      "garbage\n";
  o.timeout_s = 60;
  RunResult r = RunWard({"mcp", "-r", StageDir()}, o);
  EXPECT_EQ(r.status, 0) << r.err;
  std::istringstream lines(r.out);
  std::string line;
  int n = 0;
  bool saw_exec = false, saw_discover = false;
  while (std::getline(lines, line)) {
    auto j = nlohmann::json::parse(line, nullptr, false);
    ASSERT_FALSE(j.is_discarded()) << "not JSON on stdout: " << line;
    EXPECT_EQ(j["jsonrpc"], "2.0");
    ++n;
    int id = j["id"].is_number_integer() ? j["id"].get<int>() : 0;
    if (id == 2) {
      saw_exec = j["result"]["structuredContent"]["stdout"] == "noise\n";
    }
    if (id == 3) {
      saw_discover = j["result"]["supportedVersions"][0] == "2026-07-28" &&
                     j["result"]["resultType"] == "complete";
    }
  }
  EXPECT_EQ(n, 4) << r.out;  // initialize, the call, discover, and the parse error
  EXPECT_TRUE(saw_exec) << r.out;
  EXPECT_TRUE(saw_discover) << r.out;
  EXPECT_NE(r.err.find("ward mcp: serving"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace ward::test
