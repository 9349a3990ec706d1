#!/usr/bin/env bash
# Installs the Debian packages ptadvise needs, only those missing. Usage: install-deps.sh [--test]
# --test adds what the test suite needs (clang + libFuzzer runtime, jsonschema for SARIF, PyTorch for
# the end-to-end capture test). The CUDA 13 toolkit (CUPTI) is expected under /usr/local/cuda; without
# it the capture library is skipped and everything else still builds.
set -euo pipefail
packages=(build-essential cmake pkg-config libsimdjson-dev nlohmann-json3-dev libyaml-cpp-dev libcli11-dev doctest-dev
          libdeflate-dev libre2-dev zlib1g-dev python3)
if [[ "${1:-}" == "--test" ]]; then
  packages+=(clang libclang-rt-14-dev python3-jsonschema python3-torch python3-numpy gzip)
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
