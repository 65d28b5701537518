#!/usr/bin/env bash
# bench/analyze_big.sh: issue 3's budget for `strata analyze` on a large trace.
# Generates a synthetic 100-million-event trace once (bench/gen_trace, cached
# under /tmp), then times `strata analyze TRACE --json > /dev/null` with
# /usr/bin/time -v and prints events/s and peak memory against the budget
# (<= 10 s, < 2 GiB peak on this 2-core machine).
#
#   bench/analyze_big.sh                  # 100M events
#   EVENTS=10M bench/analyze_big.sh       # smaller trace
#   PROFILE=1 EVENTS=10M bench/analyze_big.sh   # also: where the time goes (perf)
#   TIMEOUT=600 (default): stop analyze after that many seconds and report a lower bound
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=${STRATA_BENCH_BUILD:-$ROOT/build-bench}
EVENTS=${EVENTS:-100M}
CACHE=${STRATA_BENCH_CACHE:-/tmp/strata-bench-cache}
TIMEOUT=${TIMEOUT:-600}
JOBS=${JOBS:-2}
BUDGET_S=10
BUDGET_MB=2048

say() { printf '%s\n' "$*" >&2; }
jnum() { grep -o "\"$1\":[0-9.eE+-]*" | head -1 | cut -d: -f2; }

if [[ ! -f $BUILD/build.ninja && ! -f $BUILD/Makefile ]]; then
  gen=(); command -v ninja >/dev/null && gen=(-G Ninja)
  cmake -S "$ROOT" -B "$BUILD" "${gen[@]}" -DCMAKE_BUILD_TYPE=Release -DSTRATA_BUILD_BENCH=ON >/dev/null
fi
if ! cmake --build "$BUILD" -j"$JOBS" --target strata_cli gen_trace >"$BUILD/bench-build.log" 2>&1; then
  say "build failed (see $BUILD/bench-build.log)"; tail -20 "$BUILD/bench-build.log" >&2; exit 1
fi
STRATA=$BUILD/bin/strata
GEN=$BUILD/bin/gen_trace

# ---- the trace (cached; regenerated when gen_trace changes) ---------------------
mkdir -p "$CACHE"
TRACE=$CACHE/gen-$EVENTS
stamp=$(sha1sum "$GEN" | cut -c1-16)
if [[ ! -f $TRACE/.gen-stamp || $(cat "$TRACE/.gen-stamp") != "$stamp" ]]; then
  echo "== generating $EVENTS events into $TRACE"
  rm -f "$TRACE/.gen-stamp"
  "$GEN" -o "$TRACE" -n "$EVENTS" -j "$JOBS" --force
  echo "$stamp" >"$TRACE/.gen-stamp"
fi
info=$("$STRATA" info --json "$TRACE")
n=$(jnum events <<<"$info")
echo "trace: $TRACE: $n events, $(jnum processes <<<"$info") processes, $(jnum bytes <<<"$info") bytes ($(jnum bytes_per_event <<<"$info") B/event)"
cat "$TRACE"/*.strata >/dev/null  # page cache: time the analysis, not the disk

# ---- time the analysis ----------------------------------------------------------------
echo "load: $(cut -d' ' -f1-3 /proc/loadavg) (2 shared cores; other work on the machine slows this down)"
tv=$(mktemp)
trap 'rm -f "$tv"' EXIT
set +e
timeout "$TIMEOUT" /usr/bin/time -v -o "$tv" "$STRATA" analyze "$TRACE" --json >/dev/null
rc=$?
set -e
wall=$(awk -F': ' '/Elapsed \(wall clock\)/ {n = split($2, a, ":"); s = 0; for (i = 1; i <= n; i++) s = s * 60 + a[i]; print s}' "$tv")
user=$(awk -F': ' '/User time/ {print $2}' "$tv"); sys=$(awk -F': ' '/System time/ {print $2}' "$tv")
rss_kb=$(awk -F': ' '/Maximum resident set size/ {print $2}' "$tv")
if [[ $rc == 124 || -z $wall ]]; then
  echo "strata analyze did not finish within ${TIMEOUT} s (stopped): slower than $(awk -v n="$n" -v t="$TIMEOUT" 'BEGIN {printf "%.2f", n / t / 1e6}') M events/s"
  echo "| strata analyze --json, $n events | > $TIMEOUT s wall | <= $BUDGET_S s | MISSED |"
  exit 0
fi
[[ $rc == 0 ]] || echo "warning: strata analyze exited with $rc"
awk -v n="$n" -v w="$wall" -v u="$user" -v s="$sys" -v kb="$rss_kb" -v bs="$BUDGET_S" -v bm="$BUDGET_MB" 'BEGIN {
  cpu = u + s; mb = kb / 1024
  printf "strata analyze --json: wall %.2f s, cpu %.2f s (user %.2f, sys %.2f), peak RSS %.0f MB\n", w, cpu, u, s, mb
  printf "  %.2f M events/s (wall), %.2f M events/s per CPU second\n", n / w / 1e6, n / cpu / 1e6
  printf "| %-40s | %-22s | %-10s | %-6s |\n", "metric", "measured", "budget", "ok?"
  printf "| %-40s | %-22s | %-10s | %-6s |\n", "analyze wall time, " n " events", sprintf("%.2f s (%.1f M ev/s)", w, n / w / 1e6), "<= " bs " s", (w <= bs ? "ok" : "MISSED")
  printf "| %-40s | %-22s | %-10s | %-6s |\n", "analyze peak memory", sprintf("%.0f MB", mb), "< " bm " MB", (mb < bm ? "ok" : "MISSED")
}'

# ---- where the time goes ----------------------------------------------------------------
if [[ -n ${PROFILE:-} ]] && command -v perf >/dev/null; then
  pd=$(mktemp -d)
  perf record -q -g -o "$pd/perf.data" "$STRATA" analyze "$TRACE" --json >/dev/null 2>&1 || true
  echo "== perf: top functions (self time)"
  perf report -i "$pd/perf.data" --no-children --stdio --sort dso,symbol 2>/dev/null | grep -E '^ +[0-9.]+%' | sed -E 's/[[:space:]]+-[[:space:]]+-[[:space:]]*$//' | cut -c1-150 | head -15
  rm -rf "$pd"
fi
