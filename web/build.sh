#!/usr/bin/env bash
# Installs the charting library that `strata analyze --html` embeds into its
# self-contained page (Chart.js, UMD build). Run by CMake at configure time
# when web/node_modules is missing; safe to run by hand.
set -euo pipefail
cd "$(dirname "$0")"
if [ -f package-lock.json ]; then
  npm ci --no-audit --no-fund --loglevel=error
else
  npm install --no-audit --no-fund --loglevel=error
fi
test -f node_modules/chart.js/dist/chart.umd.js
