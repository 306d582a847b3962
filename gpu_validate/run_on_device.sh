#!/usr/bin/env bash
# Builds the gpu_validate harness on a bare GPU machine (CUDA, CMake, ninja, Python; no
# package manager, no yaml-cpp/Boost/fmt) and runs every check, CUDA then CPU, writing
# JSON. Expected: ~1-2 min to build, ~1-2 min of checks on an H100/H200 (< 8 min in all).
#
#   gpu_validate/run_on_device.sh [OUT_DIR]
#
# OUT_DIR defaults to gpu_validate/results/<device>-<UTC date>/ and receives:
#   validate_cuda.json / .txt   every check on the GPU (schema kvplan.validate/1)
#   calibration.json            measured efficiencies for `kvplan ... --calibration`
#   validate_cpu.json / .txt    the CPU references on the same host, for comparison
#   nvidia-smi.txt, build.log   the device and the build
# Exit status: 0 when every CUDA check passed, 1 when one failed, 2 when the build or
# the harness could not run.
set -uo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=${BUILD:-$ROOT/build-device}
command -v nvcc >/dev/null || export PATH=/usr/local/cuda/bin:$PATH

device=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1 | tr ' /' '--' || true)
cc=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -1 | tr -d '.' || true)
OUT=${1:-$ROOT/gpu_validate/results/${device:-unknown-gpu}-$(date -u +%Y-%m-%d)}
mkdir -p "$OUT"
nvidia-smi >"$OUT/nvidia-smi.txt" 2>&1 || echo "nvidia-smi not available" >"$OUT/nvidia-smi.txt"

start=$(date +%s)
# One architecture (this GPU's) keeps the build short; warnings are not errors here
# because the device's host compiler may differ from CI's.
cmake -S "$ROOT" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release -DKVPLAN_HARNESS_ONLY=ON \
  -DKVPLAN_CUDA=ON -DKVPLAN_WERROR=OFF ${cc:+-DCMAKE_CUDA_ARCHITECTURES=$cc} >"$OUT/build.log" 2>&1 &&
  ninja -C "$BUILD" kvplan_harness >>"$OUT/build.log" 2>&1
if [ $? -ne 0 ]; then
  tail -30 "$OUT/build.log"
  echo "run_on_device: build failed (see $OUT/build.log)" >&2
  exit 2
fi
echo "run_on_device: built in $(( $(date +%s) - start )) s"

H="$BUILD/gpu_validate/kvplan_harness"
timeout 420 "$H" --backend cuda --out "$OUT/validate_cuda.json" --calibration-out "$OUT/calibration.json" \
  2>&1 | tee "$OUT/validate_cuda.txt"
status=${PIPESTATUS[0]}
timeout 120 "$H" --backend cpu --out "$OUT/validate_cpu.json" >"$OUT/validate_cpu.txt" 2>&1
echo "run_on_device: done in $(( $(date +%s) - start )) s; results in $OUT (cuda status $status)"
exit "$status"
