"""OpenCode end to end: a mock of an OpenAI-compatible model API (Chat Completions, server-sent
events) plays a scripted conversation with `opencode run`, one bash tool call per model turn.

OpenCode reaches the mock through a provider of its own configuration (opencode.json): the
"@ai-sdk/openai-compatible" provider, which the opencode binary bundles (nothing is fetched from
the npm registry at run time), with its base URL and its key from the environment.

Scenarios:
- whole: `ward run -p opencode --credential-env OPENCODE_MOCK_API_KEY=...` around the whole
  agent. The agent inside holds a phantom key and reaches the mock through the broker, which
  puts the real key in its Authorization header; the hostile tool calls are blocked and
  audited, the workspace edit and commit succeed.
- bench: a benign conversation inside ward and without it, interleaved three times; prints the
  ratio of the wall times.
"""

import json
import os
import time

import agentlib as A
import offline
import sessions

HOST = "api.opencode.test"
KEY_VAR = "OPENCODE_MOCK_API_KEY"
PROVIDER, MODEL = "wardmock", "mock-coder"
SHELL_TOOL = "bash"
PROMPT = "Run the commands the task needs, one at a time."
# What keeps opencode off the network besides the model API: no model catalogue download
# (it uses the catalogue it bundles), no update check, no share, no LSP server downloads.
QUIET_ENV = {
    "OPENCODE_DISABLE_MODELS_FETCH": "true",
    "OPENCODE_DISABLE_AUTOUPDATE": "true",
    "OPENCODE_DISABLE_SHARE": "true",
    "OPENCODE_DISABLE_LSP_DOWNLOAD": "true",
}


def config(base_url):
    """~/.config/opencode/opencode.json: the mock as the only provider, every tool allowed
    (ward, not opencode's permission prompts, decides)."""
    return {
        "$schema": "https://opencode.ai/config.json",
        "provider": {PROVIDER: {
            "npm": "@ai-sdk/openai-compatible",
            "name": "ward mock",
            "options": {"baseURL": base_url, "apiKey": "{env:%s}" % KEY_VAR},
            "models": {MODEL: {"name": "mock coder", "tool_call": True}},
        }},
        "model": "%s/%s" % (PROVIDER, MODEL),
        "small_model": "%s/%s" % (PROVIDER, MODEL),
        "enabled_providers": [PROVIDER],
        "autoupdate": False,
        "share": "disabled",
        "permission": {"bash": "allow", "edit": "allow", "external_directory": "allow"},
    }


# ---------------------------------------------------------------------------------------------
# The mock of the Chat Completions API


class Conversation:
    """Asks for each (name, command) in turn as a bash tool call, then answers with text.
    Requests without tools (opencode's title generation) get a short text. `results` maps each
    name to what the tool returned; `problems` lists what the agent got wrong."""

    def __init__(self, commands):
        self.commands = commands
        self.by_command = {cmd: name for name, cmd in commands}
        self.results = {}
        self.problems = []
        self.finished = False
        self.calls = 0

    def handle(self, req, respond):
        path = req.path.split("?")[0]
        if req.method == "POST" and path.endswith("/chat/completions"):
            body = req.json()
            if body.get("tools"):
                self._turn(body, respond)
            else:
                respond.sse(stream([{"content": "Scripted session"}], "stop"))
        elif path.endswith("/models"):
            respond.json(200, {"object": "list", "data": [{"id": MODEL, "object": "model"}]})
        else:
            self.problems.append("unexpected request %s %s" % (req.method, path))
            respond.json(404, {"error": {"message": "not in the mock", "type": "not_found"}})

    def _turn(self, body, respond):
        names = [t.get("function", {}).get("name") for t in body.get("tools", [])]
        if SHELL_TOOL not in names:
            self.problems.append("the agent does not offer %s (it offers %s)" % (SHELL_TOOL, names))
        answered = self._record(body.get("messages", []))
        if answered < len(self.commands):
            name, cmd = self.commands[answered]
            self.calls += 1
            call = {"index": 0, "id": "call_%d" % self.calls, "type": "function",
                    "function": {"name": SHELL_TOOL, "arguments": json.dumps(
                        {"command": cmd, "description": name})}}
            respond.sse(stream([{"role": "assistant", "tool_calls": [call]}], "tool_calls"))
        else:
            self.finished = True
            respond.sse(stream([{"role": "assistant", "content": "All done."}], "stop"))

    def _record(self, messages):
        """Records what each tool call returned; returns how many calls were answered."""
        asked, answered = {}, 0
        for m in messages:
            for call in m.get("tool_calls") or []:
                try:
                    args = json.loads(call.get("function", {}).get("arguments") or "{}")
                except ValueError:
                    args = {}
                asked[call.get("id")] = args.get("command")
            if m.get("role") == "tool":
                answered += 1
                name = self.by_command.get(asked.get(m.get("tool_call_id")))
                if name:
                    content = m.get("content")
                    if isinstance(content, list):
                        content = "".join(p.get("text", "") for p in content)
                    self.results[name] = content or ""
        return answered


def stream(deltas, finish):
    """The SSE events of one streamed completion: each delta, then the finish and usage."""
    base = {"id": "chatcmpl-ward", "object": "chat.completion.chunk", "created": int(time.time()),
            "model": MODEL}
    events = [(None, dict(base, choices=[{"index": 0, "delta": d, "finish_reason": None}]))
              for d in deltas]
    events.append((None, dict(base, choices=[{"index": 0, "delta": {}, "finish_reason": finish}],
                              usage={"prompt_tokens": 100, "completion_tokens": 10,
                                     "total_tokens": 110})))
    events.append((None, "[DONE]"))
    return events


def keys_of(req):
    auth = req.headers.get("authorization", "")
    got = [auth[len("Bearer "):]] if auth.startswith("Bearer ") else []
    return got + [v for v in (req.headers.get("x-api-key"),) if v]


# ---------------------------------------------------------------------------------------------
# Running the agent


def seed_plugin_dependency(config_dir):
    """opencode installs @opencode-ai/plugin from the npm registry into each configuration
    directory it can write, in the background, unless node_modules and the lock file already
    list it. Listing it keeps the test off the registry (inside ward the install is refused
    anyway; on the host it would reach the real registry)."""
    os.makedirs(os.path.join(config_dir, "node_modules"))
    deps = {"@opencode-ai/plugin": A.pinned()["opencode"]["version"]}
    with open(os.path.join(config_dir, "package.json"), "w") as f:
        json.dump({"dependencies": deps}, f)
    with open(os.path.join(config_dir, "package-lock.json"), "w") as f:
        json.dump({"lockfileVersion": 3, "packages": {"": {"dependencies": deps}}}, f)



class Session:
    """A world, the exfiltration target, the TLS mock playing `commands`, opencode's config."""

    def __init__(self, commands_of):
        self.world = A.World("opencode")
        self.exfil = self.mock = self.catch = None
        try:
            self.exfil = A.Mock(lambda req, respond: respond.json(200, {"ok": True})).start()
            self.tls = A.make_tls(self.world.root, HOST)
            self.conv = Conversation(commands_of(self.world, self.exfil.port))
            self.mock = A.Mock(self.conv.handle, self.tls).start()
            self.config_dir = os.path.join(self.world.home, ".config", "opencode")
            self.catch = offline.catch_proxy()
            seed_plugin_dependency(self.config_dir)
        except BaseException:
            self.close()
            raise

    def write_config(self, base_url):
        with open(os.path.join(self.config_dir, "opencode.json"), "w") as f:
            json.dump(config(base_url), f, indent=2)

    def agent_args(self):
        return [A.agent_command("opencode"), "run", "--auto", PROMPT]

    def run_inside(self):
        """The whole agent inside ward: the phantom inside, the real key in ward's environment."""
        self.write_config("https://%s:%d/v1" % (HOST, self.mock.port))
        argv = [A.ward_bin(), "run", "-p", "opencode",
                "--credential-env", "%s=%s:%d" % (KEY_VAR, HOST, self.mock.port),
                "--resolve", "%s:127.0.0.1" % HOST, "-n", "127.0.0.1:%d" % self.mock.port,
                "--upstream-ca", self.tls[0],
                "-r", A.agent_prefix("opencode"), "-C", self.world.ws]
        for var, value in QUIET_ENV.items():
            argv += ["-e", "%s=%s" % (var, value)]
        argv += ["--"] + self.agent_args()
        return A.run(argv, cwd=self.world.ws, env=self.world.env(**{KEY_VAR: A.REAL_KEY}))

    def run_outside(self):
        """The same agent on the host, straight to the mock; anything it would send elsewhere
        goes to the catching proxy instead (and fails the run)."""
        self.write_config("https://127.0.0.1:%d/v1" % self.mock.port)
        env = self.world.env(**{KEY_VAR: A.REAL_KEY, "SSL_CERT_FILE": self.tls[0],
                                "NODE_EXTRA_CA_CERTS": self.tls[0]}, **QUIET_ENV)
        env.update(offline.proxy_env(self.catch))
        return A.run(self.agent_args(), cwd=self.world.ws, env=env)

    def check_ran(self, r, where):
        if r.returncode != 0:
            A.fail("opencode %s exited %d\nstdout:\n%s\nstderr:\n%s" %
                   (where, r.returncode, r.stdout[-2000:], r.stderr[-4000:]))
        if self.conv.problems or self.mock.errors:
            A.fail("opencode %s: %s" % (where, "; ".join(self.conv.problems + self.mock.errors)))
        if not self.conv.finished:
            A.fail("opencode %s stopped before the conversation's end (results: %s)\n"
                   "stdout:\n%s\nstderr:\n%s" % (where, sorted(self.conv.results),
                                                 r.stdout[-2000:], r.stderr[-4000:]))
        offline.check_caught(self.catch, "opencode")
        A.check_keys(self.mock, keys_of)

    def close(self):
        for server in (self.catch, self.mock, self.exfil):
            if server:
                server.stop()
        self.world.cleanup()


# ---------------------------------------------------------------------------------------------
# Scenarios


def whole():
    sessions.whole("opencode", Session, KEY_VAR)


def bench():
    sessions.bench("opencode", Session)


SCENARIOS = {"whole": whole, "bench": bench}
