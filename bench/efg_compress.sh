#!/usr/bin/env bash
# bench/efg_compress.sh: sizes of `strata efg --compress` (temporal EFG
# blocks) against strata's native trace, on the regular loop program of
# issue 11 (tests/efg/programs/epoch_loops.c: EPOCHS x STEPS of open, read
# x3, close, then a checkpoint), traced by `strata run`. Prints bytes, the
# ratio to the native trace and bytes per event, lossless and --no-times,
# and checks that `strata cat` of the lossless result equals the input's.
# Targets (issue 11, at 50 x 400): lossless never larger than native;
# --no-times >= 30x smaller.
#
#   bench/efg_compress.sh              # 50 x 400
#   EPOCHS=5 STEPS=40 bench/efg_compress.sh
#   TRACE=path/to/trace bench/efg_compress.sh   # any strata trace instead
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=${STRATA_BENCH_BUILD:-$ROOT/build}
STRATA=$BUILD/bin/strata
PROG=$BUILD/bin/efg_epoch_loops
EPOCHS=${EPOCHS:-50}
STEPS=${STEPS:-400}
for b in "$STRATA" "$PROG"; do
  [[ -x $b ]] || { echo "efg_compress: $b missing: build first (JOBS=2 bash scripts/build.sh)" >&2; exit 1; }
done

work=$(mktemp -d /tmp/strata-efgc-bench.XXXXXX)
trap 'rm -rf "$work"' EXIT
if [[ -z ${TRACE:-} ]]; then
  mkdir -p "$work/data/train" "$work/data/ckpt"
  for ((s = 0; s < STEPS; s++)); do head -c 12288 /dev/zero >"$work/data/train/sample_$s"; done
  TRACE=$work/trace
  "$STRATA" run -q -o "$TRACE" -- "$PROG" "$work/data" "$EPOCHS" "$STEPS"
  echo "workload: epoch_loops $EPOCHS x $STEPS"
else
  echo "workload: $TRACE"
fi

bytes() { du -b --apparent-size -c "$1"/*.strata | tail -1 | cut -f1; }
native=$(bytes "$TRACE")
events=$("$STRATA" info --json "$TRACE" | grep -o '"events":[0-9]*' | head -1 | cut -d: -f2)

t0=$(date +%s.%N)
"$STRATA" efg "$TRACE" --compress -o "$work/lossless" 2>"$work/log1"
t1=$(date +%s.%N)
"$STRATA" efg "$TRACE" --compress --no-times -o "$work/seq" 2>"$work/log2"
lossless=$(bytes "$work/lossless")
seq=$(bytes "$work/seq")

"$STRATA" cat "$TRACE" >"$work/a.jsonl"
"$STRATA" cat "$work/lossless" >"$work/b.jsonl"
if cmp -s "$work/a.jsonl" "$work/b.jsonl"; then same=yes; else same=NO; fi

awk -v n="$events" -v nat="$native" -v ll="$lossless" -v sq="$seq" -v same="$same" -v secs="$(echo "$t1 - $t0" | bc)" 'BEGIN {
  printf "events: %d\n", n
  printf "%-22s %10s %12s %14s\n", "trace", "bytes", "vs native", "bytes/event"
  printf "%-22s %10d %12s %14.3f\n", "native (strata run)", nat, "1.00x", nat / n
  printf "%-22s %10d %11.2fx %14.3f   (target: never larger than native: %s)\n", "--compress", ll, nat / ll, ll / n, (ll <= nat ? "met" : "MISSED")
  printf "%-22s %10d %11.2fx %14.3f   (target: >= 30x smaller: %s)\n", "--compress --no-times", sq, nat / sq, sq / n, ((nat / sq >= 30) ? "met" : "MISSED")
  printf "strata cat of --compress equals the input'"'"'s: %s; compress took %.2f s (%.1f M events/s)\n", same, secs, n / secs / 1e6
}'
sed 's/^/  /' "$work/log1" "$work/log2"
