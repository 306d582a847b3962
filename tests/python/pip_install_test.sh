#!/usr/bin/env bash
# `pip install .` of the repository with no package index (--no-index: what a machine
# without PyPI has), into a scratch folder, then `import kvplan` from an empty folder with
# nothing of the source or build tree on the path: the wheel carries the extension and
# the catalog. Given a BUILD_DIR, the wheel packs the extension of that build
# (KVPLAN_WHEEL_BUILD_DIR) rather than compiling the project a second time; given
# `scratch`, pip takes the path of a fresh machine: python/kvplan_build.py configures a
# Release build of its own in a temporary folder and compiles the extension and the
# libraries it links (minutes: ctest python_pip_install_scratch, label slow).
# Usage: pip_install_test.sh PYTHON SOURCE_DIR BUILD_DIR|scratch
set -euo pipefail
PY=${1:?usage: pip_install_test.sh PYTHON SOURCE_DIR BUILD_DIR|scratch}
SRC=${2:?} BUILD=${3:?}
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
if [ "$BUILD" = scratch ]; then
  unset KVPLAN_WHEEL_BUILD_DIR
else
  export KVPLAN_WHEEL_BUILD_DIR="$BUILD"
fi
"$PY" -m pip install --quiet --no-index --disable-pip-version-check --root-user-action=ignore \
  --target "$WORK/site" "$SRC"
mkdir "$WORK/empty" && cd "$WORK/empty"
# 2 (K and V) x 32 layers x 8 KV heads x 128 x 2 bytes (bf16) = 131,072 (Llama-3-8B's config).
env -u KVPLAN_DATA_DIR PYTHONPATH="$WORK/site" "$PY" - "$WORK/site" <<'PYEOF'
import os, sys
import kvplan
site = os.path.realpath(sys.argv[1])
assert os.path.realpath(kvplan.__file__).startswith(site), kvplan.__file__
assert os.path.realpath(os.environ["KVPLAN_DATA_DIR"]) == os.path.join(site, "kvplan"), os.environ["KVPLAN_DATA_DIR"]
row = kvplan.plan(model="llama-3-8b", gpu="h100-sxm")["rows"][0]
assert row["memory"]["kv_bytes_per_token"] == 131072, row["memory"]
assert "chat" in kvplan.workloads()
print("pip_install_test: PASS:", kvplan.__file__)
PYEOF
