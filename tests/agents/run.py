#!/usr/bin/env python3
"""One agent test: `run.py AGENT SCENARIO` (as the identity WARD_TEST_AS names). AGENT is a
module of this directory (claude, codex, gemini, opencode) whose SCENARIOS maps scenario names
to functions; a function raises agentlib.TestFailure with what went wrong. Exit 0: passed;
1: failed; 77: skipped (the root variant started without root)."""

import importlib
import os
import sys
import time
import traceback

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import agentlib  # noqa: E402


def main():
    if len(sys.argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    agent, scenario = sys.argv[1], sys.argv[2]
    module = importlib.import_module(agent)
    if scenario not in module.SCENARIOS:
        print("%s has no scenario %r (it has: %s)" %
              (agent, scenario, ", ".join(sorted(module.SCENARIOS))), file=sys.stderr)
        return 2
    agentlib.become_test_identity()
    start = time.monotonic()
    try:
        module.SCENARIOS[scenario]()
    except agentlib.TestFailure as e:
        print("FAILED: %s %s as %s: %s" % (agent, scenario, agentlib.variant(), e))
        return 1
    except Exception:
        traceback.print_exc()
        return 1
    print("passed: %s %s as %s in %.1f s" % (agent, scenario, agentlib.variant(),
                                              time.monotonic() - start))
    return 0


if __name__ == "__main__":
    sys.exit(main())
