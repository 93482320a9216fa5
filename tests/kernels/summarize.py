#!/usr/bin/env python3
"""Counts of one kernel's test run from ctest's JUnit files, with every failure and every skip
and its reason (the message the test gave)."""
import re
import sys
import xml.etree.ElementTree as ET


def reason(out):
    m = re.search(r"Skipped\n(.*?)(?:\n\[|\Z)", out or "", re.S)
    return " ".join(m.group(1).split())[:300] if m else "(no reason printed)"


total = {"passed": 0, "failed": 0, "skipped": 0}
lines = []
for path in sys.argv[1:]:
    try:
        root = ET.parse(path).getroot()
    except (OSError, ET.ParseError) as e:
        print(f"summary: cannot read {path}: {e}")
        total["failed"] += 1
        continue
    for case in root.iter("testcase"):
        name = case.get("name")
        out = "".join(t.text or "" for t in case.iter("system-out"))
        if case.find("failure") is not None or case.get("status") == "fail":
            total["failed"] += 1
            lines.append(f"FAILED  {name}")
        elif case.find("skipped") is not None or case.get("status") in ("notrun", "disabled"):
            total["skipped"] += 1
            lines.append(f"SKIPPED {name}: {reason(out)}")
        else:
            total["passed"] += 1
for line in sorted(lines):
    print(line)
print(f"summary: {total['passed']} passed, {total['failed']} failed, {total['skipped']} skipped")
