#!/usr/bin/env bash
# Builds the libFuzzer targets of the readers (tests/fuzz) with clang in
# build-fuzz/ (ASan + UBSan + libFuzzer) and runs each for SECONDS (default 60)
# on its seed corpus (tests/fuzz/corpus/<target>/; new inputs go to
# build-fuzz/corpus/<target>/, crashes to build-fuzz/crashes/<target>/).
# Fails if a target finds a crash, a leak, an OOM (-rss_limit_mb=2048) or a
# slow input (-timeout=10 s).
#   scripts/fuzz.sh [SECONDS] [TARGET...]      targets: fuzz_reader fuzz_pfw fuzz_efg
set -euo pipefail
cd "$(dirname "$0")/.."
SECONDS_EACH="${1:-60}"
shift || true
TARGETS=("$@")
[ ${#TARGETS[@]} -gt 0 ] || TARGETS=(fuzz_reader fuzz_pfw fuzz_efg)
BUILD="${FUZZ_BUILD_DIR:-build-fuzz}"
CLANG="${CLANG:-$(command -v clang++-14 || command -v clang++)}"
CLANG_C="${CLANG_C:-$(command -v clang-14 || command -v clang)}"
[ -n "$CLANG" ] || { echo "fuzz.sh: clang++ not found" >&2; exit 1; }
if [ ! -f "$BUILD/CMakeCache.txt" ]; then
  cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_C_COMPILER="$CLANG_C" -DCMAKE_CXX_COMPILER="$CLANG" \
    -DSTRATA_FUZZ=ON -DSTRATA_SANITIZE=address,undefined \
    -DSTRATA_BUILD_TESTS=OFF -DSTRATA_BUILD_BENCH=OFF -DSTRATA_BUILD_PYTHON=OFF >/dev/null
fi
cmake --build "$BUILD" -j "${JOBS:-2}" --target "${TARGETS[@]}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}"
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1}"
status=0
for t in "${TARGETS[@]}"; do
  seeds="tests/fuzz/corpus/${t#fuzz_}"
  work="$BUILD/corpus/$t"
  crashes="$BUILD/crashes/$t"
  mkdir -p "$work" "$crashes"
  echo "== $t: ${SECONDS_EACH} s"
  # -max_total_time bounds the run; timeout(1) is the backstop.
  if ! timeout --kill-after=30 $((SECONDS_EACH + 120)) "$BUILD/bin/$t" "$work" "$seeds" \
      -max_total_time="$SECONDS_EACH" -rss_limit_mb=2048 -timeout=10 -max_len=65536 \
      -artifact_prefix="$crashes/" -print_final_stats=1 2>"$BUILD/$t.log"; then
    status=1
    echo "fuzz.sh: $t FAILED (log: $BUILD/$t.log; inputs: $crashes/)" >&2
    grep -E "ERROR|SUMMARY|Test unit written" "$BUILD/$t.log" | head -20 >&2 || true
  fi
  grep -E "stat::number_of_executed_units|stat::peak_rss_mb" "$BUILD/$t.log" || true
done
exit $status
