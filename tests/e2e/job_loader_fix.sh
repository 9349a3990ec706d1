#!/usr/bin/env bash
# A real 2-process torch.distributed (gloo) job, each rank recorded through `ptadvise run --capture torch`,
# reading its batches from a DataLoader whose samples take 2 ms each to read. Rank 1 reads on its training
# thread (num_workers=0), rank 0 in 2 workers; the twin runs both ranks with 2 workers. Rank 1's trace must
# have the data-loader stall (PTA106) and rank 0's must not; the job's step after every rank's fixes,
# replayed with the ranks joined at their all-reduces, must land within 10% of the twin's measured step,
# where each rank replayed alone cannot see it (rank 0 keeps waiting for rank 1): docs/WHATIF.md, "Jobs".
set -u
source "$(cd "$(dirname "$0")" && pwd)/gloo_job_setup.sh"

# The prediction against a recorded twin, up to 3 pairs (until_a_pair_lands, gloo_job_setup.sh).
verdict=$(cat <<'PY'
import json, sys
def entries(path):
    return json.load(open(path))["traces"]
slow, even = entries(sys.argv[1]), entries(sys.argv[2])
job = [t for t in slow if t.get("job")]
twin = [t for t in even if t.get("job")]
assert len(job) == 1 and len(twin) == 1, "no job entry"
job, twin = job[0], twin[0]
stalls = {t.get("rank"): [f for f in t["findings"] if f["rule_id"] == "PTA106"] for t in slow if not t.get("job")}
assert len(stalls.get(1, [])) == 1, stalls
assert not stalls.get(0), stalls
joined = job["job"]["whatif"]
assert joined["available"] and joined["note"] == "", joined
predicted, alone, measured = joined["predicted_step_ms_all_fixes"], joined["ranks_alone_step_ms_all_fixes"], twin["step_ms"]
print("2-rank job, rank 1 loading on its training thread: measured %.3f ms; after every rank's fixes, joined %.3f ms,"
      " each rank alone %.3f ms; twin measured %.3f ms (joined %+.1f%%)"
      % (job["step_ms"], predicted, alone, measured, 100 * (predicted / measured - 1)))
assert abs(predicted / measured - 1) <= 0.10, (predicted, measured)
# Alone, rank 0 keeps waiting for rank 1 in every all-reduce: only the joined replay sees the fix pay.
assert alone > 1.5 * measured, (alone, measured)
PY
)
pair() {
  local attempt=$1
  bash "$here/record_gloo_job.sh" "$ptadvise" "$python" "$work/slow$attempt" 2 --sample-ms 2 --slow-loader-rank 1 ||
    fail "recording the job with rank 1's loader on its training thread failed"
  bash "$here/record_gloo_job.sh" "$ptadvise" "$python" "$work/even$attempt" 2 --sample-ms 2 ||
    fail "recording the twin failed"
  for job in slow even; do
    "$ptadvise" check --exit-zero --format json "$work/$job$attempt" >"$work/$job$attempt.json" 2>"$work/$job$attempt.err" ||
      fail "check failed: $(cat "$work/$job$attempt.err")"
  done
  [[ $attempt -eq 1 ]] && "$ptadvise" check --exit-zero "$work/slow$attempt" | head -16
  "$python" - "$work/slow$attempt.json" "$work/even$attempt.json" <<<"$verdict"
}

until_a_pair_lands "the job's predicted step after the loader fix misses its twin"
echo "ok: rank 1's loader stall found; the job's step after the fix lands on its twin"
