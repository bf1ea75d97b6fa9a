#!/usr/bin/env bash
# Installs the Debian packages Stoker builds with, when any is missing: a C++20 compiler,
# the Python venv module, GoogleTest for the C++ unit tests, and zlib, libpng and libjpeg-turbo
# for Petastorm's codecs (src/decode). Needs root (or sudo).
set -euo pipefail

packages=(g++ make python3-venv python3-dev libgtest-dev zlib1g-dev libpng-dev libjpeg62-turbo-dev)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

echo "installing system packages: ${missing[*]}"
sudo_cmd=()
[ "$(id -u)" -ne 0 ] && sudo_cmd=(sudo)
export DEBIAN_FRONTEND=noninteractive
"${sudo_cmd[@]}" apt-get update -qq
"${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
