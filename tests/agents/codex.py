"""Codex CLI end to end: a mock of the OpenAI Responses API (POST /v1/responses, streamed as
server-sent events) plays the hostile conversation through Codex's shell tool, in ward
(whole-agent mode) or through `ward mcp` (per tool call), and the bench times a benign
conversation inside ward and without it.

Codex is configured through $CODEX_HOME/config.toml (CODEX_HOME is ~/.codex of the scratch
HOME): a custom model provider pointed at the mock, its own sandbox off (ward denies the user
namespaces it would need; ward is the sandbox), no approvals, no update check, no analytics,
no OpenTelemetry export. Codex is a Rust binary (the npm package's launcher starts it): it
trusts CODEX_CA_CERTIFICATE or SSL_CERT_FILE, and ward points SSL_CERT_FILE at its session CA
bundle inside; on the host the test sets CODEX_CA_CERTIFICATE to the mock's CA.
"""

import json
import os
import socket
import threading
import time

import agentlib as A

HOST = "api.codex.test"
# A model Codex has no metadata for: it falls back to generic metadata, which offers every tool
# (MCP tools included) as a plain function. For the models it knows, MCP tools hide behind its
# tool search and some models take tools only through its JavaScript "code mode".
MODEL = "ward-mock-model"
PROMPT = "Run the commands you are asked to run."
# Codex retries a model API it cannot reach without end ("Reconnecting... waiting for network"):
# a run that stalls is cut here, far above the few seconds a conversation takes.
RUN_TIMEOUT = 150


# ---------------------------------------------------------------------------------------------
# The mock model API: one tool call per model turn, then a final answer


class Conversation:
    """The scripted turns: `steps` is (name, command) in order. Codex resends the whole history
    on every request; the next step is the first whose call has no output in the history yet.
    `tool` picks, from the tools Codex advertises, the one to call and how to call it."""

    def __init__(self, steps, tool):
        self.steps = steps
        self.tool = tool
        self.results = {}
        self.advertised = []
        self.lock = threading.Lock()

    def handle(self, req, respond):
        if req.method != "POST" or not req.path.endswith("/responses"):
            respond.json(404, {"error": {"message": "the mock serves POST /v1/responses only"}})
            return
        body = req.json()
        outputs = call_outputs(body.get("input", []))
        with self.lock:
            self.advertised = body.get("tools", [])
            for name, _ in self.steps:
                if "call_" + name in outputs:
                    self.results[name] = outputs["call_" + name]
        pending = [(n, c) for n, c in self.steps if "call_" + n not in outputs]
        if not pending:
            respond.sse(response_events([message_item("All done.")]))
            return
        name, command = pending[0]
        tool_name, namespace, arguments = self.tool(self.advertised, command)
        respond.sse(response_events([function_call_item(name, tool_name, namespace, arguments)]))


def call_outputs(items):
    """{call_id: the output text} of the function_call_output items of a request's input."""
    out = {}
    for it in items:
        if it.get("type") in ("function_call_output", "custom_tool_call_output"):
            o = it.get("output")
            if isinstance(o, list):
                o = "\n".join(p.get("text", "") for p in o if isinstance(p, dict))
            elif isinstance(o, dict):
                o = o.get("content") if isinstance(o.get("content"), str) else json.dumps(o)
            out[it.get("call_id")] = o if isinstance(o, str) else json.dumps(o)
    return out


def advertised_functions(tools):
    """(namespace or None, function tool) for every function Codex offers, namespaces opened."""
    for t in tools:
        if t.get("type") == "function":
            yield None, t
        elif t.get("type") == "namespace":
            for inner in t.get("tools", []):
                if inner.get("type") == "function":
                    yield t.get("name"), inner


def shell_tool(tools, command):
    """Codex's own shell tool: the function taking a `cmd` (unified exec) or `command`."""
    for ns, t in advertised_functions(tools):
        props = t.get("parameters", {}).get("properties", {})
        if "cmd" in props:
            return t["name"], ns, {"cmd": command, "yield_time_ms": 30000}
        if t["name"] in ("shell", "local_shell") and "command" in props:
            return t["name"], ns, {"command": ["bash", "-lc", command], "timeout_ms": 30000}
    A.fail("Codex advertised no shell tool; it offered: %s" % tool_names(tools))


def ward_exec_tool(tools, command):
    """ward mcp's `exec`, under whatever name Codex gives the MCP server's tools."""
    for ns, t in advertised_functions(tools):
        full = (ns or "") + t["name"]
        if "ward" in full and full.endswith("exec"):
            return t["name"], ns, {"command": command, "timeout_ms": 30000}
    A.fail("Codex advertised no tool of the ward MCP server; it offered: %s" % tool_names(tools))


def tool_names(tools):
    return ", ".join(((ns + ".") if ns else "") + t["name"] for ns, t in advertised_functions(tools))


def response_events(items):
    rid = "resp_" + os.urandom(6).hex()
    events = [("response.created", {"type": "response.created", "response": {
        "id": rid, "object": "response", "status": "in_progress", "model": MODEL, "output": []}})]
    for i, item in enumerate(items):
        events.append(("response.output_item.added", {"type": "response.output_item.added",
                                                      "output_index": i, "item": item}))
        if item["type"] == "message":
            text = item["content"][0]["text"]
            events.append(("response.output_text.delta", {
                "type": "response.output_text.delta", "item_id": item["id"], "output_index": i,
                "content_index": 0, "delta": text}))
        events.append(("response.output_item.done", {"type": "response.output_item.done",
                                                     "output_index": i, "item": item}))
    events.append(("response.completed", {"type": "response.completed", "response": {
        "id": rid, "object": "response", "status": "completed", "model": MODEL, "output": items,
        "usage": {"input_tokens": 100, "input_tokens_details": {"cached_tokens": 0},
                  "output_tokens": 10, "output_tokens_details": {"reasoning_tokens": 0},
                  "total_tokens": 110}}}))
    return events


def message_item(text):
    return {"type": "message", "id": "msg_" + os.urandom(6).hex(), "role": "assistant",
            "status": "completed",
            "content": [{"type": "output_text", "text": text, "annotations": []}]}


def function_call_item(step, tool_name, namespace, arguments):
    item = {"type": "function_call", "id": "fc_" + step, "call_id": "call_" + step,
            "name": tool_name, "arguments": json.dumps(arguments), "status": "completed"}
    if namespace:
        item["namespace"] = namespace
    return item


def authorization(request):
    v = request.headers.get("authorization", "")
    return [v[len("Bearer "):]] if v.startswith("Bearer ") else [v] if v else []


# ---------------------------------------------------------------------------------------------
# Codex's configuration and command line


def write_config(world, base_url, extra="", features=""):
    """~/.codex/config.toml: the mock as the model provider, Codex's sandbox, approvals, update
    check, analytics and telemetry off."""
    codex_home = os.path.join(world.home, ".codex")
    os.makedirs(codex_home, exist_ok=True)
    with open(os.path.join(codex_home, "config.toml"), "w") as f:
        f.write("""model = "%s"
model_provider = "mock"
approval_policy = "never"
sandbox_mode = "danger-full-access"
check_for_update_on_startup = false
web_search = "disabled"

[model_providers.mock]
name = "mock"
base_url = "%s"
env_key = "OPENAI_API_KEY"
wire_api = "responses"
request_max_retries = 0
stream_max_retries = 0

# Startup syncs (the curated plugin repository, the apps and plugin catalogues) and the
# update notice reach for hosts other than the model API: off.
[features]
plugins = false
remote_plugin = false
apps = false
in_app_updates = false
tool_suggest = false
%s
[analytics]
enabled = false

[feedback]
enabled = false

[otel]
exporter = "none"
log_user_prompt = false
%s""" % (MODEL, base_url, features, extra))
    return codex_home


def codex_argv():
    return [A.agent_command("codex"), "exec", "--skip-git-repo-check",
            "--sandbox", "danger-full-access", "--color", "never", PROMPT]


def in_ward(world, mock, ca):
    """`ward run -p codex` around Codex: the real key stays outside (the broker adds it on the
    way to the mock), the session CA is what Codex trusts inside."""
    port = mock.port
    write_config(world, "https://%s:%d/v1" % (HOST, port))
    argv = [A.ward_bin(), "run", "-p", "codex", "-q",
            "--credential-env", "OPENAI_API_KEY=%s:%d" % (HOST, port),
            "--resolve", "%s:127.0.0.1" % HOST, "--upstream-ca", ca,
            # The mock's address is loopback, which only an address rule opens.
            "-n", "127.0.0.1:%d" % port,
            "-r", A.agent_prefix("codex"), "-C", world.ws, "--"] + codex_argv()
    return A.run(argv, cwd=world.ws, env=world.env(OPENAI_API_KEY=A.REAL_KEY), timeout=RUN_TIMEOUT)


def on_host(world, mock, ca, extra="", features=""):
    """Codex run directly on the host against the mock (its name is not resolvable here, the
    certificate also names 127.0.0.1). Its proxy is a trap on loopback: a request for any other
    host lands there instead of leaving the machine, and fails the test."""
    write_config(world, "https://127.0.0.1:%d/v1" % mock.port, extra, features)
    trap = ProxyTrap()
    proxy = "http://127.0.0.1:%d" % trap.port
    env = world.env(OPENAI_API_KEY=A.REAL_KEY, CODEX_CA_CERTIFICATE=ca, HTTPS_PROXY=proxy,
                    HTTP_PROXY=proxy, ALL_PROXY=proxy, NO_PROXY="127.0.0.1")
    try:
        r = A.run(codex_argv(), cwd=world.ws, env=env, timeout=RUN_TIMEOUT)
    finally:
        trap.close()
    if trap.requests:
        A.fail("Codex reached for other hosts (update check, plugin sync, telemetry?): %s" %
               trap.requests)
    return r


class ProxyTrap:
    """A listener on loopback that records the first line of each connection and closes it."""

    def __init__(self):
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.port = self.sock.getsockname()[1]
        self.requests = []
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self):
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            with conn:
                conn.settimeout(2)
                try:
                    self.requests.append(conn.recv(512).split(b"\r\n")[0].decode(errors="replace"))
                except OSError:
                    self.requests.append("(a connection that sent nothing)")

    def close(self):
        self.sock.close()


def check_exit(r, what):
    if r.returncode != 0:
        A.fail("%s exited %d\nstdout tail:\n%s\nstderr tail:\n%s" %
               (what, r.returncode, r.stdout[-2000:], r.stderr[-3000:]))


# ---------------------------------------------------------------------------------------------
# Scenarios


class Setup:
    """A world, the mock's TLS, the exfiltration target, the mock model API."""

    def __init__(self, steps_of, tool):
        self.world = A.World("codex")
        self.ca, cert, key = A.make_tls(self.world.root, HOST)
        self.exfil = A.Mock(lambda req, respond: respond.json(200, {"ok": True})).start()
        self.steps = steps_of(self.world, self.exfil.port)
        self.convo = Conversation(self.steps, tool)
        self.mock = A.Mock(self.convo.handle, tls=(self.ca, cert, key)).start()

    def close(self):
        self.mock.stop()
        self.exfil.stop()
        self.world.cleanup()

    def judge(self, r, what):
        if self.mock.errors:
            A.fail("the mock failed: %s" % self.mock.errors)
        check_exit(r, what)
        bad = A.Hostile.judge(self.world, self.convo.results, self.exfil)
        if bad:
            A.fail("\n".join(bad) + "\nresults:\n" + json.dumps(self.convo.results, indent=1)[-6000:])
        A.check_keys(self.mock, authorization)


def scenario_whole():
    s = Setup(A.Hostile.commands, shell_tool)
    try:
        r = in_ward(s.world, s.mock, s.ca)
        s.judge(r, "ward run -p codex -- codex exec")
        check_audit_whole(A.audit_records(s.world.home), s.exfil.port, len(s.mock.requests))
    finally:
        s.close()


def check_audit_whole(records, exfil_port, model_requests):
    """What ward sees of the hostile set from outside: the exfiltration refused by the proxy,
    the hook write refused as protected, the broker adding the key to the model requests. No
    other host is refused: Codex tried no update check, plugin sync or telemetry."""
    check_exfil_denied(records, exfil_port)
    check_hook_denied(records)
    uses = [r for r in A.records_of(records, "credential.use")
            if r.get("data", {}).get("host") == HOST]
    if len(uses) < model_requests:
        A.fail("%d credential.use records for %s, the mock got %d requests" %
               (len(uses), HOST, model_requests))
    others = [d for d in A.records_of(records, "net.deny")
              if d.get("data", {}).get("port") != exfil_port]
    if others:
        A.fail("Codex reached for other hosts (update check, plugin sync, telemetry?): %s" % others)


def check_hook_denied(records):
    hooks = [r for r in A.records_of(records, "file.deny")
             if r.get("data", {}).get("path", "").endswith(".git/hooks/pre-commit")
             and r.get("data", {}).get("protected")]
    if not hooks:
        A.fail("no file.deny record of the protected .git/hooks/pre-commit; file.deny records: %s"
               % A.records_of(records, "file.deny"))


def check_exfil_denied(records, exfil_port):
    denies = A.records_of(records, "net.deny")
    if not any(d.get("data", {}).get("port") == exfil_port for d in denies):
        A.fail("no net.deny record of the exfiltration to port %d; net.deny records: %s; record "
               "types: %s" % (exfil_port, denies, sorted({r.get("type") for r in records})))


def scenario_mcp():
    s = Setup(A.Hostile.commands, ward_exec_tool)
    try:
        # Codex's own shell tool off: commands have no other way than ward's exec.
        r = on_host(s.world, s.mock, s.ca, mcp_server(s.world), features="shell_tool = false\n")
        s.judge(r, "codex exec with ward mcp")
        check_only_ward(s.convo)
        check_audit_mcp(A.audit_records(s.world.home), s.exfil.port)
    finally:
        s.close()


def mcp_server(world):
    return """
[mcp_servers.ward]
command = "%s"
args = ["mcp", "-p", "default", "-C", "%s"]
startup_timeout_sec = 30
tool_timeout_sec = 60
""" % (A.ward_bin(), world.ws)


def check_only_ward(convo):
    """Codex offered no tool of its own that runs commands or writes files, and every result
    came from ward's exec (its JSON carries an exec_id)."""
    own = [t["name"] for _, t in advertised_functions(convo.advertised)
           if t["name"] in ("exec_command", "write_stdin", "shell", "local_shell", "apply_patch")]
    own += [t.get("name") for t in convo.advertised if t.get("type") in ("custom", "local_shell")]
    if own:
        A.fail("with features.shell_tool = false Codex still offers %s" % own)
    for name, text in convo.results.items():
        if '"exec_id"' not in text:
            A.fail("%s: the result did not come from ward's exec: %s" % (name, text[-400:]))


def check_audit_mcp(records, exfil_port):
    """Each exec is recorded (an exec.start of the session's live sandbox); the exfiltration is
    refused by the proxy and the hook write as protected, both audited."""
    execs = A.records_of(records, "exec.start")
    if len(execs) < len(A.Hostile.NAMES):
        A.fail("%d exec.start records for %d exec calls" % (len(execs), len(A.Hostile.NAMES)))
    check_exfil_denied(records, exfil_port)
    check_hook_denied(records)


def benign_steps(world, exfil_port):
    return [(n, c) for n, c in A.Hostile.commands(world, exfil_port)
            if n == "workspace_edit_and_commit"]


def bench_once(where):
    s = Setup(benign_steps, shell_tool)
    try:
        t = time.monotonic()
        r = in_ward(s.world, s.mock, s.ca) if where == "ward" else on_host(s.world, s.mock, s.ca)
        took = time.monotonic() - t
        check_exit(r, "codex exec (%s)" % where)
        if "agent commit" not in s.world.commits():
            A.fail("bench (%s): no commit: %s" % (where, s.convo.results))
        A.check_keys(s.mock, authorization)
        return took
    finally:
        s.close()


def scenario_bench():
    times = {"ward": [], "host": []}
    for i in range(A.bench_rounds()):
        for where in ("host", "ward"):
            times[where].append(bench_once(where))
            print("bench %d %s: %.2f s" % (i + 1, where, times[where][-1]), flush=True)
    w, h = A.median(times["ward"]), A.median(times["host"])
    print("codex bench: median inside ward %.2f s, without ward %.2f s, ratio %.2f" %
          (w, h, w / h))


SCENARIOS = {"whole": scenario_whole, "mcp": scenario_mcp, "bench": scenario_bench}
