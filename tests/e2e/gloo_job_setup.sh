# Sourced by the end-to-end tests of recorded gloo jobs: torch_run_setup.sh (ptadvise=$1, python=$2, a work
# directory, fail MESSAGE), here=$3 (this directory by default), and skip (77) without torch.distributed's gloo.
source "$(dirname "${BASH_SOURCE[0]}")/torch_run_setup.sh"
here=${3:-$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)}
if ! "$python" -c "import torch.distributed as d; assert d.is_available() and d.is_gloo_available()" 2>/dev/null; then
  echo "skipped: $python has no torch.distributed with gloo (install python3-torch)"
  exit 77
fi
