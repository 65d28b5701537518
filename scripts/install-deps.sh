#!/usr/bin/env bash
# Installs every Debian package strata needs to build, test and run its examples.
# Idempotent: skips apt entirely when everything is already installed.
set -euo pipefail

BUILD_PKGS=(
  build-essential cmake ninja-build pkg-config git
  libzstd-dev          # block compression of the trace format
  libxxhash-dev        # block checksums (XXH3) and path hashes
  libcli11-dev         # command line parsing of `strata`
  libfmt-dev           # fast formatting in the CLI / converters
  libsimdjson-dev      # reading DFTracer .pfw JSON lines
  libcpp-httplib-dev   # REST server of `strata run --live` / `strata serve` (pkg-config cpp-httplib)
  zlib1g-dev           # gzip for .pfw.gz read/write
  libgtest-dev libgmock-dev   # C++ unit tests
  libbenchmark-dev     # hot-path micro benchmarks
  pybind11-dev python3-pybind11 python3-dev  # Python bindings of the reader
  valgrind             # instruction counts in bench/
  clang libclang-rt-14-dev   # libFuzzer targets of the readers (scripts/fuzz.sh)
  graphviz             # `dot`: strata efg --svg draws event flow graphs
  openmpi-bin libopenmpi-dev   # an MPI job under strata run (tests/analysis/mpi_test.cc)
)
PY_PKGS=(
  python3-pytest python3-numpy python3-pandas python3-pil
  python3-torch        # the PyTorch example and auto-instrumentation tests
  python3-dask python3-distributed   # strata.dask reader
)
WEB_PKGS=(
  chromium             # headless browser tests of report pages
)
# npm (for the report page's charting library) comes with the machine image;
# on a bare Debian 12 it is installed from Debian.
command -v npm >/dev/null 2>&1 || WEB_PKGS+=(nodejs npm)

want=("${BUILD_PKGS[@]}" "${PY_PKGS[@]}")
if [[ "${STRATA_WITH_BROWSER:-1}" == 1 ]]; then want+=("${WEB_PKGS[@]}"); fi

missing=()
for p in "${want[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]} == 0)); then
  echo "install-deps: all ${#want[@]} Debian packages present"
else
  echo "install-deps: installing ${missing[*]}"
  SUDO=""; [[ $(id -u) -ne 0 ]] && SUDO="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
# The pages' charting library and the page tests' browser driver
# (playwright-core 1.60, which supports Debian 12's node 18), from npm
# (pinned by web/package-lock.json).
web="$(dirname "$0")/../web"
if [[ ! -f "$web/node_modules/chart.js/dist/chart.umd.js" || ! -f "$web/node_modules/playwright-core/package.json" ]]; then
  bash "$web/build.sh"
fi
