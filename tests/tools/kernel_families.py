#!/usr/bin/env python3
"""Independent reading of data/kernel_families.yaml with Python's `re` (the program uses RE2::Set): the
family of a kernel name, for the expectations of the C++ tests.

    python3 tests/tools/kernel_families.py TRACE FAMILY   # kernel time (µs) of FAMILY over the whole trace
"""
import gzip
import json
import os
import re
import sys

import yaml

TABLE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "data", "kernel_families.yaml")


def _as_list(value):
    if value is None:
        return []
    return [value] if isinstance(value, str) else list(value)


def _compile(pattern):
    # RE2's leading (?i) and inline (?i:...) groups read the same in Python; '.' matches newlines (dot_nl).
    return re.compile(pattern, re.S)


def load_rows(path=TABLE):
    rows = []
    with open(path) as f:
        table = yaml.safe_load(f)
    for row in table["rules"]:
        patterns = []
        for glob in _as_list(row.get("glob")):
            patterns.append(_compile("^" + "".join(".*" if c == "*" else "." if c == "?" else re.escape(c)
                                                   for c in glob) + "$"))
        patterns.extend(_compile(p) for p in _as_list(row.get("regex")))
        rows.append((row["family"], patterns))
    return rows


_ROWS = None


def classify(name):
    global _ROWS
    if _ROWS is None:
        _ROWS = load_rows()
    bare = name[5:] if name.startswith("void ") else name
    for family, patterns in _ROWS:
        if any(p.search(bare) for p in patterns):
            return family
    return "other"


def main():
    trace, family = sys.argv[1], sys.argv[2]
    opener = gzip.open if trace.endswith(".gz") else open
    with opener(trace, "rt") as f:
        data = json.load(f)
    events = data["traceEvents"] if isinstance(data, dict) else data
    total, cache = 0.0, {}
    for e in events:
        if isinstance(e, dict) and str(e.get("cat", "")).lower() == "kernel" and e.get("ph") == "X":
            name = e.get("name", "")
            if name not in cache:
                cache[name] = classify(name)
            if cache[name] == family:
                total += float(e.get("dur", 0) or 0)
    print(f"{total:.3f}")


if __name__ == "__main__":
    main()
