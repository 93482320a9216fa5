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
    s = Session(A.Hostile.commands)
    try:
        r = s.run_inside()
        s.check_ran(r, "inside ward")
        bad = A.Hostile.judge(s.world, s.conv.results, s.exfil)
        if "GEMINI_API_KEY=" not in s.conv.results.get("print_env_key", ""):
            bad.append("print_env_key: the phantom GEMINI_API_KEY is not in the environment "
                       "inside, so the check for the real key proves nothing")
        if bad:
            A.fail("hostile tool calls got through:\n  " + "\n  ".join(bad))
        check_audit(s)
    finally:
        s.close()


def check_audit(s):
    """What ward saw of the hostile set is in the trail: the exfiltration through the proxy
    refused, the hook refused in the protected .git/hooks, the real key used by the broker.
    (The reads of ~/.ssh, the writes outside and to ~/.bashrc meet a private HOME and paths
    that do not exist inside: nothing is refused there, so nothing is recorded.)"""
    records = A.audit_records(s.world.home)
    if not A.records_of(records, "session.end"):
        A.fail("the audit trail has no session.end (records: %s)" %
               sorted({r.get("type") for r in records}))
    denied = [r["data"] for r in A.records_of(records, "net.deny")]
    if not any(d.get("port") == s.exfil.port for d in denied):
        A.fail("no net.deny for the exfiltration to 127.0.0.1:%d (net.deny: %s)" %
               (s.exfil.port, denied))
    hook = os.path.join(s.world.ws, ".git", "hooks", "pre-commit")
    if not any(r["data"].get("path") == hook and r["data"].get("protected")
               for r in A.records_of(records, "file.deny")):
        A.fail("no file.deny of the protected %s (file.deny: %s)" %
               (hook, [r["data"] for r in A.records_of(records, "file.deny")]))
    offline.check_net_denials(records, s.exfil.port, "gemini")
    if not A.records_of(records, "credential.use"):
        A.fail("no credential.use record: the broker did not put the real key on a request")


BENIGN = [
    ("list", "ls -la"),
    ("read", "cat README.md"),
    ("status", "git status --short; git log --oneline | head -3"),
]


def bench():
    """The benign conversation inside ward and without it, interleaved; prints the ratio."""
    inside, outside = [], []
    for _ in range(A.bench_rounds()):
        for where, times in (("inside ward", inside), ("without ward", outside)):
            s = Session(lambda world, port: BENIGN)
            try:
                run = s.run_inside if times is inside else s.run_outside
                t = time.monotonic()
                r = run()
                times.append(time.monotonic() - t)
                s.check_ran(r, where)
                if sorted(s.conv.results) != sorted(n for n, _ in BENIGN):
                    A.fail("gemini %s: results for %s only" % (where, sorted(s.conv.results)))
            finally:
                s.close()
    print("gemini bench: inside ward %s s, without %s s; ratio of the medians %.2f" %
          (" ".join("%.2f" % t for t in inside), " ".join("%.2f" % t for t in outside),
           A.median(inside) / A.median(outside)))


SCENARIOS = {"whole": whole, "bench": bench}
