#!/usr/bin/env bash
# `ptadvise run --capture torch` end to end with the system's CPU PyTorch: a small training script with a
# worker-less data loader and anomaly detection on must come out with PTA106 and PTA112; a loss that builds
# nn.NLLLoss(weight) in every forward with PTA111 at that line (Python stacks and shapes recorded wherever
# the installed PyTorch can); a failing program's exit code must come through.
set -u
ptadvise=$1
python=${2:-/usr/bin/python3}
here=${3:-$(cd "$(dirname "$0")" && pwd)}
if ! "$python" -c "import torch" 2>/dev/null; then
  echo "skipped: $python cannot import torch (install python3-torch)"
  exit 77
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

# The program's own failure: its exit code, and a line saying so.
"$ptadvise" run --out "$work/failing" --capture torch -- "$python" -c "import sys; sys.exit(7)" 2>"$work/stderr"
code=$?
[[ $code -eq 7 ]] || fail "a program exiting with 7 gave $code"
grep -q "the command exited with code 7" "$work/stderr" || fail "the failure was not reported"
"$ptadvise" run --out "$work/killed" --capture torch -- "$python" -c \
  "import os, signal; os.kill(os.getpid(), signal.SIGTERM)" 2>"$work/stderr"
code=$?
[[ $code -eq 143 ]] || fail "a program killed by SIGTERM gave $code, expected 143"
grep -q "was killed by signal 15" "$work/stderr" || fail "the signal was not reported"

"$ptadvise" run --out "$work/traces" --capture torch --skip-steps 2 --steps 3 -- \
  "$python" "$here/train_cpu.py" 8 >"$work/stdout" 2>"$work/stderr"
code=$?
cat "$work/stdout" "$work/stderr"
shopt -s nullglob
traces=("$work"/traces/*.pt.trace.json)
[[ ${#traces[@]} -eq 1 ]] || fail "expected one trace in $work/traces, found ${#traces[@]}"
# --steps 3: three step markers (their numbers depend on the PyTorch version's profiler).
steps=$(grep -o '"ProfilerStep#[0-9]*"' "${traces[0]}" | sort -u | wc -l)
[[ $steps -eq 3 ]] || fail "expected 3 recorded steps, found $steps"
grep -q "trained 8 steps" "$work/stdout" || fail "the training script did not run to its end"
# The findings come from the rules engine; until a build has both rules, say so instead of passing.
for rule in PTA106 PTA112; do
  if ! "$ptadvise" explain "$rule" >/dev/null 2>&1; then
    echo "skipped: this build has no rule $rule yet (the capture itself passed)"
    exit 77
  fi
done
[[ $code -eq 0 || $code -eq 1 ]] || fail "exit code $code, expected the check's 0 or 1"
grep -q "PTA106" "$work/stdout" || fail "no PTA106 (data-loader-stall) finding"
grep -q "PTA112" "$work/stdout" || fail "no PTA112 (anomaly-detection-enabled) finding"

# The loss module built in every step: its constructor, at the user's line, from a recording with stacks.
COLUMNS=1000 "$ptadvise" run --out "$work/loss" --capture torch --skip-steps 2 --steps 3 -- \
  "$python" "$here/loss_built_in_step.py" >"$work/stdout" 2>"$work/stderr"
code=$?
cat "$work/stdout" "$work/stderr"
[[ $code -eq 0 || $code -eq 1 ]] || fail "exit code $code, expected the check's 0 or 1"
traces=("$work"/loss/*.pt.trace.json)
[[ ${#traces[@]} -eq 1 ]] || fail "expected one trace in $work/loss, found ${#traces[@]}"
grep -q '"Call stack"' "${traces[0]}" || fail "the trace has no Python stacks"
grep -q '"Input Dims"' "${traces[0]}" || fail "the trace has no input shapes"
line=$(grep -n "criterion = nn.NLLLoss" "$here/loss_built_in_step.py" | cut -d: -f1)
# PyTorch 1.13 on Python 3.11 records the line where each frame's function starts (`def forward`, the line
# above), and the run says so; elsewhere the finding is at the line itself.
if grep -q "the findings' source lines point there" "$work/stderr"; then
  line=$((line - 1))
fi
if "$ptadvise" explain PTA111 >/dev/null 2>&1; then
  grep -A2 "PTA111\] object-built-in-step: saves " "$work/stdout" | grep -q -- "--> [^ ]*loss_built_in_step.py:$line " ||
    fail "no PTA111 (object-built-in-step) finding at loss_built_in_step.py:$line"
fi

echo "ok"
