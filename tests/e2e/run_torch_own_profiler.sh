#!/usr/bin/env bash
# `ptadvise run --capture torch` on programs that run torch.profiler themselves: PyTorch allows one
# profiler per thread, so ptadvise's recording stands aside when the program starts its own, and the run
# checks the first trace the program exports. Before, the program died ("Profiler is already enabled on
# this thread") and nothing was checked.
set -u
here=${3:-$(cd "$(dirname "$0")" && pwd)}
source "$(dirname "$0")/torch_run_setup.sh"
shopt -s nullglob

for mode in schedule legacy repeat; do
  "$ptadvise" run --out "$work/$mode" --capture torch --skip-steps 2 --steps 5 -- \
    "$python" "$here/own_profiler.py" "$mode" "$work/own-$mode" >"$work/stdout" 2>"$work/stderr"
  code=$?
  cat "$work/stdout" "$work/stderr"
  [[ $code -eq 0 || $code -eq 1 ]] || fail "$mode: exit code $code, expected the check's 0 or 1"
  grep -q "trained, profiled by the program itself" "$work/stdout" || fail "$mode: the program did not run to its end"
  grep -q "ptadvise's recording stands aside" "$work/stderr" || fail "$mode: no note that the recording stood aside"
  traces=("$work/$mode"/*.pt.trace.json)
  [[ ${#traces[@]} -eq 1 ]] || fail "$mode: expected one trace in $work/$mode, found ${#traces[@]}"
  grep -q '"own_region"' "${traces[0]}" || fail "$mode: the checked trace is not the program's"
  grep -q "^ptadvise: ${traces[0]}" "$work/stdout" || fail "$mode: the program's trace was not checked"
done
# Each spawned process profiles itself from its first step: none is recorded by ptadvise, each one's own
# trace is checked.
"$ptadvise" run --out "$work/spawn" --capture torch --exit-zero -- "$python" "$here/own_profiler.py" spawn \
  "$work/own-spawn" >"$work/stdout" 2>"$work/stderr" || fail "spawn: the run failed"
cat "$work/stderr"
traces=("$work/spawn"/*.pt.trace.json)
[[ ${#traces[@]} -eq 2 ]] || fail "spawn: expected two traces in $work/spawn, found ${#traces[@]}"
for trace in "${traces[@]}"; do grep -q '"own_region"' "$trace" || fail "spawn: $trace is not the program's"; done
grep -q "could not be recorded" "$work/stderr" && fail "spawn: a process profiling itself was taken for a failure"
# The program's own files are where it wrote them.
[[ -f "$work/own-schedule.json" && -f "$work/own-legacy.json" ]] || fail "the program's own traces are missing"
[[ -f "$work/own-repeat_1.json.gz" && -f "$work/own-repeat_2.json.gz" ]] || fail "the program's gzipped traces are missing"
# legacy: ptadvise was recording when the program started its profiler; that cut window is not written.
grep -q '"ProfilerStep#' "$work/legacy/"*.pt.trace.json && fail "legacy: ptadvise's own cut window was checked"
# repeat: two exports, the first checked, and said so.
"$ptadvise" run --out "$work/repeat2" --capture torch -- "$python" "$here/own_profiler.py" repeat "$work/again" \
  >/dev/null 2>"$work/stderr"
grep -q "the program exported 2 traces; the first is checked" "$work/stderr" || fail "repeat: the second export was not named"
echo "ok"
