#!/usr/bin/env bash
# Installs the Debian packages kvplan builds with, only those that are missing.
# Idempotent: a machine that has them all runs no apt-get at all.
set -euo pipefail
pkgs=(cmake ninja-build g++ python3 libeigen3-dev libfmt-dev libyaml-cpp-dev
      libboost-program-options-dev doctest-dev nlohmann-json3-dev
      pkg-config libcpp-httplib-dev python3-dev python3-pip pybind11-dev)
pkgs+=("$@")
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "install-deps: installing ${missing[*]}" >&2
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
fi
