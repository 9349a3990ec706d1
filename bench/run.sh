#!/usr/bin/env bash
# The benchmark in one command: builds ptadvise (Release) and the bench tools, scales a real trace to each size,
# times `ptadvise summary` against its peers and prints Markdown tables (also saved under bench/out/).
#
# Environment (all optional):
#   BENCH_SIZES="100M 1G"   sizes to generate and time        BENCH_REPS=3   repetitions (median reported)
#   BENCH_SOURCE=PATH       real trace to scale (default: the resnet50 sample from ../shared/traces)
#   BENCH_BUILD_DIR=DIR     build directory (default build-bench)   PYTHON=python3   interpreter for json.load
#   BENCH_CHECK=1           also time `ptadvise check` (one rank, and two ranks at once)
#   BENCH_ONLY=ptadvise,walk   run a subset of the peers
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bench="$root/bench"
build_dir=${BENCH_BUILD_DIR:-$root/build-bench}
source_trace=${BENCH_SOURCE:-$root/../shared/traces/kineto__tb_plugin__samples__resnet50_num_workers_0__worker0.pt.trace.json.gz}
sizes=${BENCH_SIZES:-100M 1G}
reps=${BENCH_REPS:-3}
python=${PYTHON:-python3}

if [[ ! -f "$source_trace" ]]; then
  echo "bench: source trace not found: $source_trace (set BENCH_SOURCE, or provide ../shared/traces)" >&2
  exit 2
fi

echo "== building ptadvise and simdjson_walk (Release) in $build_dir" >&2
# Warnings are not errors here: GCC 12 at -O3 reports false -Wrestrict positives that -O2 (the CI build) does not.
cmake -S "$root" -B "$build_dir" -DCMAKE_BUILD_TYPE=Release -DPTADVISE_BENCH=ON -DPTADVISE_TESTS=OFF -DPTADVISE_WERROR=OFF \
  -DPTADVISE_CAPTURE=OFF >/dev/null
cmake --build "$build_dir" -j "${BENCH_JOBS:-2}" --target ptadvise simdjson_walk >/dev/null

mkdir -p "$bench/data" "$bench/out"
stem=$(basename "$source_trace")
stem=${stem%.gz}
stem=${stem%.json}
stem=${stem%.pt.trace}
files=()
for size in $sizes; do
  out="$bench/data/$stem-$size.json"
  # Regenerate when the generator or the source is newer than the file.
  if [[ ! -s "$out" || "$bench/gen_trace.py" -nt "$out" || "$source_trace" -nt "$out" ]]; then
    echo "== generating $out" >&2
    "$python" "$bench/gen_trace.py" "$source_trace" "$out.tmp" --size "$size"
    mv "$out.tmp" "$out"
    rm -f "$out.gz"
  fi
  if [[ ! -s "$out.gz" ]]; then
    echo "== compressing $out.gz" >&2
    gzip -c "$out" >"$out.gz.tmp"
    mv "$out.gz.tmp" "$out.gz"
  fi
  files+=("$out")
done

echo "== measuring (${reps} repetitions each; load now: $(cut -d' ' -f1-3 /proc/loadavg))" >&2
stamp=$(date +%Y%m%d-%H%M%S)
extra=()
[[ "${BENCH_CHECK:-0}" == 1 ]] && extra+=(--check)
[[ -n "${BENCH_ONLY:-}" ]] && extra+=(--only "$BENCH_ONLY")
"$python" "$bench/measure.py" --ptadvise "$build_dir/cli/ptadvise" --walk "$build_dir/bench/simdjson_walk" \
  --python "$python" --build-dir "$build_dir" --reps "$reps" --json-out "$bench/out/results-$stamp.json" \
  "${extra[@]}" "${files[@]}" | tee "$bench/out/results-$stamp.md"
echo "== saved bench/out/results-$stamp.{md,json}" >&2
