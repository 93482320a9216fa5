#!/usr/bin/env python3
"""Starts a long command, disconnects, reconnects and replays its output by offset.

    ward serve &
    python3 replay.py [--socket PATH] WORKSPACE
"""
import argparse
import os
import sys

sys.dont_write_bytecode = True  # keep the source tree clean
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from ward_client import WardClient  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--socket")
    ap.add_argument("workspace")
    args = ap.parse_args()

    with WardClient(args.socket) as ward:
        sb = ward.create_sandbox(args.workspace, ttl_s=300)
        r = ward.run(sb, shell="for i in 1 2 3 4 5; do echo line $i; sleep 0.2; done",
                     yield_ms=300, notify=False)
        exec_id = r["exec_id"]
        print("started %s, status %s; disconnecting" % (exec_id, r["status"]))

    # A new connection (after a crash of the client, say) picks up where it left off.
    with WardClient(args.socket) as ward:
        offset, complete, output = 0, False, b""
        while not complete:
            data, offset, complete = ward.read_output(exec_id, "stdout", offset)
            output += data
            if not complete:
                try:
                    ward.wait(exec_id, timeout_ms=500)
                except Exception:
                    pass
        final = ward.wait(exec_id)
        ward.destroy(sb)
    sys.stdout.write(output.decode("utf-8", "replace"))
    print("[%s exit_code=%s]" % (final["status"], final["exit_code"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
