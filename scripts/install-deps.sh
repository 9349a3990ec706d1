#!/usr/bin/env bash
# Installs the Debian packages ptadvise needs, only those missing. Usage: install-deps.sh [--test]
# --test adds what the test suite needs (ccache, which the three build trees of .ci/run share; clang +
# libFuzzer runtime, jsonschema for SARIF and the output schemas, zsh/fish/man for the generated completions
# and man page, dpkg-dev for the .deb, pre-commit for the hook definitions, PyTorch for the capture and
# profiler-hook tests, headless Chromium and python3-websocket to render the HTML report). The CUDA 13
# toolkit (CUPTI) is expected under /usr/local/cuda; without it the capture library is skipped and
# everything else still builds.
set -euo pipefail
packages=(build-essential cmake pkg-config libsimdjson-dev libyaml-cpp-dev libcli11-dev doctest-dev
          libisal-dev libre2-dev zlib1g-dev nlohmann-json3-dev libfmt-dev libpugixml-dev python3)
if [[ "${1:-}" == "--test" ]]; then
  packages+=(ccache clang libclang-rt-14-dev python3-jsonschema python3-torch python3-numpy gzip zsh fish man-db groff-base
            dpkg-dev file pre-commit python3-yaml chromium python3-websocket)
fi
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "Installing: ${missing[*]}"
  sudo=""
  [[ $(id -u) -ne 0 ]] && sudo="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get update -qq
  $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
