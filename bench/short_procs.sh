#!/usr/bin/env bash
# bench/short_procs.sh: what strata adds to each process a job starts (the
# fixed costs of issue 8 §6, which a shell pipeline or a launcher of many
# small programs pays per process, not per event). Two workloads, each run
# plain and under `strata run` in alternating pairs (ROUNDS, default 5):
#   fork   bench/workloads/fork_loop.c: N forks whose child _exit(0)s at once
#   exec   bash running /bin/true N times (a fork, then an exec: two images)
# Prints per workload the median per-process wall time plain and traced, the
# paired median ratio, and the user+system CPU of the traced run against
# plain. The trace goes to TRACE_DIR (default a directory under /dev/shm, so
# the file system's file creation is not what is measured; set it to a disk
# directory to include it).
#
#   bench/short_procs.sh              # N=300 ROUNDS=5
#   N=1000 ROUNDS=9 bench/short_procs.sh
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=${STRATA_BENCH_BUILD:-$ROOT/build}
N=${N:-300}
ROUNDS=${ROUNDS:-5}
TRACE_DIR=${TRACE_DIR:-/dev/shm}
cmake --build "$BUILD" --target strata_cli strata fork_loop >/dev/null
STRATA=$BUILD/bin/strata
work=$(mktemp -d "$TRACE_DIR/strata-short-procs.XXXXXX")
trap 'rm -rf "$work"' EXIT

run_timed() {  # out-file cmd... : appends "wall cpu" (seconds) of one run
  local out=$1
  shift
  local t0=$EPOCHREALTIME
  /usr/bin/time -f "%U %S" -o "$work/t" "$@" >/dev/null 2>&1
  local t1=$EPOCHREALTIME
  awk -v a="$t0" -v b="$t1" '{ printf "%.6f %.3f\n", b - a, $1 + $2 }' "$work/t" >>"$out"
}

for workload in fork exec; do
  case $workload in
    fork) cmd=("$BUILD/bin/fork_loop" "$N") ;;
    exec) cmd=(bash -c "for i in \$(seq $N); do /bin/true; done") ;;
  esac
  : >"$work/plain" && : >"$work/traced"
  for ((r = 0; r < ROUNDS; ++r)); do
    rm -rf "$work/trace"
    if ((r % 2 == 0)); then
      run_timed "$work/plain" "${cmd[@]}"
      run_timed "$work/traced" "$STRATA" run -q -o "$work/trace" -- "${cmd[@]}"
    else
      run_timed "$work/traced" "$STRATA" run -q -o "$work/trace" -- "${cmd[@]}"
      run_timed "$work/plain" "${cmd[@]}"
    fi
  done
  paste "$work/plain" "$work/traced" | awk -v w="$workload" -v n="$N" '
    { pw[NR] = $1; pc[NR] = $2; tw[NR] = $3; tc[NR] = $4; r[NR] = ($1 > 0 ? $3 / $1 : 0) }
    function median(a, k,   i, j, t, b) {
      for (i = 1; i <= k; ++i) b[i] = a[i]
      for (i = 1; i <= k; ++i) for (j = i + 1; j <= k; ++j) if (b[j] < b[i]) { t = b[i]; b[i] = b[j]; b[j] = t }
      return k % 2 ? b[(k + 1) / 2] : (b[k / 2] + b[k / 2 + 1]) / 2
    }
    END {
      k = NR
      printf "%-5s N=%d: per process plain %.3f ms, traced %.3f ms (+%.3f ms); wall x%.2f (paired median of %d); CPU plain %.2f s, traced %.2f s\n",
        w, n, median(pw, k) / n * 1000, median(tw, k) / n * 1000, (median(tw, k) - median(pw, k)) / n * 1000,
        median(r, k), k, median(pc, k), median(tc, k)
    }'
done
echo "load: $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) cores; traces in $TRACE_DIR"
