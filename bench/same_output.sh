#!/usr/bin/env bash
# Whether a change kept ptadvise's results: runs `check --format json` and `summary --format json` on every
# trace of ../shared/traces (and on the scaled traces given as extra arguments) and saves them under DIR, or
# compares them byte for byte with the outputs saved there before.
#
#   bash bench/same_output.sh save PTADVISE DIR [TRACE...]     # before the change
#   bash bench/same_output.sh compare PTADVISE DIR [TRACE...]  # after: lists every output that differs
set -uo pipefail
mode=$1 binary=$2 dir=$3
shift 3
root=$(cd "$(dirname "$0")/.." && pwd)
# The rules and data beside the build tree (a copy of an older binary may be anywhere).
export PTADVISE_DATA_DIR=${PTADVISE_DATA_DIR:-$root/build/share/ptadvise}
mkdir -p "$dir"
traces=("$root"/../shared/traces/*.json "$root"/../shared/traces/*.json.gz "$@")
different=0
for trace in "${traces[@]}"; do
  [[ -f "$trace" ]] || continue
  stem=$(basename "$trace")
  for command in check summary; do
    out="$dir/$stem.$command.json"
    [[ $mode == compare ]] && out="$dir/$stem.$command.new.json"
    "$binary" "$command" --format json "$trace" >"$out" 2>"$out.err"
    echo "exit $?" >>"$out.err"
    if [[ $mode == compare ]]; then
      if ! cmp -s "$out" "$dir/$stem.$command.json" || ! cmp -s "$out.err" "$dir/$stem.$command.json.err"; then
        echo "DIFFERENT: $command $stem"
        different=$((different + 1))
      fi
    fi
  done
done
if [[ $mode == compare ]]; then
  echo "$different outputs differ"
  [[ $different -eq 0 ]]
fi
