#!/usr/bin/env bash
# The injected library exports what the CUDA driver and the Python shim call, and links the real CUPTI.
set -u
library=$1
fail() { echo "FAIL: $*"; exit 1; }
symbols=$(nm -D --defined-only "$library") || fail "nm failed on $library"
grep -qw InitializeInjection <<<"$symbols" || fail "InitializeInjection is not exported"
grep -qw ptadvise_capture_set_active <<<"$symbols" || fail "ptadvise_capture_set_active is not exported"
# Internals stay hidden: nothing of the writer leaks into the programs it is injected into.
if grep -q "TraceWriter" <<<"$symbols"; then fail "internal symbols are exported"; fi
readelf -d "$library" | grep -q 'NEEDED.*libcupti\.so' || fail "not linked against libcupti"
echo "ok"
