#!/usr/bin/env bash
# Warnings are errors in CI and the gates only: a fresh configure, as a user runs it,
# leaves KVPLAN_WERROR off, and scripts/build.sh turns it on only for --werror or CI=true.
# (A compiler version's new warning, such as GCC 12's false -Wrestrict in std::string at
# -O3, must not break a user's build.)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
# The harness-only tree configures in seconds and reads the same option.
cmake -S "$ROOT" -B "$WORK/b" -G Ninja -DKVPLAN_HARNESS_ONLY=ON -DKVPLAN_CUDA=OFF >/dev/null
value=$(cmake -N -LA "$WORK/b" | sed -n 's/^KVPLAN_WERROR:BOOL=//p')
[ "$value" = OFF ] || { echo "werror_default_test: FAIL: KVPLAN_WERROR defaults to '$value', expected OFF" >&2; exit 1; }
grep -q -- '-DKVPLAN_WERROR="$werror"' "$ROOT/scripts/build.sh" || { echo "werror_default_test: FAIL: scripts/build.sh does not pass KVPLAN_WERROR" >&2; exit 1; }
grep -q -- 'build.sh --werror' "$ROOT/scripts/test.sh" || { echo "werror_default_test: FAIL: scripts/test.sh (CI) does not build with --werror" >&2; exit 1; }
[ "$(grep -c -- '-DKVPLAN_WERROR=ON' "$ROOT/scripts/gates.sh")" -ge 2 ] || { echo "werror_default_test: FAIL: scripts/gates.sh builds without -DKVPLAN_WERROR=ON" >&2; exit 1; }
echo "werror_default_test: PASS"
