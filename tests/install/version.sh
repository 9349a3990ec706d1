#!/usr/bin/env bash
# `ptadvise --version`: version, git commit and the rule set's count and checksum, which follows the rules.
# Usage: version.sh PTADVISE PROJECT_VERSION SOURCE_DIR
set -uo pipefail
ptadvise=$1 version=$2 source=$3
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

out=$("$ptadvise" --version) || fail "--version exited $?"
mapfile -t lines <<<"$out"
[[ ${lines[0]} == "ptadvise $version" ]] || fail "line 1: ${lines[0]}"
commit=$(git -C "$source" rev-parse --short=12 HEAD 2>/dev/null || echo unknown)
[[ ${lines[1]} == "commit $commit"* ]] || fail "line 2: ${lines[1]} (HEAD is $commit)"
count=$(find -L "$source/rules.d" -name '*.yaml' | wc -l)
[[ ${lines[2]} =~ ^"rule set $count rules, crc32 "[0-9a-f]{8}" (" ]] || fail "line 3: ${lines[2]} ($count rule files)"

# The checksum changes with a rule's content and not with where the rules are.
cp -r "$source/rules.d" "$scratch/a"
cp -r "$source/rules.d" "$scratch/b"
crc() { PTADVISE_RULES_DIR=$1 "$ptadvise" --version | sed -n 's/^rule set .*crc32 \([0-9a-f]*\).*/\1/p'; }
[[ $(crc "$scratch/a") == $(crc "$scratch/b") ]] || fail "same rules in two places, different checksums"
first=$(find "$scratch/b" -name '*.yaml' | sort | head -1)
sed -i 's/^summary: /summary: Changed. /' "$first"
[[ $(crc "$scratch/a") != $(crc "$scratch/b") ]] || fail "an edited rule kept the checksum"
mkdir "$scratch/empty"
PTADVISE_RULES_DIR=$scratch/empty "$ptadvise" --version | grep -q "^rule set not loaded: no rules found" ||
  fail "--version without rules does not say so"

((failures == 0)) && echo "--version: ${lines[*]}"
exit $((failures > 0))
