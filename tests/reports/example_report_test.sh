#!/usr/bin/env bash
# The shipped example reports (reports/examples/) are what scripts/make_example_report.sh
# writes today: regenerated into a temporary folder, they must match byte for byte (the
# outputs hold no wall time or other run-dependent field). After an intended change,
# rerun the script and commit the new files.
# Usage: example_report_test.sh BUILD_DIR
set -euo pipefail
cd "$(dirname "$0")/../.."
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
scripts/make_example_report.sh "$1" "$tmp" >/dev/null
if ! diff -r reports/examples "$tmp" > "$tmp.diff"; then
  head -c 4000 "$tmp.diff"
  rm -f "$tmp.diff"
  echo "example_report_test: reports/examples differs from scripts/make_example_report.sh's output (rerun it)" >&2
  exit 1
fi
rm -f "$tmp.diff"
echo "example_report_test: reports/examples/* match a fresh run"
