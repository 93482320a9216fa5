#!/usr/bin/env python3
"""Runs one command in a new sandbox through `ward serve`, streaming its output.

    ward serve &
    python3 run_command.py [--socket PATH] WORKSPACE COMMAND [ARGS...]
"""
import argparse
import os
import sys

sys.dont_write_bytecode = True  # keep the source tree clean
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from ward_client import WardClient, WardError  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--socket")
    ap.add_argument("--profile", default="default")
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

    try:
        with WardClient(args.socket, on_notification=show) as ward:
            sb = ward.create_sandbox(args.workspace, profile=args.profile, ttl_s=600)
            try:
                r = ward.run(sb, args.command, timeout_ms=600_000)
            finally:
                ward.destroy(sb)
    except WardError as e:
        print("ward: %s" % e, file=sys.stderr)
        return 1
    print("[%s exit_code=%s]" % (r["status"], r["exit_code"]), file=sys.stderr)
    return r["exit_code"] if r["status"] == "exited" else 125


if __name__ == "__main__":
    sys.exit(main())
