#!/usr/bin/env bash
# The second README command: install what is missing, build, and run the whole test suite.
# SANITIZE=1 builds into build-asan with AddressSanitizer + UndefinedBehaviorSanitizer.
# Warnings are errors here (PTADVISE_WERROR=ON); a user's build only shows them.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bash "$root/scripts/install-deps.sh" --test
if [[ "${SANITIZE:-0}" == 1 ]]; then
  export BUILD_DIR=${BUILD_DIR:-$root/build-asan}
  bash "$root/scripts/build.sh" -DPTADVISE_WERROR=ON -DPTADVISE_TESTS=ON -DPTADVISE_SANITIZE=ON
  # Exit 86 on a sanitizer report: distinct from 1 (findings), so no test expecting findings passes on a crash.
  export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:exitcode=86}
  export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1:exitcode=86}
else
  export BUILD_DIR=${BUILD_DIR:-$root/build}
  bash "$root/scripts/build.sh" -DPTADVISE_WERROR=ON -DPTADVISE_TESTS=ON -DPTADVISE_SANITIZE=OFF
fi
ctest --test-dir "$BUILD_DIR" --output-on-failure -j "$(nproc)"
