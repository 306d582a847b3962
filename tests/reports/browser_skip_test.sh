#!/usr/bin/env bash
# ctest must never install packages: browser_test.sh, run where chromium is missing, exits
# 77 (skipped) with a message naming what is missing, and never calls apt-get or sudo.
# The PATH given to it holds python3, the few tools the script needs, and apt-get/sudo
# stubs that record any call.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
mkdir "$WORK/bin"
for tool in bash dirname id python3; do ln -s "$(command -v "$tool")" "$WORK/bin/$tool"; done
for stub in apt-get apt sudo dpkg; do
  printf '#!%s\necho "%s $*" >>"%s/called"\nexit 1\n' "$(command -v bash)" "$stub" "$WORK" >"$WORK/bin/$stub"
  chmod +x "$WORK/bin/$stub"
done
rc=0
PATH="$WORK/bin" "$WORK/bin/bash" "$HERE/browser_test.sh" /nonexistent/kvplan 2>"$WORK/err" || rc=$?
if [ -e "$WORK/called" ]; then
  echo "browser_skip_test: FAIL: the browser test ran a package manager:" >&2
  cat "$WORK/called" >&2
  exit 1
fi
[ "$rc" = 77 ] || { echo "browser_skip_test: FAIL: exit $rc, expected 77 (skip)" >&2; cat "$WORK/err" >&2; exit 1; }
grep -q "SKIP: chromium is not installed" "$WORK/err" || { echo "browser_skip_test: FAIL: no clear skip message:" >&2; cat "$WORK/err" >&2; exit 1; }
echo "browser_skip_test: PASS"
