#!/usr/bin/env bash
# Builds kvplan into build/ (Release-with-debug-info, Ninja), installing missing packages.
# Usage: scripts/build.sh [--werror]
# Warnings are errors (KVPLAN_WERROR=ON) with --werror or when CI=true, as CI and
# scripts/test.sh build; a user's build only prints them.
set -euo pipefail
cd "$(dirname "$0")/.."
werror=OFF
[ "${CI:-}" = true ] && werror=ON
for arg in "$@"; do
  case $arg in
    --werror) werror=ON ;;
    *) echo "build.sh: unknown option '$arg' (--werror)" >&2; exit 2 ;;
  esac
done
./scripts/install-deps.sh
# CUDA lives outside PATH on many machines; the CUDA parts build when nvcc is found.
if ! command -v nvcc >/dev/null && [ -x /usr/local/cuda/bin/nvcc ]; then export PATH="/usr/local/cuda/bin:$PATH"; fi
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DKVPLAN_WERROR="$werror" >/dev/null
cmake --build build -j "$(nproc)"
