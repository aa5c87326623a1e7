#!/usr/bin/env python3
"""Reads lit JSON result files and prints the suite's closing line.

Prints `N passed, N failed, N skipped` and exits 1 when a test failed or no
test ran at all, so that a suite which silently tested nothing is red.
"""
import json
import sys

PASSED = {"PASS", "XFAIL", "FLAKYPASS"}
SKIPPED = {"UNSUPPORTED", "SKIPPED", "EXCLUDED"}


def main(paths):
    passed = failed = skipped = 0
    failures = []
    for path in paths:
        try:
            with open(path) as f:
                results = json.load(f)
        except (OSError, ValueError) as e:
            print(f"summarize-tests: cannot read {path}: {e}")
            failed += 1
            continue
        for test in results.get("tests", []):
            code = test.get("code")
            if code in PASSED:
                passed += 1
            elif code in SKIPPED:
                skipped += 1
            else:
                failed += 1
                failures.append(f"{code}: {test.get('name')}")
    for line in failures:
        print(line)
    print(f"{passed} passed, {failed} failed, {skipped} skipped")
    return 0 if failed == 0 and passed > 0 else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
