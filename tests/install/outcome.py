"""Failed expectations of a test script, and its end as ctest reads it: exit 1 when something failed,
77 (skipped) when a part could not run, else 0 with a one-line summary."""
import sys

failures = []


def expect(condition, message):
    if not condition:
        failures.append(message)


def finish(summary, skipped=None):
    for failure in failures[:40]:
        print("FAIL:", failure)
    if failures:
        sys.exit(1)
    print(summary)
    if skipped:
        print("skipped:", skipped)
        sys.exit(77)
    sys.exit(0)
