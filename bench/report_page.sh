#!/usr/bin/env bash
# bench/report_page.sh: issue 10's numbers for `strata analyze --html` on a big
# trace: the page's size (< 5 MB), its first draw and every view drawn in
# headless Chromium (< 2 s each), for 8 and for 256 processes. Generates
# synthetic traces with bench/gen_trace (cached under /tmp), writes the
# pages, then opens each with bench/report_page.mjs (playwright-core from
# web/node_modules driving /usr/bin/chromium), and ends with one table.
#
#   bench/report_page.sh                       # 10M events over 8, then over 256 processes
#   PROCS=256 bench/report_page.sh             # 256 processes only
#   EVENTS=1M PROCS="8 300" LOADS=3 bench/report_page.sh
#   STRATA_BENCH_BUILD=build bench/report_page.sh   # another build tree (default: build)
# A report, not a test: it exits 0 whatever the figures.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=${STRATA_BENCH_BUILD:-$ROOT/build}
EVENTS=${EVENTS:-10M}
PROCS_LIST=${PROCS:-8 256}
LOADS=${LOADS:-5}
CACHE=${STRATA_BENCH_CACHE:-/tmp/strata-bench-cache}
STRATA=$BUILD/bin/strata
GEN=$BUILD/bin/gen_trace
for f in "$STRATA" "$GEN"; do
  [[ -x $f ]] || { echo "missing $f: build first (JOBS=2 bash scripts/build.sh)" >&2; exit 1; }
done

mkdir -p "$CACHE"
summary=$(mktemp)
pages=()
trap 'rm -f "$summary" "${pages[@]}"' EXIT
for PROCS in $PROCS_LIST; do
  TRACE=$CACHE/html-$EVENTS-p$PROCS
  stamp=$(sha1sum "$GEN" | cut -c1-16)
  if [[ ! -f $TRACE/.gen-stamp || $(cat "$TRACE/.gen-stamp") != "$stamp" ]]; then
    echo "== generating $EVENTS events over $PROCS processes into $TRACE"
    rm -f "$TRACE/.gen-stamp"
    "$GEN" -o "$TRACE" -n "$EVENTS" -p "$PROCS" -j 2 --force >/dev/null
    echo "$stamp" >"$TRACE/.gen-stamp"
  fi
  events=$("$STRATA" info --json "$TRACE" | grep -o '"events":[0-9]*' | head -1 | cut -d: -f2)
  echo "== $PROCS processes: $TRACE: $events events"
  echo "load: $(cut -d' ' -f1-3 /proc/loadavg) (2 shared cores)"
  page=$(mktemp --suffix=-p$PROCS.html)
  pages+=("$page")
  t0=$(date +%s.%N)
  "$STRATA" analyze "$TRACE" --html "$page" >/dev/null
  t1=$(date +%s.%N)
  echo "strata analyze --html: $(awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.2f", b - a}') s wall"
  node "$ROOT/bench/report_page.mjs" --page "$page" --loads "$LOADS" --label "$PROCS processes" | tee -a "$summary" | grep -v '^|'
done
echo
echo "| page | figure | measured | budget | |"
echo "|---|---|---|---|---|"
grep '^|' "$summary"
