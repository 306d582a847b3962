#!/usr/bin/env bash
# The installed kvplan runs anywhere: `cmake --install` into a temporary prefix, then the
# installed binary, run from an empty folder with no KVPLAN_DATA_DIR, must find its catalog
# in PREFIX/share/kvplan (docs/ARCHITECTURE.md "Finding the catalog"); a copy moved away
# from its data must fail loudly (exit 2, one line naming where it looked), and
# KVPLAN_DATA_DIR must point it back; an empty catalog is an error, never an empty list.
# usage: install_test.sh CMAKE BUILD_DIR
set -euo pipefail
cmake_bin=$1
build=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "install_test: $*" >&2; exit 1; }

"$cmake_bin" --install "$build" --prefix "$tmp/prefix" >/dev/null
kvplan="$tmp/prefix/bin/kvplan"
[ -x "$kvplan" ] || fail "cmake --install put no bin/kvplan under the prefix"
[ -f "$tmp/prefix/share/kvplan/configs/models/llama-3-8b.yaml" ] || fail "no share/kvplan/configs/models"
unset KVPLAN_DATA_DIR
mkdir "$tmp/empty"
cd "$tmp/empty"

out=$("$kvplan" models) || fail "installed 'kvplan models' exited $?"
grep -q '^llama-3-8b ' <<<"$out" || fail "installed 'kvplan models' does not list llama-3-8b: $out"
grep -q '^deepseek-v3 ' <<<"$out" || fail "installed 'kvplan models' does not list deepseek-v3"
out=$("$kvplan" gpus) || fail "installed 'kvplan gpus' exited $?"
grep -q '^h100-sxm ' <<<"$out" || fail "installed 'kvplan gpus' does not list h100-sxm"
# Llama-3-8B: 32 layers x 2 (K, V) x 8 KV heads x 128 x 2 B = 131,072 B per token.
out=$("$kvplan" plan --model llama-3-8b --gpu h100-sxm --format json) || fail "installed 'kvplan plan' exited $?"
grep -q '"schema": *"kvplan.plan/1"' <<<"$out" || fail "plan JSON has no kvplan.plan/1 schema"
grep -q '"kv_bytes_per_token": *131072' <<<"$out" || fail "plan JSON: kv_bytes_per_token is not 131072"
# A catalog workload whose trace is a path relative to the workload file.
"$kvplan" simulate --model llama-3-8b --gpu h100-sxm --workload azure-code --requests 20 >/dev/null ||
  fail "installed 'kvplan simulate --workload azure-code' exited $?"
[ -z "$(ls -A "$tmp/empty")" ] || fail "kvplan wrote files into the working folder"

# Moved away from its data: exit 2 and say where it looked.
mkdir "$tmp/moved"
cp "$kvplan" "$tmp/moved/kvplan"
set +e
err=$("$tmp/moved/kvplan" models 2>&1 >/dev/null); rc=$?
set -e
[ "$rc" = 2 ] || fail "a kvplan without a catalog exited $rc, not 2"
grep -q '^kvplan: error: catalog: .*KVPLAN_DATA_DIR' <<<"$err" || fail "unclear message without a catalog: $err"
KVPLAN_DATA_DIR="$tmp/prefix/share/kvplan" "$tmp/moved/kvplan" gpus | grep -q '^h200 ' ||
  fail "KVPLAN_DATA_DIR did not point a moved kvplan at its catalog"

# An empty catalog is an error naming the folder.
mkdir -p "$tmp/data/configs/models" "$tmp/data/configs/gpus"
set +e
err=$(KVPLAN_DATA_DIR="$tmp/data" "$kvplan" models 2>&1 >/dev/null); rc=$?
set -e
[ "$rc" = 2 ] || fail "an empty catalog exited $rc, not 2"
grep -q "configs/models: expected at least one .yaml, .yml or .json file, got an empty catalog" <<<"$err" ||
  fail "unclear message for an empty catalog: $err"
echo "install_test: installed kvplan found its catalog; moved and empty catalogs exit 2"
