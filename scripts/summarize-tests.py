#!/usr/bin/env python3
"""Reads lit JSON and pytest JUnit XML results and prints the suite's
closing line.

Prints `N passed, N failed, N skipped` and exits 1 when a test failed, a
result file is missing, or no test ran at all, so that a suite which silently
tested nothing is red.
"""
import json
import sys
import xml.etree.ElementTree as ElementTree

LIT_PASSED = {"PASS", "XFAIL", "FLAKYPASS"}
LIT_SKIPPED = {"UNSUPPORTED", "SKIPPED", "EXCLUDED"}


def read_lit(path, counts, failures):
    with open(path) as f:
        results = json.load(f)
    for test in results.get("tests", []):
        code = test.get("code")
        if code in LIT_PASSED:
            counts["passed"] += 1
        elif code in LIT_SKIPPED:
            counts["skipped"] += 1
        else:
            counts["failed"] += 1
            failures.append(f"{code}: {test.get('name')}")


def read_junit(path, counts, failures):
    root = ElementTree.parse(path).getroot()
    for case in root.iter("testcase"):
        name = f"{case.get('classname')}::{case.get('name')}"
        if case.find("failure") is not None or case.find("error") is not None:
            counts["failed"] += 1
            failures.append(f"FAIL: {name}")
        elif case.find("skipped") is not None:
            counts["skipped"] += 1
        else:
            counts["passed"] += 1


def main(paths):
    counts = {"passed": 0, "failed": 0, "skipped": 0}
    failures = []
    for path in paths:
        reader = read_junit if path.endswith(".xml") else read_lit
        try:
            reader(path, counts, failures)
        except (OSError, ValueError, ElementTree.ParseError) as e:
            failures.append(f"cannot read {path}: {e}")
            counts["failed"] += 1
    for line in failures:
        print(line)
    print(f"{counts['passed']} passed, {counts['failed']} failed, "
          f"{counts['skipped']} skipped")
    return 0 if counts["failed"] == 0 and counts["passed"] > 0 else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
