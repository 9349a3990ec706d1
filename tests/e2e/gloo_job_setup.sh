# Sourced by the end-to-end tests of recorded gloo jobs: torch_run_setup.sh (ptadvise=$1, python=$2, a work
# directory, fail MESSAGE), here=$3 (this directory by default), and skip (77) without torch.distributed's gloo.
source "$(dirname "${BASH_SOURCE[0]}")/torch_run_setup.sh"
here=${3:-$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)}
if ! "$python" -c "import torch.distributed as d; assert d.is_available() and d.is_gloo_available()" 2>/dev/null; then
  echo "skipped: $python has no torch.distributed with gloo (install python3-torch)"
  exit 77
fi

# Runs the test's `pair N` (record a job and its twin, check the prediction against the twin) until one
# passes, up to 3 pairs. The twin is another run of the job: on a busy machine its step can be slower than
# the job's own would be after the fix; a prediction that is wrong misses every pair, while a twin slowed by
# other load does not repeat.
until_a_pair_lands() {
  local attempt
  for attempt in 1 2 3; do
    pair "$attempt" && return 0
    echo "pair $attempt missed its twin; recording another pair"
  done
  fail "$1 in 3 recorded pairs"
}
