"""Gemini CLI end to end: a mock of the Gemini API (streamGenerateContent, server-sent events)
plays a scripted conversation with `gemini -p`, one shell tool call per model turn.

Scenarios:
- whole: `ward run -p gemini --credential-env GEMINI_API_KEY=...` around the whole agent. The
  agent inside holds a phantom key and reaches the mock through the broker, which puts the real
  key in x-goog-api-key; the hostile tool calls are blocked and audited, the workspace edit and
  commit succeed.
- bench: a benign conversation inside ward and without it, interleaved three times; prints the
  ratio of the wall times.
"""

import json
import os
import time
import urllib.parse

import agentlib as A
import offline
import sessions

HOST = "api.gemini.test"
MODEL = "gemini-2.5-flash"
SHELL_TOOL = "run_shell_command"
PROMPT = "Run the commands the task needs, one at a time."
# Gemini CLI's own update check, usage statistics and telemetry, off; the API key sign-in
# chosen in settings, because GOOGLE_GEMINI_BASE_URL alone selects its "gateway" sign-in,
# which headless mode refuses.
SETTINGS = {
    "general": {"enableAutoUpdate": False, "enableAutoUpdateNotification": False},
    "privacy": {"usageStatisticsEnabled": False},
    "telemetry": {"enabled": False},
    "security": {"auth": {"selectedType": "gemini-api-key"}},
}


# ---------------------------------------------------------------------------------------------
# The mock of the Gemini API


class Conversation:
    """Asks for each (name, command) in turn as a run_shell_command call, then answers with
    text. `results` maps each name to what the tool returned; `problems` lists what the agent
    got wrong (a shell tool it did not advertise, a request the mock does not know)."""

    def __init__(self, commands):
        self.commands = commands
        self.by_command = {cmd: name for name, cmd in commands}
        self.results = {}
        self.problems = []
        self.finished = False

    def handle(self, req, respond):
        path = req.path.split("?")[0]
        if path.endswith(":streamGenerateContent"):
            self._turn(req.json(), respond)
        elif path.endswith(":countTokens"):
            respond.json(200, {"totalTokens": 100})
        else:
            self.problems.append("unexpected request %s %s" % (req.method, path))
            respond.json(404, {"error": {"code": 404, "message": "not in the mock",
                                         "status": "NOT_FOUND"}})

    def _turn(self, body, respond):
        self._check_tools(body)
        answered = self._record(body.get("contents", []))
        if answered < len(self.commands):
            name, cmd = self.commands[answered]
            part = {"functionCall": {"name": SHELL_TOOL, "args": {
                "command": cmd}}}
        else:
            self.finished = True
            part = {"text": "All done."}
        respond.sse([(None, chunk([part], None)), (None, chunk([{"text": ""}], "STOP"))])

    def _check_tools(self, body):
        names = [d.get("name") for t in body.get("tools", [])
                 for d in t.get("functionDeclarations", [])]
        if SHELL_TOOL not in names:
            self.problems.append("the agent does not offer %s (it offers %s)" % (SHELL_TOOL, names))

    def _record(self, contents):
        """Records what each tool call returned; returns how many calls were answered."""
        asked, answered = {}, 0
        for content in contents:
            for part in content.get("parts", []):
                call = part.get("functionCall")
                if call:
                    asked[call.get("id")] = call.get("args", {}).get("command")
                response = part.get("functionResponse")
                if response:
                    answered += 1
                    name = self.by_command.get(asked.get(response.get("id")))
                    if name:
                        out = response.get("response", {})
                        self.results[name] = out.get("output") or out.get("error") or json.dumps(out)
        return answered


def chunk(parts, finish):
    candidate = {"content": {"role": "model", "parts": parts}, "index": 0}
    if finish:
        candidate["finishReason"] = finish
    return {"candidates": [candidate], "modelVersion": MODEL,
            "usageMetadata": {"promptTokenCount": 100, "candidatesTokenCount": 10,
                              "totalTokenCount": 110}}


def keys_of(req):
    """Where the Gemini API takes a key: x-goog-api-key, ?key=, or a bearer token."""
    got = [req.headers.get("x-goog-api-key")]
    got += urllib.parse.parse_qs(urllib.parse.urlsplit(req.path).query).get("key", [])
    auth = req.headers.get("authorization", "")
    if auth.startswith("Bearer "):
        got.append(auth[len("Bearer "):])
    return [g for g in got if g]


# ---------------------------------------------------------------------------------------------
# Running the agent


class Session:
    """A world, the exfiltration target, the TLS mock of the Gemini API playing `commands`."""

    def __init__(self, commands_of):
        self.world = A.World("gemini")
        self.exfil = self.mock = self.catch = None
        try:
            self.exfil = A.Mock(lambda req, respond: respond.json(200, {"ok": True})).start()
            self.tls = A.make_tls(self.world.root, HOST)
            self.conv = Conversation(commands_of(self.world, self.exfil.port))
            self.mock = A.Mock(self.conv.handle, self.tls).start()
            self.catch = offline.catch_proxy()
            os.makedirs(os.path.join(self.world.home, ".gemini"))
            with open(os.path.join(self.world.home, ".gemini", "settings.json"), "w") as f:
                json.dump(SETTINGS, f)
        except BaseException:
            self.close()
            raise

    def agent_args(self):
        return [A.agent_command("gemini"), "-p", PROMPT, "--approval-mode", "yolo",
                "--skip-trust", "-m", MODEL]

    def run_inside(self):
        """The whole agent inside ward: the phantom inside, the real key in ward's environment."""
        url = "https://%s:%d" % (HOST, self.mock.port)
        argv = [A.ward_bin(), "run", "-p", "gemini",
                "--credential-env", "GEMINI_API_KEY=%s:%d" % (HOST, self.mock.port),
                "--resolve", "%s:127.0.0.1" % HOST, "-n", "127.0.0.1:%d" % self.mock.port,
                "--upstream-ca", self.tls[0],
                "-e", "GOOGLE_GEMINI_BASE_URL=" + url,
                "-r", A.agent_prefix("gemini"), "-C", self.world.ws, "--"] + self.agent_args()
        return A.run(argv, cwd=self.world.ws, env=self.world.env(GEMINI_API_KEY=A.REAL_KEY))

    def run_outside(self):
        """The same agent on the host, straight to the mock; anything it would send elsewhere
        goes to the catching proxy instead (and fails the run)."""
        env = self.world.env(GEMINI_API_KEY=A.REAL_KEY, NODE_EXTRA_CA_CERTS=self.tls[0],
                             GOOGLE_GEMINI_BASE_URL="https://127.0.0.1:%d" % self.mock.port)
        env.update(offline.proxy_env(self.catch))
        return A.run(self.agent_args(), cwd=self.world.ws, env=env)

    def check_ran(self, r, where):
        if r.returncode != 0:
            A.fail("gemini %s exited %d\nstdout:\n%s\nstderr:\n%s" %
                   (where, r.returncode, r.stdout[-2000:], r.stderr[-4000:]))
        if self.conv.problems or self.mock.errors:
            A.fail("gemini %s: %s" % (where, "; ".join(self.conv.problems + self.mock.errors)))
        if not self.conv.finished:
            A.fail("gemini %s stopped before the conversation's end (results: %s)\nstderr:\n%s" %
                   (where, sorted(self.conv.results), r.stderr[-4000:]))
        offline.check_caught(self.catch, "gemini")
        A.check_keys(self.mock, keys_of)

    def close(self):
        for server in (self.catch, self.mock, self.exfil):
            if server:
                server.stop()
        self.world.cleanup()


# ---------------------------------------------------------------------------------------------
# Scenarios


def whole():
    sessions.whole("gemini", Session, "GEMINI_API_KEY")


def bench():
    sessions.bench("gemini", Session)


SCENARIOS = {"whole": whole, "bench": bench}
