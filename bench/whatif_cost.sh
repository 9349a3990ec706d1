#!/usr/bin/env bash
# What the what-if costs `check` (issue 10: at most 20% more): runs `ptadvise check TRACE` and
# `ptadvise check --no-whatif TRACE` REPS times each, interleaved, and prints the medians of wall time and
# of CPU time (user + sys, less sensitive to other load on a shared machine) and their ratios.
#   bash bench/whatif_cost.sh PTADVISE TRACE [REPS]
# The benchmark trace (270 MB): python3 bench/gen_trace.py \
#   ../shared/traces/kineto__tb_plugin__samples__resnet50_num_workers_0__worker0.pt.trace.json.gz OUT.json --size 270M
# Needs GNU time (/usr/bin/time, Debian package `time`).
set -euo pipefail
ptadvise=$1
trace=$2
reps=${3:-5}
out=$(mktemp)
trap 'rm -f "$out"' EXIT
run() {  # LABEL ARGS...: appends "LABEL wall cpu" to $out
  local label=$1
  shift
  /usr/bin/time -f "$label %e %U %S" -a -o "$out" "$ptadvise" check --format json --exit-zero "$@" "$trace" >/dev/null
}
for ((i = 0; i < reps; ++i)); do
  run with
  run without --no-whatif
done
python3 - "$out" <<'PY'
import statistics, sys
rows = {"with": [], "without": []}
for line in open(sys.argv[1]):
    label, wall, user, system = line.split()
    rows[label].append((float(wall), float(user) + float(system)))
med = {k: (statistics.median(w for w, _ in v), statistics.median(c for _, c in v)) for k, v in rows.items()}
for k in ("with", "without"):
    print(f"check {'with what-if' if k == 'with' else '--no-whatif '}: wall {med[k][0]:.3f} s, cpu {med[k][1]:.3f} s "
          f"(median of {len(rows[k])})")
print(f"ratio with / without: wall {med['with'][0] / med['without'][0]:.3f}, cpu {med['with'][1] / med['without'][1]:.3f}")
PY
