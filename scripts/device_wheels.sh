#!/usr/bin/env bash
# Downloads, here, the wheels scripts/device_check.sh installs on the GPU machine, which has no
# network: the pins of requirements-dev.txt for Python 3.12 on x86-64 Linux.
#
#   scripts/device_wheels.sh [DIR]      (default ./device-wheels; ignored by git)
#
# The device tool carries the working tree and the ignored paths it is told (`carry`) up to
# 64 MiB together, and pyarrow's wheel alone is ~45 MB: so numpy (~17 MB) is left out unless
# WITH_NUMPY=1 — the machine's image has numpy 2 (KINDS.md), which device_check.sh's venv sees
# through --system-site-packages. torch, cmake and ninja come from that image too.
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
dir=${1:-$repo/device-wheels}
pin() { grep -hE "^$1==" "$repo/requirements-core.txt" "$repo/requirements-dev.txt" | head -1; }

packages=("$(pin pyarrow)" "$(pin nanobind)" "$(pin scikit-build-core)" "$(pin pytest)"
          "$(pin pytest-timeout)")
if [[ "${WITH_NUMPY:-0}" == 1 ]]; then packages+=("$(pin numpy)"); fi

mkdir -p "$dir"
python3 -m pip download -q --only-binary=:all: --python-version "${PYTHON_VERSION:-3.12}" --implementation cp \
  --platform manylinux_2_28_x86_64 --platform manylinux2014_x86_64 \
  --platform manylinux_2_17_x86_64 -d "$dir" "${packages[@]}"
ls -l "$dir"
echo "$(du -sb "$dir" | cut -f1) bytes in $dir"
