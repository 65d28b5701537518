#!/usr/bin/env bash
# bench/efg_bench.sh: events/s of `strata efg` (graph building + loops) on a
# big synthetic trace (bench/gen_trace, the generator of analyze_big.sh,
# cached under /tmp). Uses the build in ./build unless STRATA_BENCH_BUILD says
# otherwise (analyze_big.sh's Release tree, build-bench, is faster).
#
#   bench/efg_bench.sh                 # 10M events
#   EVENTS=100M bench/efg_bench.sh
#   THREADS=1 bench/efg_bench.sh       # units read in parallel (default 2)
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=${STRATA_BENCH_BUILD:-$ROOT/build}
EVENTS=${EVENTS:-10M}
CACHE=${STRATA_BENCH_CACHE:-/tmp/strata-bench-cache}
JOBS=${JOBS:-2}
THREADS=${THREADS:-2}
STRATA=$BUILD/bin/strata
GEN=$BUILD/bin/gen_trace
for b in "$STRATA" "$GEN"; do
  [[ -x $b ]] || { echo "efg_bench: $b missing: build first (JOBS=2 bash scripts/build.sh)" >&2; exit 1; }
done

jnum() { grep -o "\"$1\":[0-9.eE+-]*" | head -1 | cut -d: -f2; }

mkdir -p "$CACHE"
TRACE=$CACHE/gen-$EVENTS
stamp=$(sha1sum "$GEN" | cut -c1-16)
if [[ ! -f $TRACE/.gen-stamp || $(cat "$TRACE/.gen-stamp") != "$stamp" ]]; then
  echo "== generating $EVENTS events into $TRACE"
  rm -f "$TRACE/.gen-stamp"
  "$GEN" -o "$TRACE" -n "$EVENTS" -j "$JOBS" --force
  echo "$stamp" >"$TRACE/.gen-stamp"
fi
n=$("$STRATA" info --json "$TRACE" | jnum events)
cat "$TRACE"/*.strata >/dev/null  # page cache: time the graph, not the disk
echo "trace: $TRACE: $n events; load: $(cut -d' ' -f1-3 /proc/loadavg) (2 shared cores)"

tv=$(mktemp)
trap 'rm -f "$tv"' EXIT
/usr/bin/time -v -o "$tv" "$STRATA" efg "$TRACE" --json --threads "$THREADS" >/dev/null
wall=$(awk -F': ' '/Elapsed \(wall clock\)/ {n = split($2, a, ":"); s = 0; for (i = 1; i <= n; i++) s = s * 60 + a[i]; print s}' "$tv")
user=$(awk -F': ' '/User time/ {print $2}' "$tv")
rss_kb=$(awk -F': ' '/Maximum resident set size/ {print $2}' "$tv")
awk -v n="$n" -v w="$wall" -v u="$user" -v kb="$rss_kb" -v t="$THREADS" 'BEGIN {
  printf "strata efg --json --threads %d: wall %.2f s, user %.2f s, peak RSS %.0f MB: %.2f M events/s wall, %.2f M events/s per user CPU second (decoding included)\n",
         t, w, u, kb / 1024, n / w / 1e6, n / u / 1e6
}'
