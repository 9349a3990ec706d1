#!/usr/bin/env bash
# The injected library when CUPTI cannot start (here: no driver): one line on stderr, a .status note for
# `ptadvise run`, no trace, and the program carries on. Uses Python's ctypes as the host program, calling
# InitializeInjection as the CUDA driver would.
set -u
library=$1
python=${2:-/usr/bin/python3}
if ldconfig -p 2>/dev/null | grep -q 'libcuda\.so\.1'; then
  echo "skipped: this machine has an NVIDIA driver"
  exit 77
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
PTADVISE_CAPTURE_DIR="$work" "$python" -c "
import ctypes, sys
lib = ctypes.CDLL(sys.argv[1])
assert lib.InitializeInjection() == 1
assert lib.InitializeInjection() == 1  # a second call is ignored
assert lib.ptadvise_capture_set_active(1) == -1  # nothing to switch on
print('program continued')
" "$library" >"$work/stdout" 2>"$work/stderr" || fail "the host program failed: $(cat "$work/stderr")"
cat "$work/stdout" "$work/stderr"
grep -q "program continued" "$work/stdout" || fail "the program did not continue"
[[ $(wc -l <"$work/stderr") -eq 1 ]] || fail "expected one line on stderr"
grep -q "^ptadvise: CUPTI could not be initialised (.*); this process runs untraced$" "$work/stderr" ||
  fail "unexpected message"
shopt -s nullglob
notes=("$work"/*.pt.trace.json.status)
[[ ${#notes[@]} -eq 1 ]] || fail "expected one .status note"
grep -q "this process runs untraced" "${notes[0]}" || fail "the note does not say why"
traces=("$work"/*.json "$work"/*.tmp)
[[ ${#traces[@]} -eq 0 ]] || fail "a trace was written: ${traces[*]}"
echo "ok"
