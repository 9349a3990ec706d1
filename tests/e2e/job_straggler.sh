#!/usr/bin/env bash
# A real 4-process torch.distributed (gloo) training, each rank recorded through `ptadvise run --capture torch`:
# with rank 2 slowed (it sleeps 80 ms more than the others before every step's forward) `check` must name
# rank 2 the straggler; the same job without the slowdown must have no straggler finding. Then a 2-rank job
# (one process per core) with rank 1 sleeping 40 ms more, and its twin without: the straggler finding's
# predicted step (the joined replay with rank 1 keeping pace) must land within 10% of the twin's measured step.
set -u
source "$(cd "$(dirname "$0")" && pwd)/gloo_job_setup.sh"

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

# The prediction against a recorded twin, up to 3 pairs (until_a_pair_lands, gloo_job_setup.sh).
verdict=$(cat <<'PY'
import json, sys
def job(path):
    entries = [t for t in json.load(open(path))["traces"] if t.get("job")]
    assert len(entries) == 1, "no job entry in " + path
    return entries[0]
slow, even = job(sys.argv[1]), job(sys.argv[2])
stragglers = [f for f in slow["findings"] if f["rule_id"] == "PTA202"]
assert len(stragglers) == 1 and stragglers[0]["ranks"] == [1], [f["message"] for f in slow["findings"]]
finding = stragglers[0]
assert finding["saving_basis"] == "ledger+replay", finding
predicted, twin = finding["predicted_step_ms"], even["step_ms"]
print("2-rank job: measured %.3f ms, straggler keeping pace predicted %.3f ms, twin measured %.3f ms (%+.1f%%)"
      % (slow["step_ms"], predicted, twin, 100 * (predicted / twin - 1)))
assert abs(predicted / twin - 1) <= 0.10, (predicted, twin)
PY
)
pair() {
  local attempt=$1
  bash "$here/record_gloo_job.sh" "$ptadvise" "$python" "$work/pair-slow$attempt" 2 --slow-rank 1 --slow-ms 40 ||
    fail "recording the slowed 2-rank job failed"
  bash "$here/record_gloo_job.sh" "$ptadvise" "$python" "$work/pair-even$attempt" 2 ||
    fail "recording the even 2-rank job failed"
  for job in pair-slow pair-even; do
    "$ptadvise" check --exit-zero --format json "$work/$job$attempt" >"$work/$job$attempt.json" 2>"$work/$job$attempt.err" ||
      fail "check failed: $(cat "$work/$job$attempt.err")"
  done
  "$python" - "$work/pair-slow$attempt.json" "$work/pair-even$attempt.json" <<<"$verdict"
}
until_a_pair_lands "the straggler's predicted step misses its twin"
echo "ok: rank 2 named the straggler; none in the even job; the 2-rank straggler's prediction lands on its twin"
