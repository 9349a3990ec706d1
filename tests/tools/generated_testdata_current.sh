#!/usr/bin/env bash
# The committed scenario traces and rule fixtures are what their generators write today: runs
# testdata/scenarios/make_scenarios.py and tests/unit/rules/make_rule_fixtures.py in a scratch copy of the
# tree and compares every trace they write (decompressed) with the committed one. A generator changed
# without rerunning it leaves tests pinned to traces it no longer makes.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
python=${1:-python3}
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
mkdir -p "$scratch/testdata" "$scratch/tests/unit"
cp -r "$root/testdata/scenarios" "$scratch/testdata/"
cp -r "$root/tests/unit/rules" "$scratch/tests/unit/"
cp -r "$root/rules.d" "$scratch/"
touch "$scratch/copied"
sleep 1  # what the generators write is newer than the copies, whatever the file system's time resolution
"$python" "$scratch/testdata/scenarios/make_scenarios.py" >/dev/null
"$python" "$scratch/tests/unit/rules/make_rule_fixtures.py" >/dev/null
stale=0
compared=0
while IFS= read -r -d '' written; do
  relative=${written#"$scratch"/}
  committed="$root/$relative"
  compared=$((compared + 1))
  if [[ ! -f $committed ]] || ! cmp -s <(gzip -dc "$written") <(gzip -dc "$committed"); then
    echo "stale: $relative differs from what its generator writes now (rerun the generator and commit)"
    stale=1
  fi
done < <(find "$scratch/testdata/scenarios" "$scratch/rules.d" -name '*.json.gz' -newer "$scratch/copied" -print0)
echo "$compared generated traces compared"
[[ $compared -gt 40 ]] || { echo "expected the generators to write more than 40 traces"; exit 1; }
exit $stale
