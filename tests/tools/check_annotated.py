"""Checks an annotated trace against the trace it was made from and the `check --format json` report.

Usage: check_annotated.py ANNOTATED.json.gz CHECK.json
The annotated file must be real gzip (read strictly, magic bytes first), every finding marker must overlap
an event of the same name in the file's own time base, and every evidence `ts_us` of the JSON report must
be the `ts` of such an event. Exits non-zero with a one-line reason otherwise.
"""
import gzip
import json
import sys

FINDINGS_PID = 1000000000


def fail(message):
    print("check_annotated: " + message, file=sys.stderr)
    sys.exit(1)


annotated_path, report_path = sys.argv[1], sys.argv[2]
with open(annotated_path, "rb") as raw:
    if raw.read(2) != b"\x1f\x8b":
        fail(annotated_path + " is not gzip")
with gzip.open(annotated_path, "rb") as packed:
    document = json.loads(packed.read())
events = document["traceEvents"] if isinstance(document, dict) else document
by_name = {}
for event in events:
    # Complete events, and instants (dur 0) such as the allocator's [memory] records.
    if event.get("pid") == FINDINGS_PID or event.get("ph") not in ("X", "i", "I") or "ts" not in event:
        continue
    by_name.setdefault(event.get("name"), []).append((float(event["ts"]), float(event.get("dur", 0))))

# Finding markers only: the critical path (cat ptadvise.critical_path) shares the process but not the evidence.
markers = [e for e in events if e.get("pid") == FINDINGS_PID and e.get("ph") == "X" and e.get("cat") == "ptadvise"]
report = json.load(open(report_path))
evidence_count = sum(len(f["evidence"]) for t in report["traces"] for f in t["findings"])
if len(markers) != evidence_count:
    fail("%d finding markers in %s for %d evidence items" % (len(markers), annotated_path, evidence_count))
EPS = 0.0015  # µs: the file writes ts with at most ns precision
for marker in markers:
    start, end = float(marker["ts"]), float(marker["ts"]) + float(marker["dur"])
    name = marker["args"]["event"]
    if not any(ts <= end + EPS and start <= ts + dur + EPS for ts, dur in by_name.get(name, [])):
        fail("marker %s at ts %s overlaps no %r event" % (marker["name"], marker["ts"], name))

checked = 0
for trace in report["traces"]:
    for finding in trace["findings"]:
        for evidence in finding["evidence"]:
            candidates = by_name.get(evidence["event"], [])
            if not any(abs(ts - evidence["ts_us"]) <= EPS for ts, _ in candidates):
                fail("%s evidence ts_us %s is no %r event's ts" % (finding["rule_id"], evidence["ts_us"], evidence["event"]))
            checked += 1
print("%d markers, %d evidence items line up" % (len(markers), checked))
