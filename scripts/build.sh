#!/usr/bin/env bash
# Builds kvplan into build/ (Release-with-debug-info, Ninja), installing missing packages.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/install-deps.sh
# CUDA lives outside PATH on many machines; the CUDA parts build when nvcc is found.
if ! command -v nvcc >/dev/null && [ -x /usr/local/cuda/bin/nvcc ]; then export PATH="/usr/local/cuda/bin:$PATH"; fi
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j "$(nproc)"
