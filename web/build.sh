#!/usr/bin/env bash
# Installs web/'s npm packages (web/package-lock.json): the charting library
# that `strata analyze --html` and the live page embed (Chart.js, UMD build),
# and playwright-core, which drives Debian's chromium in the page tests
# (tests/web). Run by CMake at configure time when web/node_modules misses
# either; safe to run by hand.
set -euo pipefail
cd "$(dirname "$0")"
# --prefer-offline: packages already in npm's cache are taken from it
# without asking the registry, so a machine that installed them once builds
# without a network.
if [ -f package-lock.json ]; then
  npm ci --prefer-offline --no-audit --no-fund --loglevel=error
else
  npm install --prefer-offline --no-audit --no-fund --loglevel=error
fi
test -f node_modules/chart.js/dist/chart.umd.js
test -f node_modules/playwright-core/package.json
