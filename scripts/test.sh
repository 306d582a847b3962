#!/usr/bin/env bash
# The whole test suite, as CI runs it: build with warnings as errors (CUDA parts too when
# nvcc is found), run every doctest case under ctest, then the quality gates (scripts/gates.sh: sanitizers,
# clang-tidy, fuzzing). KVPLAN_GATES=0 skips the gates for a quick local run.
set -euo pipefail
cd "$(dirname "$0")/.."
# The tests install nothing themselves (a missing browser is a skipped test): chromium for
# tests/reports/browser_test.sh is installed here, with the build's packages.
./scripts/install-deps.sh chromium
./scripts/build.sh --werror
ctest --test-dir build --output-on-failure -j "$(nproc)"
if [ "${KVPLAN_GATES:-1}" != 0 ] && [ -x scripts/gates.sh ]; then
  ./scripts/gates.sh
fi
