#!/usr/bin/env bash
# Quality gates, run by scripts/test.sh after the normal build and tests (docs/quality.md):
#   asan  the whole test suite again, built with AddressSanitizer + UndefinedBehaviorSanitizer
#         (-Werror as everywhere) in build-asan/
#   tidy  clang-tidy (.clang-tidy's checks, all errors) over the project's .cpp files with
#         build/compile_commands.json
#   fuzz  libFuzzer targets for the model, GPU and workload loaders (clang, ASan + UBSan) in
#         build-fuzz/, each run for KVPLAN_FUZZ_SECONDS (default 30) with tests/bad_inputs
#         and configs/ as seeds
# Usage: scripts/gates.sh [asan] [tidy] [fuzz]   (no argument: all three, in that order)
# Environment: KVPLAN_FUZZ_SECONDS (per target), KVPLAN_JOBS (default: nproc),
# KVPLAN_TIDY_BUILD (the build folder whose compile_commands.json tidy uses; build).
# Each stage prints its wall time; the script stops at the first failing stage.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
JOBS=${KVPLAN_JOBS:-$(nproc)}
FUZZ_SECONDS=${KVPLAN_FUZZ_SECONDS:-30}
TIDY_BUILD=${KVPLAN_TIDY_BUILD:-build}
STAGES=("$@")
[ ${#STAGES[@]} -eq 0 ] && STAGES=(asan tidy fuzz)

# Folders clang-tidy checks (tests/ and bench/ are left out: doctest's macros and the
# benchmarks' timing loops trip checks written for product code). KVPLAN_TIDY_EXCLUDE, an
# extended regular expression over repository paths, can leave files out while their
# findings are being fixed; by default nothing is.
TIDY_DIRS="planner|io|cli|sim|cluster|reports|gpu_validate|size|web|python"
TIDY_EXCLUDE="${KVPLAN_TIDY_EXCLUDE-}"

log() { printf '\n== gates: %s\n' "$*"; }
timed() {  # timed NAME COMMAND...: runs a stage and reports its wall time
  local name=$1 start=$SECONDS
  shift
  log "$name"
  "$@"
  log "$name passed in $((SECONDS - start)) s"
}

stage_asan() {
  # A separate build folder: sanitizers change the ABI of every object.
  cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DKVPLAN_SANITIZE=ON \
    -DKVPLAN_CUDA=OFF -DKVPLAN_BENCH=OFF -DKVPLAN_WERROR=ON >/dev/null
  cmake --build build-asan -j "$JOBS"
  # Any sanitizer report aborts the test (-fno-sanitize-recover=all) and fails ctest.
  ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:strict_string_checks=1 \
  UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    ctest --test-dir build-asan --output-on-failure -j "$JOBS"
}

stage_tidy() {
  [ -f "$TIDY_BUILD/compile_commands.json" ] || { echo "gates: $TIDY_BUILD/compile_commands.json missing: run scripts/build.sh first" >&2; return 1; }
  local files
  files=$(git ls-files --cached --others --exclude-standard -- '*.cpp' | grep -E "^($TIDY_DIRS)/" || true)
  if [ -n "$TIDY_EXCLUDE" ]; then files=$(grep -vE "$TIDY_EXCLUDE" <<<"$files" || true); fi
  # Only files the build compiles (CUDA-only sources are absent without nvcc).
  files=$(python3 - "$TIDY_BUILD/compile_commands.json" "$files" <<'EOF'
import json, os, sys
db = {os.path.realpath(e["file"]) for e in json.load(open(sys.argv[1]))}
print("\n".join(f for f in sys.argv[2].split() if os.path.realpath(f) in db))
EOF
)
  echo "clang-tidy: $(wc -w <<<"$files") files"
  # run-clang-tidy runs one process per file, JOBS at a time, and exits 1 on any finding
  # (WarningsAsErrors: '*'); the full log stays in $TIDY_BUILD/clang-tidy.log.
  local rc=0
  # shellcheck disable=SC2086
  run-clang-tidy -p "$TIDY_BUILD" -j "$JOBS" -quiet $(sed 's|^|'"$ROOT"'/|' <<<"$files") >"$TIDY_BUILD/clang-tidy.log" 2>&1 || rc=$?
  sed 's/\x1b\[[0-9;]*m//g' "$TIDY_BUILD/clang-tidy.log" | grep -E '(error|warning): ' | sort -u || true
  return $rc
}

stage_fuzz() {
  command -v clang++ >/dev/null || { echo "gates: clang++ not found (apt-get install clang libclang-rt-dev)" >&2; return 1; }
  cmake -S . -B build-fuzz -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_COMPILER=clang++ \
    -DKVPLAN_FUZZ=ON -DKVPLAN_TESTS=OFF -DKVPLAN_BENCH=OFF -DKVPLAN_CUDA=OFF -DKVPLAN_WERROR=ON >/dev/null
  cmake --build build-fuzz -j "$JOBS" --target fuzz_model fuzz_gpu fuzz_workload
  local t seeds
  for t in model gpu workload; do
    case $t in
      model) seeds="configs/models tests/bad_inputs/models" ;;
      gpu) seeds="configs/gpus tests/bad_inputs/gpus" ;;
      workload) seeds="configs/workloads tests/bad_inputs/workloads configs/traces" ;;
    esac
    # New inputs go to a scratch corpus (the seeds stay read-only); crashes to build-fuzz/.
    rm -rf "build-fuzz/corpus_$t" && mkdir -p "build-fuzz/corpus_$t" "build-fuzz/crashes_$t"
    log "fuzz_$t for $FUZZ_SECONDS s"
    # shellcheck disable=SC2086
    if ! build-fuzz/fuzz/fuzz_$t -max_total_time="$FUZZ_SECONDS" -timeout=10 -rss_limit_mb=2048 -max_len=8192 \
        -print_final_stats=1 -artifact_prefix="build-fuzz/crashes_$t/" "build-fuzz/corpus_$t" $seeds \
        2>"build-fuzz/fuzz_$t.log"; then
      tail -n 60 "build-fuzz/fuzz_$t.log"
      echo "gates: fuzz_$t found a failure; the input is in build-fuzz/crashes_$t/." >&2
      echo "gates: reproduce with build-fuzz/fuzz/fuzz_$t <file>, then add it to tests/bad_inputs/ as a case." >&2
      return 1
    fi
    grep -E '^(stat::number_of_executed_units|stat::peak_rss_mb|Done)' "build-fuzz/fuzz_$t.log" || true
  done
}

# clang (libFuzzer runtime included) and clang-tidy, installed only when missing.
./scripts/install-deps.sh clang clang-tidy libclang-rt-14-dev

total_start=$SECONDS
for s in "${STAGES[@]}"; do
  case $s in
    asan) timed "asan: build-asan, whole test suite under ASan+UBSan" stage_asan ;;
    tidy) timed "tidy: clang-tidy over the project's .cpp files" stage_tidy ;;
    fuzz) timed "fuzz: libFuzzer on the loaders" stage_fuzz ;;
    *) echo "gates: unknown stage '$s' (asan, tidy, fuzz)" >&2; exit 2 ;;
  esac
done
log "all gates passed in $((SECONDS - total_start)) s"
