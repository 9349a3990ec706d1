#!/usr/bin/env bash
# Overhead plan of `ptadvise run` (CUPTI capture), for a machine with an NVIDIA GPU:
#   bash bench/capture_overhead.sh [ROUNDS]      (default 5; set PTADVISE=path/to/ptadvise, PYTHON=python)
# Runs bench/capture_overhead.py alternately without and with the capture, ROUNDS times each, and reports
# the median step time of each and their ratio. The capture records every step (--skip-steps 0
# --steps 0) so the whole timed loop runs traced. Record the result in bench/RESULTS-capture.md.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
ptadvise=${PTADVISE:-$root/build/cli/ptadvise}
python=${PYTHON:-python3}
rounds=${1:-5}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
median_of() { "$python" -c 'import json,sys,statistics; print(statistics.median(json.loads(l)["median_step_ms"] for l in open(sys.argv[1])))' "$1"; }
for ((round = 1; round <= rounds; round++)); do
  "$python" "$root/bench/capture_overhead.py" | tail -n 1 >>"$work/plain.jsonl"
  "$ptadvise" run --out "$work/traces-$round" --skip-steps 0 --steps 0 -- \
    "$python" "$root/bench/capture_overhead.py" 2>"$work/run-$round.log" | grep '^{' | tail -n 1 >>"$work/traced.jsonl" || true
done
plain=$(median_of "$work/plain.jsonl")
traced=$(median_of "$work/traced.jsonl")
"$python" - "$plain" "$traced" <<'PY'
import sys
plain, traced = map(float, sys.argv[1:3])
print("median step: %.3f ms without capture, %.3f ms with capture, ratio %.3f" % (plain, traced, traced / plain))
PY
ls -l "$work"/traces-1/ 2>/dev/null || true
