#!/usr/bin/env bash
# Runs COMMAND when DIRECTORY exists; otherwise says what is missing and exits 77, which ctest reports as
# "skipped" (SKIP_RETURN_CODE) rather than passed. Usage: run_if_present.sh DIRECTORY COMMAND...
directory=$1
shift
if [[ ! -d $directory ]]; then
  echo "skipped: $directory is absent (the shared trace corpus lives beside the project, in ../shared)"
  exit 77
fi
exec "$@"
