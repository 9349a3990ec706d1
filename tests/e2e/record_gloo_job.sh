#!/usr/bin/env bash
# Records a WORLD-rank gloo training job (tests/e2e/gloo_job.py), each rank through
# `ptadvise run --capture torch`, started together as torchrun would start them (RANK, WORLD_SIZE,
# MASTER_ADDR, MASTER_PORT). Traces land in OUT as <host>_<pid>.rank-R.pt.trace.json.
# Usage: record_gloo_job.sh PTADVISE PYTHON OUT WORLD [gloo_job.py options...]
set -u
ptadvise=$1 python=$2 out=$3 world=$4
shift 4
here=$(cd "$(dirname "$0")" && pwd)
port=$("$python" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
mkdir -p "$out"
pids=()
for ((rank = 0; rank < world; rank++)); do
  RANK=$rank WORLD_SIZE=$world LOCAL_RANK=$rank MASTER_ADDR=127.0.0.1 MASTER_PORT=$port \
    "$ptadvise" run --out "$out" --capture torch --skip-steps 2 --steps 8 -- \
    "$python" "$here/gloo_job.py" --steps 11 "$@" >"$out/.rank$rank.log" 2>&1 &
  pids+=($!)
done
status=0
for pid in "${pids[@]}"; do
  wait "$pid"
  code=$?
  # run exits with check's code: 0 clean, 1 findings; anything else is a failure of the job or the capture.
  [[ $code -le 1 ]] || status=$code
done
if [[ $status -ne 0 ]]; then
  cat "$out"/.rank*.log
  exit "$status"
fi
rm -f "$out"/.rank*.log
