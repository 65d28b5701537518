#!/usr/bin/python3
"""strata.read_trace speed: events per second from trace files to a pandas
DataFrame (best of N), on a synthetic trace made by bench/gen_trace.

    /usr/bin/python3 bench/python/bench_read_trace.py --build build [--events 10M] [--runs 3]
"""
import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(REPO, "build"))
    ap.add_argument("--events", default="10M")
    ap.add_argument("--procs", default="4")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--trace", default=None, help="an existing trace instead of a generated one")
    a = ap.parse_args()
    os.environ.setdefault("STRATA_PY_NATIVE", os.path.join(a.build, "python", "strata"))
    sys.path.insert(0, os.path.join(REPO, "python"))
    import strata

    tmp = None
    trace = a.trace
    if trace is None:
        tmp = tempfile.mkdtemp(prefix="strata-bench-rt-")
        trace = os.path.join(tmp, "trace")
        subprocess.run([os.path.join(a.build, "bin", "gen_trace"), "-o", trace, "-n", a.events,
                        "-p", a.procs, "-t", "2", "-j", "2"], check=True, stdout=subprocess.DEVNULL)
    best = None
    for _ in range(a.runs):
        r0 = resource.getrusage(resource.RUSAGE_SELF)
        t0 = time.perf_counter()
        df = strata.read_trace(trace)
        dt = time.perf_counter() - t0
        r1 = resource.getrusage(resource.RUSAGE_SELF)
        cpu = (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)
        n = len(df)
        if best is None or dt < best[0]:
            best = (dt, cpu)
        del df
    print(json.dumps({"events": n, "best_wall_s": round(best[0], 3), "cpu_s": round(best[1], 3),
                      "events_per_s": round(n / best[0]), "columns": 16}, indent=1))
    if tmp:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
