#!/usr/bin/env bash
# `ptadvise run --capture torch` starts the program the way the interpreter would: `-m pkg.mod` and `-c`
# find modules in the working directory, `-` reads the script from stdin, with sys.argv as Python sets it.
# Before, `-m` of a package in the working directory failed (No module named ...) and `-` was taken for a
# script file named "-".
set -u
source "$(dirname "$0")/torch_run_setup.sh"
ptadvise=$(cd "$(dirname "$ptadvise")" && pwd)/$(basename "$ptadvise")  # the test changes directory
shopt -s nullglob
mkdir -p "$work/project/trainpkg"
touch "$work/project/trainpkg/__init__.py"
cat >"$work/project/trainpkg/train.py" <<'PY'
import sys

import torch
import torch.nn as nn


def main(steps):
    model = nn.Linear(32, 32)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for _ in range(steps):
        model(torch.randn(8, 32)).sum().backward()
        opt.step()
        opt.zero_grad()
    print("trained", sys.argv)


if __name__ == "__main__":
    main(int(sys.argv[1]))
PY
cd "$work/project" || fail "no project directory"

expect_trace() {  # $1: out directory, $2: what ran
  local traces=("$1"/*.pt.trace.json)
  [[ ${#traces[@]} -eq 1 ]] || fail "$2: expected one trace in $1, found ${#traces[@]}"
}

"$ptadvise" run --out "$work/module" --capture torch --exit-zero -- "$python" -u -m trainpkg.train 9 --flag \
  >"$work/stdout" 2>"$work/stderr" || { cat "$work/stderr"; fail "-m: the run failed"; }
grep -q "trained \['.*train.py', '9', '--flag'\]" "$work/stdout" || { cat "$work/stdout" "$work/stderr"; fail "-m: the module did not run with its arguments"; }
expect_trace "$work/module" "-m"

"$ptadvise" run --out "$work/code" --capture torch --exit-zero -- "$python" -c \
  "import sys, trainpkg.train as t; t.main(9)" a b >"$work/stdout" 2>"$work/stderr" ||
  { cat "$work/stderr"; fail "-c: the run failed"; }
grep -q "trained \['-c', 'a', 'b'\]" "$work/stdout" || { cat "$work/stdout" "$work/stderr"; fail "-c: wrong sys.argv or not run"; }
expect_trace "$work/code" "-c"

printf 'import sys, trainpkg.train as t\nt.main(9)\n' |
  "$ptadvise" run --out "$work/stdin" --capture torch --exit-zero -- "$python" - x >"$work/stdout" 2>"$work/stderr" ||
  { cat "$work/stderr"; fail "-: the run failed"; }
grep -q "trained \['-', 'x'\]" "$work/stdout" || { cat "$work/stdout" "$work/stderr"; fail "-: the script from stdin did not run"; }
expect_trace "$work/stdin" "-"
echo "ok"
