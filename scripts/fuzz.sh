#!/usr/bin/env bash
# Builds the libFuzzer harnesses with Debian's clang and runs each for SECONDS (default 60) from its seed
# corpus, one per core side by side (FUZZ_JOBS=N for N at once). FUZZ_RUNS=N runs each harness for N
# executions instead (the long run: docs/FUZZING.md).
# Exit status: 0 clean, 86 when a harness found a crash, a sanitizer report, a leak or a timeout (the
# sanitizers' own exit code in every build of this project, distinct from ptadvise's 1 = findings).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
seconds=${1:-60}
build_dir=${FUZZ_BUILD_DIR:-$root/build-fuzz}
launcher=()
if command -v ccache >/dev/null 2>&1; then
  launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache)
  export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$root} CCACHE_NOHASHDIR=${CCACHE_NOHASHDIR:-1}
fi
CC=clang CXX=clang++ cmake -S "$root" -B "$build_dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DPTADVISE_FUZZ=ON -DPTADVISE_WERROR=ON \
  -DPTADVISE_TESTS=OFF -DPTADVISE_CAPTURE=OFF "${launcher[@]}" >/dev/null
cmake --build "$build_dir" -j "$(nproc)" --target ptadvise_fuzzers
limit=(-max_total_time="$seconds")
budget="${seconds}s"
if [[ -n "${FUZZ_RUNS:-}" ]]; then
  limit=(-runs="$FUZZ_RUNS")
  budget="$FUZZ_RUNS runs"
fi
artifacts=${FUZZ_ARTIFACTS:-$root/fuzz-artifacts}
mkdir -p "$artifacts"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# One harness from its seeds in a fresh corpus: its report in $work/NAME.out, its exit code in $work/NAME.code.
run_harness() {
  local harness=$1 name corpus seeds code
  name=$(basename "$harness")
  corpus=$work/$name.corpus
  mkdir -p "$corpus"
  rm -f "$artifacts/$name"-*
  seeds=$root/tests/fuzz/seeds/${name#fuzz_}
  set +e
  "$harness" "${limit[@]}" -max_len=65536 -timeout=10 -rss_limit_mb=4096 -error_exitcode=86 \
    -timeout_exitcode=86 -print_final_stats=1 -artifact_prefix="$artifacts/$name-" "$corpus" ${seeds:+$( [[ -d $seeds ]] && echo "$seeds")} \
    >"$work/$name.log" 2>&1
  code=$?
  set -e
  {
    echo "-- $name ($budget)"
    grep -E "^(stat::number_of_executed_units|stat::peak_rss_mb|==[0-9]+==ERROR|SUMMARY)" "$work/$name.log" || true
    tail -n 2 "$work/$name.log"
    if [[ $code -ne 0 ]]; then
      # The CI machine keeps nothing: print the report (sanitizer text, stack) and the input itself.
      echo "!! $name failed (exit $code); report:"
      grep -E -A60 "^(==[0-9]+==|.*runtime error:|.*deadly signal|.*ALARM:|.*out-of-memory)" "$work/$name.log" | head -n 120 || true
      for artifact in "$artifacts/$name"-*; do
        [[ -f $artifact ]] || continue
        echo "!! reproducer $artifact ($(stat -c %s "$artifact") bytes), base64:"
        head -c 65536 "$artifact" | base64 -w 120
      done
    fi
  } >"$work/$name.out"
  echo "$code" >"$work/$name.code"
  rm -rf "$corpus" "$work/$name.log"
}

# The harnesses run side by side, one per core (FUZZ_JOBS to choose): each gets a core for its time, and
# .ci/run waits for three rounds of SECONDS instead of five.
jobs=${FUZZ_JOBS:-$(nproc)}
harnesses=()
for harness in "$build_dir"/tests/fuzz/fuzz_*; do
  [[ -x "$harness" ]] && harnesses+=("$harness")
done
running=0
for harness in "${harnesses[@]}"; do
  if ((running >= jobs)); then
    wait -n || true
    running=$((running - 1))
  fi
  run_harness "$harness" &
  running=$((running + 1))
done
wait || true
status=0
for harness in "${harnesses[@]}"; do
  name=$(basename "$harness")
  cat "$work/$name.out"
  [[ "$(cat "$work/$name.code" 2>/dev/null || echo 1)" == 0 ]] || status=86
done
exit $status
