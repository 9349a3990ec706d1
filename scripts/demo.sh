#!/usr/bin/env bash
# The first README command: install what is missing, build, and check the bundled example trace.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bash "$root/scripts/install-deps.sh"
# Only the binary: the demo runs no tests.
TARGETS=ptadvise bash "$root/scripts/build.sh"
"$root/build/cli/ptadvise" summary "$root/testdata/example_trace.json"
echo
# Findings make `check` exit 1 by design; the demo only shows them.
"$root/build/cli/ptadvise" check --exit-zero "$root/testdata/example_trace.json"
