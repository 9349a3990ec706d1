#!/usr/bin/env bash
# A real 4-process torch.distributed (gloo) training, each rank recorded through `ptadvise run --capture torch`:
# with rank 2 slowed (it sleeps 80 ms more than the others before every step's forward) `check` must name
# rank 2 the straggler; the same job without the slowdown must have no straggler finding.
set -u
ptadvise=$1
python=${2:-/usr/bin/python3}
here=${3:-$(cd "$(dirname "$0")" && pwd)}
if ! "$python" -c "import torch, torch.distributed as d; assert d.is_available() and d.is_gloo_available()" 2>/dev/null; then
  echo "skipped: $python has no torch.distributed with gloo (install python3-torch)"
  exit 77
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

bash "$here/record_gloo_job.sh" "$ptadvise" "$python" "$work/slow" 4 --slow-rank 2 --slow-ms 80 ||
  fail "recording the slowed job failed"
bash "$here/record_gloo_job.sh" "$ptadvise" "$python" "$work/even" 4 || fail "recording the even job failed"
for job in slow even; do
  count=$(ls "$work/$job"/*.rank-*.pt.trace.json 2>/dev/null | wc -l)
  [[ $count -eq 4 ]] || fail "expected 4 rank traces in $job, found $count"
done

"$ptadvise" check --exit-zero --format json "$work/slow" >"$work/slow.json" 2>"$work/slow.err" ||
  fail "check failed: $(cat "$work/slow.err")"
"$ptadvise" check --exit-zero "$work/slow" | head -30
"$python" - "$work/slow.json" <<'PY' || fail "the slowed job's straggler finding is missing or names another rank"
import json, sys
report = json.load(open(sys.argv[1]))
job = [t for t in report["traces"] if t.get("job")]
assert len(job) == 1, "no job entry"
assert job[0]["job"]["ranks"] == 4
stragglers = [f for f in job[0]["findings"] if f["rule_id"] == "PTA202"]
assert len(stragglers) == 1, [f["message"] for f in job[0]["findings"]]
assert stragglers[0]["ranks"] == [2], stragglers[0]
assert stragglers[0]["message"].startswith("Rank 2 is the straggler"), stragglers[0]["message"]
# The ranks replayed joined at their gloo collectives give back the measured step (docs/WHATIF.md, "Jobs").
joined = job[0]["job"]["whatif"]
assert joined["available"], joined
assert joined["note"] == "", joined["note"]
assert abs(joined["replayed_step_ms"] / joined["measured_step_ms"] - 1) <= 0.03, joined
PY

"$ptadvise" check --exit-zero --format json "$work/even" >"$work/even.json" 2>"$work/even.err" ||
  fail "check failed: $(cat "$work/even.err")"
"$python" - "$work/even.json" <<'PY' || fail "the even job has a straggler finding"
import json, sys
report = json.load(open(sys.argv[1]))
job = [t for t in report["traces"] if t.get("job")]
assert len(job) == 1, "no job entry"
stragglers = [f["message"] for f in job[0]["findings"] if f["rule_id"] == "PTA202"]
assert not stragglers, stragglers
PY
echo "ok: rank 2 named the straggler; none in the even job"
