#!/usr/bin/python3
"""Wall time of the PyTorch example, plain vs under `strata run` (automatic
instrumentation at its defaults): median of N runs each, interleaved.

    /usr/bin/python3 bench/python/bench_overhead.py --build build --runs 5 [-- example flags]

Prints one JSON object: plain and traced medians of wall time and of the CPU
time of the whole process tree (less sensitive to other load on the machine),
the overheads in percent, every run's seconds, and the last trace's size.
"""
import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
EXAMPLE = os.path.join(REPO, "examples", "pytorch", "train.py")


def run(cmd, env):
    """(wall seconds, CPU seconds of the whole process tree)."""
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    subprocess.run(cmd, env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wall = time.perf_counter() - t0
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(REPO, "build"))
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--data", default=None, help="data set dir (default: a temporary one)")
    ap.add_argument("--traced-env", action="append", default=[], metavar="KEY=VALUE",
                    help="extra environment of the traced runs (e.g. STRATA_PY=0 to measure "
                         "the runtime without the Python layer)")
    ap.add_argument("example_flags", nargs="*", help="flags for train.py (after --)")
    a = ap.parse_args()
    strata = os.path.join(a.build, "bin", "strata")
    tmp = tempfile.mkdtemp(prefix="strata-bench-py-")
    data = a.data or os.path.join(tmp, "data")
    env = {k: v for k, v in os.environ.items() if not k.startswith("STRATA_") and k != "LD_PRELOAD"}
    base = ["/usr/bin/python3", EXAMPLE, "--data", data, "--ckpt", os.path.join(tmp, "ckpt")] + a.example_flags
    subprocess.run(base + ["--generate-only"], env=env, check=True)
    run(base, env)  # warm the page cache and torch's import
    tenv = dict(env, **dict(kv.split("=", 1) for kv in a.traced_env))
    plain, traced = [], []
    trace = os.path.join(tmp, "trace")
    for _ in range(a.runs):
        plain.append(run(base, env))
        shutil.rmtree(trace, ignore_errors=True)
        traced.append(run([strata, "run", "-o", trace, "--"] + base, tenv))
    info = json.loads(subprocess.run([strata, "info", "--json", trace], stdout=subprocess.PIPE,
                                     check=True, text=True).stdout)
    mp, mt = statistics.median(w for w, _ in plain), statistics.median(w for w, _ in traced)
    cp, ct = statistics.median(c for _, c in plain), statistics.median(c for _, c in traced)
    print(json.dumps({"plain_median_s": round(mp, 3), "traced_median_s": round(mt, 3),
                      "overhead_pct": round(100.0 * (mt - mp) / mp, 2),
                      "plain_cpu_median_s": round(cp, 3), "traced_cpu_median_s": round(ct, 3),
                      "cpu_overhead_pct": round(100.0 * (ct - cp) / cp, 2),
                      "plain_s": [round(w, 3) for w, _ in plain], "traced_s": [round(w, 3) for w, _ in traced],
                      "events": info.get("events"), "trace_bytes": info.get("bytes"),
                      "processes": info.get("processes"), "example_flags": a.example_flags,
                      "traced_env": a.traced_env}, indent=1))
    if not a.data:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
