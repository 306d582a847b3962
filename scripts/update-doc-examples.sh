#!/usr/bin/env bash
# Rewrites the example outputs in README.md and docs/*.md from the tool, keeping each
# example's `...` elisions (scripts/doc_examples.py explains how the shown lines are
# found again). Run it after a change to what kvplan prints (after merging branches, once
# for all of them), review `git diff README.md docs/`, then commit.
# Usage: scripts/update-doc-examples.sh [BUILD_DIR]   (default build; built first)
# Exit 1 lists examples it could not place: edit those blocks by hand and run it again.
# ctest's doc_examples test (scripts/doc_examples.py check) fails until the docs match.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-build}
[ -f "$BUILD/build.ninja" ] || [ -f "$BUILD/Makefile" ] || { echo "update-doc-examples: configure $BUILD first (scripts/build.sh)" >&2; exit 2; }
cmake --build "$BUILD" --target kvplan
python3 scripts/doc_examples.py update --kvplan "$BUILD/kvplan"
python3 scripts/doc_examples.py check --kvplan "$BUILD/kvplan"
