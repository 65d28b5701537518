#!/usr/bin/env bash
# Builds strata and runs every test (GoogleTest and pytest, through CTest).
# Fails if CTest finds no test.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
bash scripts/build.sh
ctest --test-dir "${BUILD_DIR:-build}" --output-on-failure --no-tests=error -j "${JOBS:-2}" --timeout 900 "$@"
