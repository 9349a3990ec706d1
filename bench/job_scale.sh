#!/usr/bin/env bash
# Time and peak memory of `ptadvise check` on a distributed job of 8 and 64 ranks, against one rank alone.
# Each rank is the shared NCCL trace (Kineto, NCCL 2.17, record_param_comms) scaled to SIZE by gen_trace.py,
# with its distributedInfo rewritten to rank R of N. Usage: bench/job_scale.sh PTADVISE [SIZE=10M] [WORK=/tmp/...]
set -euo pipefail
ptadvise=$1 size=${2:-10M}
work=${3:-$(mktemp -d /tmp/ptadvise-job-bench.XXXXXX)}
here=$(cd "$(dirname "$0")" && pwd)
source_trace=$here/../../shared/traces/HTA__tests__data__nccl_parser_config__nccl_data.json.gz
[[ -f $source_trace ]] || { echo "skipped: $source_trace is absent"; exit 0; }
python3 "$here/gen_trace.py" "$source_trace" "$work/base.json" --size "$size" >/dev/null
make_job() {  # make_job N DIR
  mkdir -p "$2"
  for ((r = 0; r < $1; r++)); do
    python3 - "$work/base.json" "$2/rank-$r.pt.trace.json" "$r" "$1" <<'PY'
import re, sys
text = open(sys.argv[1]).read()
info = '"distributedInfo": {"backend": "nccl", "rank": %s, "world_size": %s}' % (sys.argv[3], sys.argv[4])
text, n = re.subn(r'"distributedInfo":\s*\{.*?"nccl_version":\s*"[^"]*"\}', info, text, count=1, flags=re.S)
assert n == 1, "no distributedInfo"
open(sys.argv[2], "w").write(text)
PY
  done
}
measure() {  # measure LABEL ARGS...: elapsed seconds and peak RSS (MB) of one check
  local label=$1
  shift
  /usr/bin/time -f "%e %M" -o "$work/time" "$ptadvise" check --exit-zero --format json "$@" >/dev/null 2>"$work/err" ||
    { cat "$work/err"; exit 1; }
  read -r seconds kb <"$work/time"
  printf "| %s | %s | %.0f |\n" "$label" "$seconds" "$((kb / 1024))"
}
make_job 8 "$work/job8"
make_job 64 "$work/job64"
echo "rank trace: $(du -h "$work/job8/rank-0.pt.trace.json" | cut -f1), $(nproc) cores"
echo
echo "| run | seconds | peak RSS (MB) |"
echo "|---|---:|---:|"
measure "1 rank" "$work/job8/rank-0.pt.trace.json"
measure "8 ranks, --threads 1" --threads 1 "$work/job8"
measure "8 ranks, one thread per core" "$work/job8"
measure "64 ranks, --threads 1" --threads 1 "$work/job64"
measure "64 ranks, one thread per core" "$work/job64"
mkdir -p "$work/digests"
start=$(date +%s.%N)
for ((r = 0; r < 64; r++)); do
  "$ptadvise" check --exit-zero "$work/job64/rank-$r.pt.trace.json" --digest-out "$work/digests/rank-$r.json" >/dev/null
done
end=$(date +%s.%N)
printf "| 64 ranks one by one with --digest-out (sum) | %.2f | — |\n" "$(echo "$end - $start" | bc)"
/usr/bin/time -f "%e %M" -o "$work/time" "$ptadvise" merge --exit-zero "$work"/digests/*.json >/dev/null
read -r seconds kb <"$work/time"
printf "| merge of the 64 digests | %s | %.0f |\n" "$seconds" "$((kb / 1024))"
echo "digest size: $(du -h "$work/digests/rank-0.json" | cut -f1)"
rm -rf "$work"
