#!/usr/bin/env python3
"""Runs one command in a sandbox that asks (`ask=True`) and answers its approval requests.

    ward serve &
    python3 approve.py [--socket PATH] [--yes | --no] [--read DIR] WORKSPACE COMMAND [ARGS...]

Whenever the command opens a file (or reaches a host) that the sandbox's policy does not
allow, the request is shown and answered: on the terminal (y: once, s: for the rest of the
command, anything else: deny), or by --yes / --no for every request.
"""
import argparse
import os
import sys

sys.dont_write_bytecode = True  # keep the source tree clean
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from ward_client import WardClient, WardError  # noqa: E402


def describe(req):
    what = req.get("access") or "connect to port %s" % req.get("port")
    return "request %s: %s wants %s %r" % (req["id"], req.get("exe") or "?", what,
                                          req["subject"])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--socket")
    ap.add_argument("--profile", default="default")
    ap.add_argument("--read", action="append", default=[],
                    help="a host directory the command may read (repeatable)")
    answer = ap.add_mutually_exclusive_group()
    answer.add_argument("--yes", action="store_true", help="approve every request once")
    answer.add_argument("--no", action="store_true", help="deny every request")
    ap.add_argument("workspace")
    ap.add_argument("command", nargs=argparse.REMAINDER)
    args = ap.parse_args()
    if not args.command:
        ap.error("no command")

    def show(method, params):
        if method == "exec.output":
            out = sys.stderr if params["stream"] == "stderr" else sys.stdout
            out.write(params["data"])
            out.flush()

    def decide(ward, req):
        print("[ward] " + describe(req), file=sys.stderr)
        if args.yes or args.no:
            key = "y" if args.yes else "n"
        else:
            key = input("  [y] allow once  [s] allow for this command  [n] deny: ").strip()
        if key in ("y", "s"):
            r = ward.approve(req["exec_id"], req["id"], scope="once" if key == "y" else "session")
            print("[ward] approved: grant %s" % r.get("grant", {}).get("id"), file=sys.stderr)
        else:
            ward.deny(req["exec_id"], req["id"], reason="denied in approve.py")
            print("[ward] denied", file=sys.stderr)

    try:
        with WardClient(args.socket, on_notification=show) as ward:
            sb = ward.create_sandbox(args.workspace, profile=args.profile, read=args.read,
                                     ask=True, ttl_s=600)
            try:
                r = ward.run(sb, args.command, timeout_ms=600_000, yield_ms=200)
                answered = set()
                while r["status"] == "running":
                    for req in ward.approvals(exec_id=r["exec_id"]):
                        if req["id"] not in answered:
                            answered.add(req["id"])
                            decide(ward, req)
                    try:
                        r = ward.wait(r["exec_id"], timeout_ms=200)
                    except WardError as e:
                        # Still running; approval_required: it waits for one of us.
                        if e.kind not in ("timeout", "approval_required"):
                            raise
            finally:
                ward.destroy(sb)
    except WardError as e:
        print("ward: %s" % e, file=sys.stderr)
        return 1
    print("[%s exit_code=%s]" % (r["status"], r["exit_code"]), file=sys.stderr)
    return r["exit_code"] if r["status"] == "exited" else 125


if __name__ == "__main__":
    sys.exit(main())
