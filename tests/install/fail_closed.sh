#!/usr/bin/env bash
# Zero rules to run is an error in every command (exit 2, one line naming why), never "No findings."
# Usage: fail_closed.sh PTADVISE TRACE
set -uo pipefail
ptadvise=$1 trace=$2
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
failures=0

# expect CODE STDERR-SUBSTRING -- COMMAND...
expect() {
  local code=$1 message=$2
  shift 3
  local err
  err=$("$@" 2>&1 >/dev/null)
  local got=$?
  if [[ $got != "$code" || $err != *"$message"* || $(wc -l <<<"$err") != 1 ]]; then
    echo "FAIL: $* -> exit $got, stderr: $err (expected exit $code and '$message')"
    failures=$((failures + 1))
  fi
}

mkdir -p "$scratch/empty" "$scratch/cwd"
empty="no rules found in $scratch/empty: no *.yaml rule file there"
# Every command that runs rules (summary runs none).
for command in "check $trace" "check --show-config" "rules" "explain PTA101" "diff $trace $trace"; do
  # shellcheck disable=SC2086
  expect 2 "$empty" -- env PTADVISE_RULES_DIR="$scratch/empty" "$ptadvise" $command
done
expect 2 "$scratch/missing: not a rule directory" -- env PTADVISE_RULES_DIR="$scratch/missing" "$ptadvise" check "$trace"
expect 2 "$scratch/rules.d: not a rule directory" -- env PTADVISE_DATA_DIR="$scratch" "$ptadvise" rules
# `run` checks what it recorded with the same rules: it stops before launching anything.
expect 2 "$empty" -- env PTADVISE_RULES_DIR="$scratch/empty" "$ptadvise" run --out "$scratch/run" -- true
[[ ! -e $scratch/run ]] || { echo "FAIL: run recorded although no rule could check the trace"; failures=$((failures + 1)); }

# A configuration that deselects every rule.
printf 'select: [memcpy]\nignore: [memcpy]\n' >"$scratch/cwd/.ptadvise.yaml"
cd "$scratch/cwd" || exit 1
none="no rule to run: select, extend-select and ignore ($scratch/cwd/.ptadvise.yaml and command line) leave none of the"
expect 2 "$none" -- "$ptadvise" check "$trace"
expect 2 "$none" -- "$ptadvise" check --show-config
expect 2 "$none" -- "$ptadvise" diff "$trace" "$trace"
expect 2 "$none" -- "$ptadvise" check --config "$scratch/cwd/.ptadvise.yaml" --exit-zero "$trace"

# --show-config validates what it prints: the baseline must load and the source root must exist.
printf 'baseline: missing-baseline.yaml\n' >"$scratch/cwd/.ptadvise.yaml"
expect 2 "$scratch/cwd/missing-baseline.yaml: cannot read the baseline file" -- "$ptadvise" check --show-config
printf 'source-root: no-such-dir\n' >"$scratch/cwd/.ptadvise.yaml"
expect 2 "$scratch/cwd/no-such-dir: source-root is not a directory" -- "$ptadvise" check --show-config
printf 'rules: {PTA999: {severity: error}}\n' >"$scratch/cwd/.ptadvise.yaml"
expect 2 "rules: 'PTA999' is not a rule id or name" -- "$ptadvise" check --show-config
printf 'select: [memcpy]\n' >"$scratch/cwd/.ptadvise.yaml"
out=$("$ptadvise" check --show-config) || { echo "FAIL: a valid configuration did not print"; failures=$((failures + 1)); }
[[ $out == *"select:"*"memcpy"* ]] || { echo "FAIL: --show-config printed: $out"; failures=$((failures + 1)); }

((failures == 0)) && echo "fail-closed: all commands exit 2 when no rule can run"
exit $((failures > 0))
