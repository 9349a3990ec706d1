#!/usr/bin/env bash
# `ptadvise run --capture torch` on a program whose training runs in other Python processes: a
# torch.multiprocessing.spawn DDP job is recorded rank by rank (each process that makes optimizer steps
# records its own window, named by its process group's rank) and checked as a job. Before, only the
# spawning process was profiled: "ended after 0 optimizer steps", nothing checked.
set -u
here=${3:-$(cd "$(dirname "$0")" && pwd)}
source "$(dirname "$0")/torch_run_setup.sh"
if ! "$python" -c "import torch.distributed as d; assert d.is_available()" 2>/dev/null; then
  echo "skipped: this PyTorch has no torch.distributed"
  exit 77
fi
shopt -s nullglob
port=$("$python" -c "import socket; s = socket.socket(); s.bind(('127.0.0.1', 0)); print(s.getsockname()[1])")

"$ptadvise" run --out "$work/spawn" --capture torch --skip-steps 2 --steps 3 --format json --exit-zero -- \
  "$python" "$here/spawn_job.py" "$port" 60 >"$work/report.json" 2>"$work/stderr"
code=$?
cat "$work/stderr"
[[ $code -eq 0 ]] || fail "exit code $code"
grep -q "the program ended after 0 optimizer steps" "$work/stderr" && fail "the spawning process still says nothing was recorded"
# --format json: the program's own output went to stderr, the report alone to stdout.
grep -q "spawned job done" "$work/stderr" || fail "the program's output is not on stderr"
traces=("$work/spawn"/*.pt.trace.json)
[[ ${#traces[@]} -eq 2 ]] || fail "expected two traces (one per rank) in $work/spawn, found ${#traces[@]}"
for rank in 0 1; do
  trace=("$work/spawn"/*.rank-$rank.pt.trace.json)
  [[ ${#trace[@]} -eq 1 ]] || fail "no trace named for rank $rank"
  steps=$(grep -o '"ProfilerStep#[0-9]*"' "${trace[0]}" | sort -u | wc -l)
  [[ $steps -eq 3 ]] || fail "rank $rank: expected 3 recorded steps, found $steps"
done
"$python" - "$work/report.json" <<'PY' || fail "the job's report is not a 2-rank job with rank 1 the straggler"
import json, sys
report = json.load(open(sys.argv[1]))
job = report.get("job") or {}
ranks = job.get("ranks") or job.get("rank_count")
findings = [f for t in report.get("traces", []) for f in t.get("findings", [])] + job.get("findings", [])
stragglers = [f for f in findings if f.get("rule_name") == "straggler-rank"]
print("ranks:", ranks, "stragglers:", [f.get("message") for f in stragglers])
assert stragglers and "Rank 1" in stragglers[0]["message"], stragglers
PY

# A trainer forked while the parent records cannot record (PyTorch sees the parent's profiler enabled in
# the copy): said once, and the program runs to its end.
"$ptadvise" run --out "$work/fork" --capture torch --skip-steps 2 --steps 5 --exit-zero -- \
  "$python" "$here/fork_trainer.py" >"$work/stdout" 2>"$work/stderr"
code=$?
cat "$work/stdout" "$work/stderr"
[[ $code -eq 0 ]] || fail "fork: exit code $code"
grep -q "fork trainer exit 0" "$work/stdout" || fail "fork: the forked trainer did not run to its end"
traces=("$work/fork"/*.pt.trace.json)
[[ ${#traces[@]} -ge 1 ]] || fail "fork: the parent's trace is missing"
echo "ok"
