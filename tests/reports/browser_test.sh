#!/usr/bin/env bash
# Renders a real `kvplan size` HTML report in headless Chromium and checks that it shows
# its charts: a non-blank screenshot with the charts' colours (png_check.py) and no
# console errors. It never installs anything: without chromium or python3 it exits 77,
# which ctest reports as skipped (SKIP_RETURN_CODE in tests/reports/CMakeLists.txt);
# scripts/test.sh installs both first (scripts/install-deps.sh chromium).
# Then the Buy table as a 1,400 px window shows it (report_layout.py), keeping a screenshot
# of the Buy section at BUY_SCREENSHOT; and a `--demand` report's finance summary
# (finance_layout.py: first, nothing wider than the window, one tornado bar per
# sensitivity row), keeping a screenshot of it at FINANCE_SCREENSHOT.
# Usage: browser_test.sh KVPLAN_BINARY [BUY_SCREENSHOT.png [FINANCE_SCREENSHOT.png]]
set -euo pipefail
KVPLAN=${1:?usage: browser_test.sh KVPLAN_BINARY [BUY_SCREENSHOT.png [FINANCE_SCREENSHOT.png]]}
HERE=$(cd "$(dirname "$0")" && pwd)
skip() {
  echo "browser_test: SKIP: $1 is not installed; scripts/test.sh installs it (scripts/install-deps.sh chromium)" >&2
  exit 77
}
command -v python3 >/dev/null || skip python3
CHROMIUM=$(command -v chromium || command -v chromium-browser || true)
[ -n "$CHROMIUM" ] || skip chromium

WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
# A small search (two GPUs, 1,000 requests per probe, the least a p99 allows) keeps the test under a minute.
"$KVPLAN" size --model llama-3-8b --workload chat --gpus h100-sxm,l40s --requests 1000 --buy \
  --report "$WORK/report.html" -o "$WORK/report.txt"
grep -q "Recommended for llama-3-8b" "$WORK/report.txt" || { echo "browser_test: FAIL: no recommendation in the text output" >&2; exit 1; }
# The Buy section: bill of materials, power and racks, cumulative-cost chart.
for want in "Bill of materials" "Power and racks" "Cumulative cost over time"; do
  grep -q "$want" "$WORK/report.html" || { echo "browser_test: FAIL: no '$want' in the report's Buy section" >&2; exit 1; }
done
if grep -qE 'https?://' "$WORK/report.html"; then
  echo "browser_test: FAIL: the report references the network:" >&2
  grep -oE 'https?://[^" <]*' "$WORK/report.html" | head -5 >&2
  exit 1
fi

timeout 120 "$CHROMIUM" --headless --no-sandbox --disable-gpu --disable-background-networking \
  --disable-component-update --disable-sync --no-first-run --user-data-dir="$WORK/profile" \
  --enable-logging=stderr --v=0 --window-size=1400,3000 --screenshot="$WORK/shot.png" \
  "file://$WORK/report.html" >"$WORK/chromium.log" 2>&1 || {
  echo "browser_test: FAIL: chromium exited with an error:" >&2
  tail -20 "$WORK/chromium.log" >&2
  exit 1
}
[ -s "$WORK/shot.png" ] || { echo "browser_test: FAIL: no screenshot written" >&2; tail -20 "$WORK/chromium.log" >&2; exit 1; }
if grep -E 'Uncaught|:CONSOLE[:(]' "$WORK/chromium.log" >&2; then
  echo "browser_test: FAIL: the page logged console messages or errors (above)" >&2
  exit 1
fi
python3 "$HERE/png_check.py" "$WORK/shot.png" 256
python3 "$HERE/report_layout.py" "$WORK/report.html" "${2:-$WORK/buy.png}"
# The README's year-long plan for two models with a diurnal curve; the planner evaluator
# keeps it quick (the layout is under test here, not the rates).
"$KVPLAN" size --model llama-3.1-8b,qwen3-8b --workload chat --gpus h100-sxm,l40s --evaluator planner \
  --demand configs/demand/diurnal-two-models.csv --growth-per-month 0.03 --purchase-lead-months 2 \
  --report "$WORK/demand.html" -o "$WORK/demand.txt"
python3 "$HERE/finance_layout.py" "$WORK/demand.html" "${3:-$WORK/finance.png}"
echo "browser_test: PASS"
