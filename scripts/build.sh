#!/usr/bin/env bash
# Configures and builds strata into build/ (CLI at build/bin/strata).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build}
# A build directory configured before (by a preset, another generator) keeps its generator.
GENERATOR=(-G Ninja)
[[ -f "$BUILD_DIR/CMakeCache.txt" ]] && GENERATOR=()
cmake -S . -B "$BUILD_DIR" "${GENERATOR[@]}" -DCMAKE_BUILD_TYPE=${CMAKE_BUILD_TYPE:-RelWithDebInfo} >/dev/null
# TARGETS: what to build (default all; scripts/demo.sh: strata_user, no tests).
cmake --build "$BUILD_DIR" -j "${JOBS:-$(nproc)}" ${TARGETS:+--target $TARGETS}
