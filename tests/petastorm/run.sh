#!/usr/bin/env bash
# Runs Petastorm 0.13.1's own reader tests against stoker.petastorm (docs/petastorm.md):
#   bash tests/petastorm/run.sh [--threshold SHARE] [FILE ...]
# Needs .bench-petastorm-venv (the Makefile's $(PETASTORM_DEPS): Spark writes the datasets, once)
# and Stoker installed in .venv (make build).
set -euo pipefail
cd "$(dirname "$0")/../.."
SITE=build/petastorm-site        # Petastorm and the helpers its tests import, for .venv
FIXTURES=build/petastorm-fixtures  # the datasets Petastorm's writers made (build_fixtures.py)
PACKAGES="petastorm==0.13.1 pyspark==3.5.3 py4j==0.10.9.7 future==1.0.0 pytz==2026.6
  diskcache==5.6.3 opencv-python-headless==4.10.0.84"

if [ "$(cat "$SITE/.packages" 2>/dev/null)" != "$PACKAGES" ]; then
  rm -rf "$SITE"
  # --no-deps: Petastorm's pinned dependencies (pyarrow<15, numpy<2) are not Stoker's; the
  # modules its tests import come from .venv or this list.
  .venv/bin/python -m pip install -q --no-deps --target "$SITE" $PACKAGES \
    > build/petastorm-site.log 2>&1 || { tail -20 build/petastorm-site.log; exit 1; }
  echo "$PACKAGES" > "$SITE/.packages"
fi
.bench-petastorm-venv/bin/python tests/petastorm/build_fixtures.py "$FIXTURES" \
  > build/petastorm-fixtures.log 2>&1 || { tail -20 build/petastorm-fixtures.log; exit 1; }
exec .venv/bin/python tests/petastorm/run.py --site "$SITE" --fixtures "$FIXTURES" "$@"
