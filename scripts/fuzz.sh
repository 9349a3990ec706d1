#!/usr/bin/env bash
# Builds the libFuzzer harnesses with Debian's clang and runs each for SECONDS (default 60) from its seed
# corpus. FUZZ_RUNS=N runs each harness for N executions instead (the long run: docs/FUZZING.md).
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
[[ -n "${FUZZ_RUNS:-}" ]] && limit=(-runs="$FUZZ_RUNS")
status=0
artifacts=${FUZZ_ARTIFACTS:-$root/fuzz-artifacts}
mkdir -p "$artifacts"
for harness in "$build_dir"/tests/fuzz/fuzz_*; do
  [[ -x "$harness" ]] || continue
  name=$(basename "$harness")
  corpus=$(mktemp -d)
  rm -f "$artifacts/$name"-*
  seeds=$root/tests/fuzz/seeds/${name#fuzz_}
  echo "-- $name (${FUZZ_RUNS:+$FUZZ_RUNS runs}${FUZZ_RUNS:-${seconds}s})"
  set +e
  "$harness" "${limit[@]}" -max_len=65536 -timeout=10 -rss_limit_mb=4096 -error_exitcode=86 \
    -timeout_exitcode=86 -print_final_stats=1 -artifact_prefix="$artifacts/$name-" "$corpus" ${seeds:+$( [[ -d $seeds ]] && echo "$seeds")} \
    >"$corpus.log" 2>&1
  code=$?
  set -e
  grep -E "^(stat::number_of_executed_units|stat::peak_rss_mb|==[0-9]+==ERROR|SUMMARY)" "$corpus.log" || true
  tail -n 2 "$corpus.log"
  if [[ $code -ne 0 ]]; then
    # The CI machine keeps nothing: print the report (sanitizer text, stack) and the input itself.
    echo "!! $name failed (exit $code); report:"
    grep -E -A60 "^(==[0-9]+==|.*runtime error:|.*deadly signal|.*ALARM:|.*out-of-memory)" "$corpus.log" | head -n 120 || true
    for artifact in "$artifacts/$name"-*; do
      [[ -f $artifact ]] || continue
      echo "!! reproducer $artifact ($(stat -c %s "$artifact") bytes), base64:"
      head -c 65536 "$artifact" | base64 -w 120
    done
    status=86
  fi
  rm -rf "$corpus" "$corpus.log"
done
exit $status
