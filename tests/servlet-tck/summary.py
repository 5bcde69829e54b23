"""Summarises surefire's reports of a TCK run: one line per test class
(passed, failed, skipped), the totals, then each test that failed with
the first line of its message. Usage: summary.py REPORTS_DIR [COMMAND]."""

import sys
import time
import xml.etree.ElementTree as ET
from pathlib import Path


def main():
    reports = Path(sys.argv[1])
    command = sys.argv[2] if len(sys.argv) > 2 else ""
    rows, failed = [], []
    total = [0, 0, 0]
    for f in sorted(reports.glob("TEST-*.xml")):
        suite = ET.parse(f).getroot()
        name = suite.get("name")
        passed = bad = skipped = 0
        for case in suite.iter("testcase"):
            problem = case.find("failure")
            if problem is None:
                problem = case.find("error")
            if case.find("skipped") is not None:
                skipped += 1
            elif problem is not None:
                bad += 1
                msg = (problem.get("message") or problem.get("type") or "")
                failed.append("%s.%s: %s" % (name, case.get("name"),
                                             msg.strip().splitlines()[0][:200]
                                             if msg.strip() else ""))
            else:
                passed += 1
        rows.append((name, passed, bad, skipped))
        total[0] += passed
        total[1] += bad
        total[2] += skipped
    out = ["Jakarta Servlet TCK against nginx-jvm, %s" %
           time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())]
    if command:
        out.append("command: " + command)
    out.append("classes: %d; tests passed %d, failed %d, skipped %d" %
               (len(rows), *total))
    out.append("")
    out.append("%-78s %6s %6s %7s" % ("class", "passed", "failed", "skipped"))
    for name, p, b, s in rows:
        out.append("%-78s %6d %6d %7d" % (name, p, b, s))
    out.append("")
    out.append("failed tests (%d):" % len(failed))
    out.extend("  " + line for line in failed)
    print("\n".join(out))


if __name__ == "__main__":
    main()
