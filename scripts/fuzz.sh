#!/usr/bin/env bash
# Builds the libFuzzer harnesses with clang and runs each for SECONDS (default 60) from its seed corpus.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
seconds=${1:-60}
build_dir=$root/build-fuzz
CC=clang CXX=clang++ cmake -S "$root" -B "$build_dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DPTADVISE_FUZZ=ON -DPTADVISE_WERROR=ON \
  -DPTADVISE_TESTS=OFF -DPTADVISE_CAPTURE=OFF >/dev/null
cmake --build "$build_dir" -j "$(nproc)" --target ptadvise_fuzzers
status=0
for harness in "$build_dir"/tests/fuzz/fuzz_*; do
  [[ -x "$harness" ]] || continue
  name=$(basename "$harness")
  corpus=$(mktemp -d)
  seeds=$root/tests/fuzz/seeds/${name#fuzz_}
  echo "-- $name for ${seconds}s"
  "$harness" -max_total_time="$seconds" -max_len=65536 -timeout=10 -rss_limit_mb=4096 "$corpus" \
    ${seeds:+$( [[ -d $seeds ]] && echo "$seeds")} 2>&1 | tail -n 3 || status=1
  rm -rf "$corpus"
done
exit $status
