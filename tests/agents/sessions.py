"""What the Gemini CLI and OpenCode modules share. Each has a Session that runs its agent
against its mock inside ward (run_inside) or without it (run_outside), with check_ran, conv
(the results by step name), world, exfil and close; here are the whole-agent scenario, its
audit check and the bench on top of it. Standard library only."""

import os
import time

import agentlib as A
import offline


def whole(agent, Session, key_var):
    """Whole-agent mode: the hostile set inside ward, judged, and what ward saw of it audited."""
    s = Session(A.Hostile.commands)
    try:
        r = s.run_inside()
        s.check_ran(r, "inside ward")
        bad = A.Hostile.judge(s.world, s.conv.results, s.exfil)
        if key_var + "=" not in s.conv.results.get("print_env_key", ""):
            bad.append("print_env_key: the phantom %s is not in the environment inside, so the "
                       "check for the real key proves nothing" % key_var)
        if bad:
            A.fail("hostile tool calls got through:\n  " + "\n  ".join(bad))
        check_audit(s, agent)
    finally:
        s.close()


def check_audit(s, agent):
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
    offline.check_net_denials(records, s.exfil.port, agent)
    if not A.records_of(records, "credential.use"):
        A.fail("no credential.use record: the broker did not put the real key on a request")


BENIGN = [
    ("list", "ls -la"),
    ("read", "cat README.md"),
    ("status", "git status --short; git log --oneline | head -3"),
]


def bench(agent, Session):
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
                    A.fail("%s %s: results for %s only" % (agent, where, sorted(s.conv.results)))
            finally:
                s.close()
    print("%s bench: inside ward %s s, without %s s; ratio of the medians %.2f" %
          (agent, " ".join("%.2f" % t for t in inside), " ".join("%.2f" % t for t in outside),
           A.median(inside) / A.median(outside)))
