#!/usr/bin/env bash
# `ptadvise run --capture torch` writes its trace through a temporary file created exclusively: a symlink
# planted at the predictable <trace>.tmp (host and pid are known to anyone on the machine) is never
# followed. The program plants it itself, for its own pid, before the profiler exports.
set -u
source "$(dirname "$0")/torch_run_setup.sh"
printf 'keep me\n' >"$work/victim"
cat >"$work/plant.py" <<'PY'
import os, sys
import torch
from ptadvise_names import trace_file_name
os.symlink(sys.argv[1], os.path.join(os.environ["PTADVISE_CAPTURE_DIR"], trace_file_name()) + ".tmp")
model = torch.nn.Linear(4, 4)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for _ in range(3):
    optimizer.zero_grad()
    model(torch.randn(2, 4)).sum().backward()
    optimizer.step()
PY
"$ptadvise" run --out "$work/out" --capture torch --skip-steps 0 --steps 1 --exit-zero -- \
  "$python" "$work/plant.py" "$work/victim" >/dev/null 2>"$work/stderr"
code=$?
[[ $code -eq 0 ]] || fail "the run exited $code"
[[ $(cat "$work/victim") == "keep me" ]] || fail "the planted symlink was followed: the victim file was overwritten"
shopt -s nullglob
traces=("$work"/out/*.pt.trace.json)
[[ ${#traces[@]} -eq 1 && -f ${traces[0]} && ! -L ${traces[0]} ]] || fail "expected one trace file in $work/out"
grep -q '"ph"' "${traces[0]}" || fail "the trace has no events"
temporaries=("$work"/out/.*.tmp)
[[ ${#temporaries[@]} -eq 0 ]] || fail "temporary files left: ${temporaries[*]}"
echo "ok: the planted symlink was not followed; one trace written"
