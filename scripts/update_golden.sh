#!/usr/bin/env bash
# Regenerates the golden simulator output (tests/data/golden/sim_events.txt: request
# events in time order) after an intentional change to scheduling or step times, then
# shows what changed. Review the diff and commit it with the change that caused it. usage: scripts/update_golden.sh [BUILD_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
cmake --build "$build" --target test_sim
KVPLAN_UPDATE_GOLDEN=1 "$build/tests/sim/test_sim" -tc='golden*'
git --no-pager diff --stat -- tests/data/golden
