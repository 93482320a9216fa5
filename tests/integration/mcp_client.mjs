// Drives `ward mcp` with the official MCP TypeScript SDK's stdio client, the way an agent
// would. Run by mcp_test.cc with WARD_BIN, WARD_WS (the workspace), WARD_STAGE (bound
// read-only) and WARD_CANARY (a secret planted in HOME) in the environment. Prints MCP-OK
// and exits 0 when every check holds; any failed assertion exits non-zero.
import assert from "node:assert/strict";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";

const env = process.env;
const transport = new StdioClientTransport({
  command: env.WARD_BIN,
  args: ["mcp", "-r", env.WARD_STAGE],
  cwd: env.WARD_WS,
  env: { ...env },
  stderr: "inherit",
});
const client = new Client({ name: "ward-integration-test", version: "1.0.0" });
await client.connect(transport);

const info = client.getServerVersion();
assert.equal(info.name, "ward");
assert.ok(client.getServerCapabilities().tools, "the server offers tools");

// 1. The tools.
const { tools } = await client.listTools();
const names = tools.map((t) => t.name).sort();
assert.deepEqual(names, ["edit_file", "exec", "exec_kill", "exec_poll", "list_files",
                         "read_file", "reset_sandbox", "write_file"]);

// 2. A command, in the session's live sandbox, with a structured result.
let r = await client.callTool({ name: "exec", arguments: { command: "echo hello-mcp; pwd" } });
{
  // The session's sandbox lives from one call to the next, until reset_sandbox.
  let k = await client.callTool({ name: "exec", arguments: { command: "echo kept > /tmp/k" } });
  assert.equal(k.isError, false, JSON.stringify(k));
  k = await client.callTool({ name: "exec", arguments: { command: "cat /tmp/k" } });
  assert.equal(k.structuredContent.stdout, "kept\n", JSON.stringify(k));
  k = await client.callTool({ name: "reset_sandbox", arguments: {} });
  assert.equal(k.isError, false, JSON.stringify(k));
  k = await client.callTool({ name: "exec", arguments: { command: "cat /tmp/k" } });
  assert.equal(k.isError, true, JSON.stringify(k));
  assert.notEqual(k.structuredContent.exit_code, 0);
}
assert.equal(r.isError, false, JSON.stringify(r));
assert.equal(r.structuredContent.status, "exited");
assert.equal(r.structuredContent.exit_code, 0);
assert.equal(r.structuredContent.stdout, `hello-mcp\n${env.WARD_WS}\n`);
assert.match(r.structuredContent.exec_id, /^ex-[0-9a-f]{16}$/);

// 3. Files, written and read through the server, and seen by a command.
r = await client.callTool({ name: "write_file",
                            arguments: { path: "notes/../mcp.txt", content: "alpha\nbeta\n" } });
assert.equal(r.isError, false, JSON.stringify(r));
r = await client.callTool({ name: "edit_file",
                            arguments: { path: "mcp.txt", old_string: "beta", new_string: "gamma" } });
assert.equal(r.isError, false, JSON.stringify(r));
r = await client.callTool({ name: "read_file", arguments: { path: "mcp.txt" } });
assert.equal(r.isError, false);
assert.equal(r.content[0].text, "alpha\ngamma\n");
r = await client.callTool({ name: "exec", arguments: { argv: ["/bin/cat", "mcp.txt"] } });
assert.equal(r.structuredContent.stdout, "alpha\ngamma\n");
r = await client.callTool({ name: "list_files", arguments: {} });
assert.match(r.content[0].text, /mcp\.txt/);

// 4. Denials are tool errors (isError), and the secret never shows.
r = await client.callTool({ name: "exec", arguments: { command: "cat ~/.ssh/id_ed25519" } });
assert.equal(r.isError, true, JSON.stringify(r));
assert.notEqual(r.structuredContent.exit_code, 0);
assert.ok(!JSON.stringify(r).includes(env.WARD_CANARY), "the canary leaked");
r = await client.callTool({ name: "write_file", arguments: { path: ".envrc", content: "x" } });
assert.equal(r.isError, true, JSON.stringify(r));
r = await client.callTool({ name: "read_file", arguments: { path: "../../etc/shadow" } });
assert.equal(r.isError, true);
r = await client.callTool({ name: "exec", arguments: { command: "true", cwd: "../.." } });
assert.equal(r.isError, true);

// 5. Progress while a command runs.
let progress = 0;
r = await client.callTool({ name: "exec", arguments: { command: "sleep 2.5; echo done" } },
                          undefined, { onprogress: () => { progress += 1; } });
assert.equal(r.structuredContent.stdout, "done\n");
assert.ok(progress >= 1, `expected progress notifications, got ${progress}`);

// 6. A long command returns a handle well within the client's 60 s timeout.
let t0 = Date.now();
r = await client.callTool({ name: "exec", arguments: { command: "echo begun; sleep 120" } });
const waited = Date.now() - t0;
assert.ok(waited < 25000, `the handle took ${waited} ms`);
assert.equal(r.structuredContent.status, "running");
assert.equal(r.isError, false);
const id = r.structuredContent.exec_id;
r = await client.callTool({ name: "exec_poll", arguments: { exec_id: id, wait_ms: 100 } });
assert.equal(r.structuredContent.status, "running");
assert.equal(r.structuredContent.stdout, "begun\n");
r = await client.callTool({ name: "exec_kill", arguments: { exec_id: id } });
assert.equal(r.structuredContent.status, "exited");
assert.equal(r.structuredContent.signal, 9);

// 7. A short explicit yield.
t0 = Date.now();
r = await client.callTool({ name: "exec", arguments: { command: "sleep 30", yield_ms: 500 } });
assert.ok(Date.now() - t0 < 10000);
assert.equal(r.structuredContent.status, "running");
await client.callTool({ name: "exec_kill", arguments: { exec_id: r.structuredContent.exec_id } });

await client.ping();
await client.close();
console.log(`MCP-OK tools=${names.length} progress=${progress} handle_ms=${waited}`);
