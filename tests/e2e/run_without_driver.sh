#!/usr/bin/env bash
# `ptadvise run` (CUPTI) on a machine without an NVIDIA driver: exit 3 with one line naming the problem
# and the alternatives, and the command is not run.
set -u
ptadvise=$1
if ldconfig -p 2>/dev/null | grep -q 'libcuda\.so\.1'; then
  echo "skipped: this machine has an NVIDIA driver"
  exit 77
fi
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
"$ptadvise" run --out "$out/traces" -- /bin/sh -c "touch '$out/ran'" 2>"$out/stderr"
code=$?
cat "$out/stderr"
fail() { echo "FAIL: $*"; exit 1; }
[[ $code -eq 3 ]] || fail "exit code $code, expected 3"
[[ $(wc -l <"$out/stderr") -eq 1 ]] || fail "expected one line on stderr"
grep -q "no NVIDIA driver" "$out/stderr" || fail "message does not say the driver is missing"
grep -q -- "--capture torch" "$out/stderr" || fail "message does not suggest --capture torch"
grep -q "ptadvise check" "$out/stderr" || fail "message does not suggest ptadvise check"
[[ ! -e $out/ran ]] || fail "the command ran although nothing could be recorded"
echo "ok"
