#!/usr/bin/env bash
# Regenerates the shipped sizing report under reports/examples/ from the shipped chat
# workload (configs/workloads/chat.yaml): the HTML purchase report and the same result as
# Markdown, JSON and CSV. Deterministic (seed 0, 2,000 requests per probe): rerunning on
# any machine gives the same files; ctest `example_reports_current` regenerates them into
# a temporary folder and fails on any difference.
# Usage: scripts/make_example_report.sh [BUILD_DIR (default: build)] [OUT_DIR (default: reports/examples)]
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-build}
KVPLAN="$BUILD/kvplan"
[ -x "$KVPLAN" ] || { echo "make_example_report: no $KVPLAN; build first (cmake -S . -B $BUILD -G Ninja && ninja -C $BUILD)" >&2; exit 1; }
OUT=${2:-reports/examples}
mkdir -p "$OUT"
ARGS=(size --model llama-3-8b,llama-2-70b --workload chat --gpus a100-80gb,h100-sxm,h200,l40s --seed 0 --requests 2000)
"$KVPLAN" "${ARGS[@]}" --report "$OUT/chat-size.html" --format md -o "$OUT/chat-size.md" --force
# The same search again for the machine-readable forms (a few seconds each; identical results).
"$KVPLAN" "${ARGS[@]}" --format json -o "$OUT/chat-size.json" --force
"$KVPLAN" "${ARGS[@]}" --format csv -o "$OUT/chat-size.csv" --force
echo "make_example_report: wrote $OUT/chat-size.{html,md,json,csv}"
