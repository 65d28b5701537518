#!/usr/bin/python3
"""Which of two (or more) strata-tools binaries analyses a trace with less CPU.

    bench/analyze_ab.py ROUNDS TRACE BIN [BIN...] [-- ANALYZE OPTIONS]

Runs `BIN analyze TRACE --json -j 1` (or the options after `--`) for every
binary, ROUNDS times, interleaved and in alternating order (on this VM the
second of two back-to-back runs is slower than the first, and the host's
load drifts over seconds: both move the binaries together this way), and
prints per binary the least and the median CPU time (user + system, from
getrusage of the child, in microseconds) with events per CPU-second. The
least CPU time is the figure to compare: load only ever adds to it.
"""
import resource
import subprocess
import sys


def main():
    args = sys.argv[1:]
    opts = ["--json", "-j", "1"]
    if "--" in args:
        at = args.index("--")
        args, opts = args[:at], args[at + 1:]
    if len(args) < 3:
        sys.exit(__doc__)
    rounds, trace, bins = int(args[0]), args[1], args[2:]
    cpu = {b: [] for b in bins}
    for r in range(rounds):
        for b in (bins if r % 2 == 0 else bins[::-1]):
            r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
            subprocess.run([b, "analyze", trace] + opts, stdout=subprocess.DEVNULL, check=True)
            r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
            cpu[b].append(r1.ru_utime - r0.ru_utime + r1.ru_stime - r0.ru_stime)
    info = subprocess.run([bins[0], "info", "--json", trace], capture_output=True, text=True, check=True).stdout
    events = int(info.split('"events":')[1].split(",")[0].split("}")[0])
    for b in bins:
        v = sorted(cpu[b])
        med = v[len(v) // 2]
        print("%-50s least %.4f s (%.2f M events/CPU-s)  median %.4f s (%.2f M/s)"
              % (b[-50:], v[0], events / v[0] / 1e6, med, events / med / 1e6))


if __name__ == "__main__":
    main()
