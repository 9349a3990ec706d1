# Sourced by the end-to-end tests of `ptadvise run --capture torch`: ptadvise=$1, python=$2 (Debian's
# python3 by default), skip (77) without PyTorch, a work directory removed at exit, fail MESSAGE (prints
# the captured stderr files, exits 1).
ptadvise=$1
python=${2:-/usr/bin/python3}
if ! "$python" -c "import torch" 2>/dev/null; then
  echo "skipped: $python cannot import torch (install python3-torch)"
  exit 77
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; cat "$work"/stderr* 2>/dev/null; exit 1; }
