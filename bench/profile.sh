#!/usr/bin/env bash
# Where `ptadvise summary` spends its time on a generated trace: a flat profile by function.
# Uses perf when the kernel allows it, else valgrind's callgrind (slow: use the 100M file).
#
#   bash bench/profile.sh [TRACE.json] [ptadvise arguments...]   (default: summary on the 100M file)
# Environment: BENCH_BUILD_DIR (default build-bench, as bench/run.sh builds it), PROFILE_TOP=25.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build_dir=${BENCH_BUILD_DIR:-$root/build-bench}
binary="$build_dir/cli/ptadvise"
trace=${1:-$(ls "$root"/bench/data/*-100M.json 2>/dev/null | head -1)}
shift || true
command=("$@")
[[ ${#command[@]} -eq 0 ]] && command=(summary)
top=${PROFILE_TOP:-25}
if [[ ! -x "$binary" || -z "$trace" || ! -f "$trace" ]]; then
  echo "profile: needs $binary and a trace (run: BENCH_SIZES=100M BENCH_REPS=1 bash bench/run.sh)" >&2
  exit 2
fi
out="$root/bench/out"
mkdir -p "$out"
if perf record -q -o "$out/perf.data" -F 499 --call-graph dwarf,16384 -- "$binary" "${command[@]}" "$trace" >/dev/null 2>"$out/perf.log"; then
  echo "== perf: self time by function (${command[*]} $(basename "$trace"))"
  perf report -i "$out/perf.data" --no-children --sort symbol --stdio 2>/dev/null |
    grep -E '^ +[0-9.]+%' | head -"$top" || true
  echo "== perf: inclusive time by function (self + callees)"
  perf report -i "$out/perf.data" --children --sort symbol --stdio -g none 2>/dev/null |
    grep -E '^ +[0-9.]+%' | head -"$top" || true
else
  echo "== perf unavailable ($(tail -1 "$out/perf.log")); using callgrind"
  valgrind --tool=callgrind --callgrind-out-file="$out/callgrind.out" "$binary" "${command[@]}" "$trace" >/dev/null
  callgrind_annotate --inclusive=no "$out/callgrind.out" 2>/dev/null | head -$((top + 20))
fi
