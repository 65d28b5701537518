"""Cost of strata.start()/stop() in a running interpreter (docs/configuration.md).

    STRATA_LIB=build/lib/libstrata.so /usr/bin/python3 bench/python/attach_start.py [runs]

Each run is a fresh interpreter with numpy imported (more objects to patch):
the first start() (loading libstrata, ctypes, strata._fast and the automatic
layer included), stop(), and a second start() (patching only). Prints the
median and range of each in ms.
"""
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
PYDIR = os.path.join(os.path.dirname(os.path.dirname(HERE)), "python")

ONE = r"""
import sys, time
sys.path.insert(0, %r)
import numpy
import strata
t0 = time.perf_counter(); strata.start(sys.argv[1]); t1 = time.perf_counter()
strata.stop(); t2 = time.perf_counter()
strata.start(sys.argv[2]); t3 = time.perf_counter(); strata.stop()
print((t1 - t0) * 1e3, (t2 - t1) * 1e3, (t3 - t2) * 1e3)
""" % PYDIR


def main():
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    rows = []
    for _ in range(runs):
        with tempfile.TemporaryDirectory() as d:
            out = subprocess.run([sys.executable, "-c", ONE, d + "/a", d + "/b"], check=True,
                                 stdout=subprocess.PIPE, text=True).stdout
            rows.append([float(x) for x in out.split()])
    for i, what in enumerate(("first start", "stop", "second start")):
        v = sorted(r[i] for r in rows)
        print("%-13s median %6.1f ms  (%.1f-%.1f, %d runs)" % (what, v[len(v) // 2], v[0], v[-1], runs))


if __name__ == "__main__":
    main()
