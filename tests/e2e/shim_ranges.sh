#!/usr/bin/env bash
# The Python shim's NVTX ranges, checked through its log mode with the system's PyTorch (CPU is enough:
# the names and their nesting are what a CUPTI trace would get).
set -u
python_dir=$1
python=${2:-/usr/bin/python3}
library=${3:-}
here=$(cd "$(dirname "$0")" && pwd)
if ! "$python" -c "import torch" 2>/dev/null; then
  echo "skipped: $python cannot import torch (install python3-torch)"
  exit 77
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir "$work/other"
echo "import sys; sys.shadowed_sitecustomize_ran = True" >"$work/other/sitecustomize.py"
cd "$here"
PYTHONPATH="$python_dir:$work/other" PTADVISE_CAPTURE_BACKEND=cupti PTADVISE_SHIM_LOG="$work/ranges.log" \
  PTADVISE_SKIP_STEPS=2 PTADVISE_STEPS=1 CUDA_INJECTION64_PATH="$library" \
  "$python" shim_probe.py || { echo "FAIL: the probe script failed"; exit 1; }
next='enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__'
capture_lines=""
cat >"$work/expected.log" <<EXPECTED
push ProfilerStep#0
push $next
pop $next
pop ProfilerStep#0
push ProfilerStep#1
push $next
pop $next
pop ProfilerStep#1
EXPECTED
[[ -n $library ]] && echo "capture on" >>"$work/expected.log"
cat >>"$work/expected.log" <<EXPECTED
push ProfilerStep#2
push $next
pop $next
pop ProfilerStep#2
EXPECTED
[[ -n $library ]] && echo "capture off" >>"$work/expected.log"
cat >>"$work/expected.log" <<EXPECTED
push ProfilerStep#3
push $next
pop $next
EXPECTED
if ! diff -u "$work/expected.log" "$work/ranges.log"; then
  echo "FAIL: the shim's ranges differ from the expected ones"
  exit 1
fi
# Two optimizers per batch make one step per batch, not two; a third optimizer alive that never steps
# does not hold the steps open.
PYTHONPATH="$python_dir" PTADVISE_CAPTURE_BACKEND=cupti PTADVISE_SHIM_LOG="$work/optimizers.log" \
  "$python" shim_probe_optimizers.py || { echo "FAIL: the two-optimizer probe failed"; exit 1; }
# Six steps end: the first opens ProfilerStep#1 (no loader opened #0), the sixth closes #5 and opens #6.
ended=$(grep -c '^pop ProfilerStep#' "$work/optimizers.log")
if [[ $ended != 5 ]] || ! grep -q '^push ProfilerStep#6$' "$work/optimizers.log"; then
  echo "FAIL: 7 batches of two optimizers (3 with both alone, 4 beside an idle one) did not end 6 steps:"
  grep ProfilerStep "$work/optimizers.log"
  exit 1
fi
echo "ok"
