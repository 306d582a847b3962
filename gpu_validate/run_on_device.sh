#!/usr/bin/env bash
# Builds the gpu_validate harness on a bare GPU machine (CUDA, CMake, Python; ninja or
# make; no package manager, no yaml-cpp/Boost/fmt) and runs every check, CUDA then CPU,
# writing everything into OUT_DIR (a lent machine returns only what is written there).
#
#   gpu_validate/run_on_device.sh OUT_DIR
#
# OUT_DIR (default gpu_validate/results/<device>-<UTC date>/) receives:
#   validate_cuda.json / .txt   every check on the GPU (kvplan.validate/1); the JSON is
#                               rewritten after each group, so a timeout keeps what finished
#   calibration.json            the GPU's kvplan.calibration/2 file (for --calibration)
#   validate_cpu.json / .txt    the CPU references on the same host, for comparison
#   calibration_cpu.json        the host's calibration file (same writer)
#   run.log                     toolchain, timings and exit statuses
#   build.log, nvidia-smi.txt   the build and the device
# Exit status: 0 when every CUDA check passed, 1 when one failed, 2 when the build or
# the harness could not run (e.g. "no CUDA device").
set -uo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=${BUILD:-$ROOT/build-device}
command -v nvcc >/dev/null || export PATH=/usr/local/cuda/bin:$PATH

device=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1 | tr ' /' '--' || true)
cc=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -1 | tr -d '.' || true)
OUT=${1:-$ROOT/gpu_validate/results/${device:-unknown-gpu}-$(date -u +%Y-%m-%d)}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
LOG=$OUT/run.log
log() { echo "run_on_device: $*" | tee -a "$LOG"; }
: >"$LOG"
nvidia-smi >"$OUT/nvidia-smi.txt" 2>&1 || echo "nvidia-smi not available" >"$OUT/nvidia-smi.txt"
start=$(date +%s)
log "device '${device:-none found}', compute capability '${cc:-unknown}', $(date -u +%FT%TZ)"
log "nvcc: $(nvcc --version 2>&1 | tail -2 | tr '\n' ' ')"

# Generator: ninja when present, make otherwise (GENERATOR="Unix Makefiles" forces make).
if [ -n "${GENERATOR:-}" ]; then gen=$GENERATOR; elif command -v ninja >/dev/null; then gen=Ninja; else gen="Unix Makefiles"; fi
jobs=$(nproc 2>/dev/null || echo 4)

# Host compiler: nvcc refuses a g++ newer than it supports. Try the default, then older
# g++-N, and only then -allow-unsupported-compiler (which may miscompile: noted in run.log).
host_args=()
probe=$(mktemp -d)
echo '__global__ void k() {} int main() { k<<<1, 1>>>(); return 0; }' >"$probe/t.cu"
if nvcc -c "$probe/t.cu" -o "$probe/t.o" >"$probe/err" 2>&1; then
  log "host compiler: $(c++ --version 2>/dev/null | head -1) (accepted by nvcc)"
else
  chosen=""
  for v in 14 13 12 11 10 9; do
    command -v "g++-$v" >/dev/null || continue
    if nvcc -ccbin "g++-$v" -c "$probe/t.cu" -o "$probe/t.o" >/dev/null 2>&1; then chosen="g++-$v"; break; fi
  done
  if [ -n "$chosen" ]; then
    host_args=(-DCMAKE_CUDA_HOST_COMPILER="$(command -v "$chosen")")
    log "host compiler: default rejected by nvcc ($(head -1 "$probe/err")); using $chosen"
  else
    host_args=(-DCMAKE_CUDA_FLAGS=-allow-unsupported-compiler)
    log "host compiler: default rejected by nvcc ($(head -1 "$probe/err")) and no g++-N that nvcc accepts;" \
        "building with -allow-unsupported-compiler (unsupported by NVIDIA: check results against the CPU run)"
  fi
fi
rm -rf "$probe"
launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_CUDA_COMPILER_LAUNCHER=ccache)

# One architecture (this GPU's; sm_90 when none is visible) keeps the build short;
# warnings are not errors here because the device's host compiler may differ from CI's.
cmake -S "$ROOT" -B "$BUILD" -G "$gen" -DCMAKE_BUILD_TYPE=Release -DKVPLAN_HARNESS_ONLY=ON \
  -DKVPLAN_CUDA=ON -DKVPLAN_WERROR=OFF -DCMAKE_CUDA_ARCHITECTURES="${cc:-90}" "${host_args[@]}" "${launcher[@]}" \
  >"$OUT/build.log" 2>&1 &&
  cmake --build "$BUILD" -j "$jobs" --target kvplan_harness >>"$OUT/build.log" 2>&1
if [ $? -ne 0 ]; then
  tail -30 "$OUT/build.log"
  log "build failed after $(( $(date +%s) - start )) s (see build.log)"
  exit 2
fi
log "built ($gen) in $(( $(date +%s) - start )) s"

H="$BUILD/gpu_validate/kvplan_harness"
t=$(date +%s)
timeout 360 "$H" --backend cuda --out "$OUT/validate_cuda.json" --calibration-out "$OUT/calibration.json" \
  >"$OUT/validate_cuda.txt" 2>&1
status=$?
tail -5 "$OUT/validate_cuda.txt"
log "cuda checks: exit $status after $(( $(date +%s) - t )) s"
t=$(date +%s)
timeout 60 "$H" --backend cpu --out "$OUT/validate_cpu.json" --calibration-out "$OUT/calibration_cpu.json" \
  >"$OUT/validate_cpu.txt" 2>&1
log "cpu checks: exit $? after $(( $(date +%s) - t )) s"
log "done in $(( $(date +%s) - start )) s; results in $OUT (cuda status $status)"
exit "$status"
