#!/usr/bin/python3
"""Fixed costs of `strata run` on a short real job (issue 8, section 6).

A PyTorch job of a few seconds: 6,000 small .npy files read by a DataLoader
with 2 non-persistent workers over 3 epochs (~120 k events). Runs it plain
and under strata in interleaved rounds and prints, per configuration, the
median over rounds of the paired ratio traced/plain of wall time and of the
CPU time of the process tree, plus start-up costs measured the same way:

    /usr/bin/python3 bench/python/short_job.py --build build --rounds 7
    /usr/bin/python3 bench/python/short_job.py --build build --rounds 7 --no-gc
    /usr/bin/python3 bench/python/short_job.py --build build --callgrind   # exact instructions
    /usr/bin/python3 bench/python/short_job.py --no-gc --configs default --compare-build ../base/build

With --compare-build, another build's strata (the code before a change) runs
in the same rounds as configuration `compare`, and `default_against_compare`
gives the paired ratios of this build's runs to that one's.

Configurations: `default` (all layers, Python layer), `no-torch-patches`
and `no-numpy-patches` (default with STRATA_PY_TORCH=0 / STRATA_PY_NUMPY=0),
`no-python` (POSIX/STDIO without the Python layer), `proc-only` (`--layers
proc --no-python`). After the JSON figures it prints where the added time
goes: each layer as the difference of two configurations, and the start-up
costs in CPU milliseconds. Budget: default within 3% of plain.
"""
import argparse
import json
import math
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

JOB = r'''
import os, sys, numpy as np, torch
from torch.utils.data import Dataset, DataLoader
class Files(Dataset):
    def __init__(self, d): self.paths = sorted(os.path.join(d, f) for f in os.listdir(d))
    def __len__(self): return len(self.paths)
    def __getitem__(self, i): return torch.from_numpy(np.load(self.paths[i]))
if __name__ == "__main__":
    torch.set_num_threads(1)
    model = torch.nn.Linear(64, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    loader = DataLoader(Files(sys.argv[1]), batch_size=64, num_workers=2, persistent_workers=False)
    for epoch in range(3):
        for x in loader:
            opt.zero_grad(); model(x).sum().backward(); opt.step()
'''

# name -> (strata run options, environment additions)
CONFIGS = {
    "default": ([], {}),
    "no-torch-patches": ([], {"STRATA_PY_TORCH": "0"}),
    "no-numpy-patches": ([], {"STRATA_PY_NUMPY": "0"}),
    "no-python": (["--no-python"], {}),
    "proc-only": (["--layers", "proc", "--no-python"], {}),
    # The workload again without strata: what the harness itself adds to a
    # run by its place in the round (should be x1.000).
    "plain-again": (None, {}),
}
# Configurations run by another build's strata (--compare-build): default
# options, so that a change is measured against the code before it in the
# same rounds, each paired with the same plain run.
OTHER_STRATA = {}


def timed(cmd, env_add=None):
    """(wall seconds, CPU seconds, minor page faults) of the process tree."""
    env = dict(os.environ, **env_add) if env_add else None
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    wall = time.perf_counter() - t0
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime), r1.ru_minflt - r0.ru_minflt


def fault_cost_us(pages=20000):
    """CPU microseconds of one first-touch page fault on this machine (they
    were ~17 us on the VM strata was measured on: a fixed cost that counts)."""
    import mmap
    m = mmap.mmap(-1, pages * 4096)
    t0 = time.process_time()
    for i in range(0, pages * 4096, 4096):
        m[i] = 1
    t1 = time.process_time()
    m.close()
    # minus the Python loop itself, timed over pages already present
    m2 = mmap.mmap(-1, 4096)
    t2 = time.process_time()
    for i in range(pages):
        m2[0] = 1
    t3 = time.process_time()
    m2.close()
    return max(0.0, ((t1 - t0) - (t3 - t2)) / pages * 1e6)


def perf_counts(cmd, env_add=None):
    """System calls and page faults of the process tree, from `perf stat`
    (software events: they count the same whatever the machine's load)."""
    env = dict(os.environ, **env_add) if env_add else None
    r = subprocess.run(["perf", "stat", "-x,", "-e", "raw_syscalls:sys_enter,page-faults", "--"] + cmd,
                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env, check=True)
    counts = {}
    for line in r.stderr.splitlines():
        parts = line.split(",")
        if len(parts) > 2 and parts[0].isdigit():
            counts["syscalls" if "sys_enter" in parts[2] else "faults"] = int(parts[0])
    return counts


def load_free_counts(strata, tmp, workload):
    """Per configuration, the system calls and page faults strata adds to one
    run (one run each: these counts barely move between runs)."""
    plain = perf_counts(workload)
    lines = ["load-free counts of one run each (perf stat; plain: %d system calls, %d page faults):"
             % (plain["syscalls"], plain["faults"])]
    for c, (options, env_add) in CONFIGS.items():
        if options is None:  # plain-again
            continue
        out = os.path.join(tmp, "t-counts-" + c)
        got = perf_counts([strata, "run", "-q", "-o", out] + options + ["--"] + workload, env_add)
        shutil.rmtree(out, ignore_errors=True)
        lines.append("  %-18s %+8d system calls %+8d page faults"
                     % (c, got["syscalls"] - plain["syscalls"], got["faults"] - plain["faults"]))
    return lines


def make_data(d, n):
    import numpy as np
    os.makedirs(d, exist_ok=True)
    rng = np.random.default_rng(0)
    for i in range(n):
        np.save(os.path.join(d, f"s{i:05d}.npy"), rng.random(64, dtype=np.float32))


def quartiles(values):
    """The 25th and 75th percentiles of the paired ratios: how far apart the
    rounds are, to read the median against (the machine's noise is often
    larger than what is being measured)."""
    if len(values) < 2:
        return [round(values[0], 4)] * 2 if values else []
    q = statistics.quantiles(values, n=4)
    return [round(q[0], 4), round(q[2], 4)]


def median_interval(values, confidence=0.95):
    """A distribution-free confidence interval of the median (order
    statistics: the number of values below the true median is binomial with
    p = 1/2), so that a median ratio is read with how well the rounds pin it
    down; [] with fewer than 6 rounds, too few for a 95% interval."""
    n = len(values)
    if n < 6:
        return []
    v = sorted(values)
    below, k = 0.0, 0  # P(Binomial(n, 1/2) < k + 1), k the largest with it <= (1 - confidence) / 2
    for i in range(n + 1):
        below += math.comb(n, i) / 2.0 ** n
        if below > (1 - confidence) / 2:
            k = i
            break
    if k == 0:
        return []
    return [round(v[k - 1], 4), round(v[n - k], 4)]


def paired(strata, tmp, rounds, workload, configs):
    """Per config, medians over rounds of the paired traced/plain ratios of
    wall and CPU time, and of the CPU milliseconds added (traced - plain);
    and the ratios of the least wall and CPU time of its runs to the plain
    runs' least (`wall_least`, `cpu_least`).
    Each round starts at the next of (plain, configs...): a fixed order put
    the same config always first after the plain run and biased it, and on
    this VM the second of two back-to-back runs is slower than the first,
    so the plain run takes every place in turn too."""
    runs = {c: {"wall": [], "cpu": [], "cpu_ms": [], "faults": []} for c in configs}
    raw = {c: {"wall": [], "cpu": []} for c in configs}  # the runs' own times, for the least of each
    plain_wall, plain_cpu, plain_faults = [], [], []
    against_compare = {"wall": [], "cpu": [], "cpu_ms": []}  # default / compare, paired in each round
    events = {}  # per config, the events its first run recorded
    order = [None] + configs  # None: the plain run each config of the round is paired with
    for r in range(rounds):
        got = {}
        first = r % len(order)
        for c in order[first:] + order[:first]:
            if c is None or CONFIGS[c][0] is None:
                got[c] = timed(workload)
                continue
            out = os.path.join(tmp, f"t-{c}-{r}")
            options, env_add = CONFIGS[c]
            got[c] = timed([OTHER_STRATA.get(c, strata), "run", "-q", "-o", out] + options + ["--"] + workload,
                           env_add)
            if c not in events:
                events[c] = recorded_events(OTHER_STRATA.get(c, strata), out)
            shutil.rmtree(out, ignore_errors=True)
        pw, pc, pf = got[None]
        plain_wall.append(pw)
        plain_cpu.append(pc)
        plain_faults.append(pf)
        for c in configs:
            tw, tc, tf = got[c]
            raw[c]["wall"].append(tw)
            raw[c]["cpu"].append(tc)
            runs[c]["wall"].append(tw / pw)
            runs[c]["cpu"].append(tc / pc)
            runs[c]["cpu_ms"].append((tc - pc) * 1e3)
            runs[c]["faults"].append(tf - pf)
        if "default" in got and "compare" in got:
            (dw, dc, _), (cw, cc, _) = got["default"], got["compare"]
            against_compare["wall"].append(dw / cw)
            against_compare["cpu"].append(dc / cc)
            against_compare["cpu_ms"].append((dc - cc) * 1e3)
    compared = {}
    if against_compare["wall"]:
        compared = {"default_against_compare": {
            **{k: round(statistics.median(v), 4) for k, v in against_compare.items()},
            "wall_median_95": median_interval(against_compare["wall"]),
            "cpu_median_95": median_interval(against_compare["cpu"])}}
    return {
        **compared,
        "plain_wall_s": round(statistics.median(plain_wall), 4),
        "plain_cpu_s": round(statistics.median(plain_cpu), 4),
        "plain_faults": statistics.median(plain_faults),
        **{c: {**{k: round(statistics.median(v), 4) for k, v in runs[c].items()},
                  # The least time of the config's runs over the least of the plain runs: a
                  # shared machine's load only adds time, so the least of many runs moves less
                  # between benchmarks than the median of paired ratios does.
                  "wall_least": round(min(raw[c]["wall"]) / min(plain_wall), 4),
                  "cpu_least": round(min(raw[c]["cpu"]) / min(plain_cpu), 4),
                  "wall_quartiles": quartiles(runs[c]["wall"]),
                  "wall_median_95": median_interval(runs[c]["wall"]),
                  "cpu_median_95": median_interval(runs[c]["cpu"]),
                  **per_event(events.get(c), runs[c]["cpu_ms"])} for c in configs},
    }


def recorded_events(strata, trace):
    """Events a traced run recorded (`strata info --json`), or None."""
    r = subprocess.run([strata, "info", trace, "--json"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                       text=True)
    try:
        return json.loads(r.stdout)["events"] if r.returncode == 0 else None
    except (ValueError, KeyError):
        return None


def per_event(n, cpu_ms):
    """The events one run records and the CPU time added per event (ns, from
    the median CPU added): what the overhead is proportional to."""
    if not n:
        return {}
    return {"events": n, "cpu_ns_per_event": round(statistics.median(cpu_ms) * 1e6 / n, 1)}


def breakdown(result):
    """Where the added time goes, as lines of text: each layer is the
    difference between two configurations of the same rounds (medians of
    paired ratios, so the parts need not add up exactly; noise is their
    spread between runs of the benchmark)."""
    job, py, true = result["short_job"], result["python_startup"], result["true"]
    plain_cpu_ms = job["plain_cpu_s"] * 1e3

    def part(name, more, less, what):
        wall = job[more]["wall"] - (job[less]["wall"] if less else 1.0)
        cpu = job[more]["cpu"] - (job[less]["cpu"] if less else 1.0)
        return "  %-30s %+6.1f%% wall %+6.1f%% CPU (%+.0f ms CPU)  %s" % (
            name, 100 * wall, 100 * cpu, cpu * plain_cpu_ms, what)

    def interval(c, k):
        ci = job[c][k + "_median_95"]
        return "median's 95%% interval x%.3f-x%.3f" % tuple(ci) if ci else "too few rounds for an interval"

    lines = [
        "short job: plain %.2f s wall, %.2f s CPU; default traced x%.3f wall (rounds' quartiles x%.3f-x%.3f,"
        " %s), x%.3f CPU (%s) (budget x1.03 wall)"
        % (job["plain_wall_s"], job["plain_cpu_s"], job["default"]["wall"], *job["default"]["wall_quartiles"],
           interval("default", "wall"), job["default"]["cpu"], interval("default", "cpu")),
        "  default recorded %s events: %s ns of CPU added per event" % (
            job["default"].get("events", "?"), job["default"].get("cpu_ns_per_event", "?")),
        "  least of the rounds against plain's least: x%.3f wall, x%.3f CPU"
        % (job["default"]["wall_least"], job["default"]["cpu_least"]),
        "the harness: plain against plain again x%.3f wall (quartiles x%.3f-x%.3f), x%.3f CPU"
        % (job["plain-again"]["wall"], *job["plain-again"]["wall_quartiles"], job["plain-again"]["cpu"]),
        "where the added time goes (differences of configurations):",
        part("fixed costs", "proc-only", None, "launcher, runtime start-up, forks, writer threads"),
        part("POSIX/STDIO events", "no-python", "proc-only", "interposers, rings, encoding"),
        part("Python layer", "default", "no-python", "start-up import + patches"),
        part("  of which torch patches", "default", "no-torch-patches", "DataLoader, Module, backward, step"),
        part("  of which numpy patches", "default", "no-numpy-patches", "numpy.load per sample"),
        "page faults added (median of paired runs; %.1f us each here, so default's cost %+.0f ms CPU):"
        % (result["fault_us"], job["default"]["faults"] * result["fault_us"] / 1e3),
        "  " + ", ".join("%s %+d" % (c, job[c]["faults"]) for c in CONFIGS if c in job)
        + " (plain %d)" % job["plain_faults"],
        "start-up alone (CPU ms added, medians of paired runs):",
        "  strata run -- /bin/true          %+6.1f ms (plain %.1f ms wall)"
        % (true["default"]["cpu_ms"], true["plain_wall_s"] * 1e3),
        "  python3 -c pass, no Python layer %+6.1f ms" % py["no-python"]["cpu_ms"],
        "  python3 -c pass, Python layer    %+6.1f ms (the layer's import: %+.1f ms)"
        % (py["default"]["cpu_ms"], py["default"]["cpu_ms"] - py["no-python"]["cpu_ms"]),
    ]
    return lines


# Under valgrind the job runs ~50 times slower, so strata's periodic flush
# (every 1 s) would cut ~50 times more, smaller blocks than in a real run and
# inflate the writer's share (zstd builds its tables per block). The interval
# is stretched by the same factor for the traced run.
CALLGRIND_ENV = {"PYTHONHASHSEED": "0", "STRATA_FLUSH_INTERVAL_MS": "50000"}


def callgrind_instructions(strata, tmp, job, data, workers):
    """Instructions strata adds to the job, from callgrind: exact between
    runs with PYTHONHASHSEED fixed (within ~1 M of ~15,000 M), where wall and
    CPU time move by several percent. With workers=False the job runs in one
    process (num_workers=0, ~2 minutes); with workers=True it is the real job
    (2 DataLoader workers forked per epoch, ~5 minutes): each process dumps
    its counts before every fork (--dump-before=_Fork), so a worker's file
    holds its own instructions only, not its parent's up to the fork (what
    callgrind gives a forked child otherwise). The plain and the traced run go
    side by side."""
    if workers:
        run_job = job
    else:
        run_job = os.path.join(tmp, "job-one-process.py")
        with open(job) as f:
            text = f.read()
        with open(run_job, "w") as f:
            f.write(text.replace("num_workers=2, persistent_workers=False", "num_workers=0"))
    env = dict(os.environ, **CALLGRIND_ENV)
    out = {k: os.path.join(tmp, "cg-" + k) for k in ("plain", "traced")}
    trace = os.path.join(tmp, "t-callgrind")
    cmds = {
        "plain": [sys.executable, run_job, data],
        # --trace-children: strata run starts the job as its child
        "traced": [strata, "run", "-q", "-o", trace, "--", sys.executable, run_job, data],
    }
    procs = {k: subprocess.Popen(["valgrind", "--tool=callgrind", "--trace-children=yes",
                                  "--dump-before=_Fork", "--callgrind-out-file=" + out[k] + ".%p"] + cmds[k],
                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
             for k in cmds}
    for k, p in procs.items():
        if p.wait(timeout=3600) != 0:
            raise SystemExit("callgrind run %s failed" % k)
    files = {k: sorted(os.path.join(tmp, f) for f in os.listdir(tmp) if f.startswith("cg-" + k + "."))
             for k in cmds}
    totals = {k: sum(callgrind_total(path) for path in files[k]) for k in cmds}
    info = subprocess.run([strata, "info", "--json", trace], capture_output=True, text=True, check=True)
    events = json.loads(info.stdout)["events"]
    added = totals["traced"] - totals["plain"]
    what = ("the job as it is (2 workers per epoch, %d processes)" % json.loads(info.stdout)["processes"]
            if workers else "the job in one process (num_workers=0)")
    lines = ["callgrind, %s, PYTHONHASHSEED=0:" % what,
             "  plain %.1f M instructions, traced %.1f M: strata adds %.1f M (%+.2f%%), %.0f per event (%d events)"
             % (totals["plain"] / 1e6, totals["traced"] / 1e6, added / 1e6, 100.0 * added / totals["plain"],
                added / max(1, events), events)]
    if workers:
        lines += per_process_instructions(files)
        return lines
    plain = instructions_by_function(files["plain"])
    traced = instructions_by_function(files["traced"])
    if plain and traced:
        lines += where_instructions_go(plain, traced)
    return lines


def callgrind_total(path):
    with open(path) as f:
        for line in f:
            if line.startswith(("summary:", "totals:")):
                return int(line.split()[1])
    return 0


def per_process_instructions(files):
    """Added instructions per process: the files of one process are
    cg-KIND.PID[.PART]. The main process is the one that forked (its counts
    come in parts, one per fork); the workers of the plain and the traced
    run pair up by pid (pids grow, barring a wrap); the launcher (`strata
    run`, traced only: its command line names strata) is apart."""
    def by_pid(paths):
        procs = {}
        for path in paths:
            pid = int(os.path.basename(path).split(".")[1])
            procs.setdefault(pid, []).append(path)
        return [(pid, sum(callgrind_total(p) for p in parts), parts) for pid, parts in sorted(procs.items())]

    def is_launcher(parts):
        with open(parts[0]) as f:
            for line in f:
                if line.startswith("cmd:"):
                    return "strata" in line.split()[1]
        return False

    def main_first(procs):
        return sorted(procs, key=lambda p: len(p[2]) == 1)  # stable: workers keep pid order

    plain = main_first(by_pid(files["plain"]))
    traced = main_first([p for p in by_pid(files["traced"]) if not is_launcher(p[2])])
    launcher = sum(t for _, t, parts in by_pid(files["traced"]) if is_launcher(parts))
    lines = ["  per process (first: the main process, then the workers in order of start):"]
    for i, ((_, pt, _), (_, tt, _)) in enumerate(zip(plain, traced)):
        lines.append("    %-8s plain %8.1f M  traced %8.1f M  %+7.1f M (%+.2f%%)"
                     % ("main" if i == 0 else "worker", pt / 1e6, tt / 1e6, (tt - pt) / 1e6,
                        100.0 * (tt - pt) / max(1, pt)))
    lines.append("    launcher (strata run): %.1f M" % (launcher / 1e6))
    return lines


def instructions_by_function(paths):
    """{(object, function): instructions} of callgrind outputs, functions'
    own instructions only (callgrind_annotate --inclusive=no); {} without
    callgrind_annotate."""
    import re
    row = re.compile(r"^\s*([0-9,]+) \(\s*[0-9.]+%\)\s+(\S.*) \[(.*)\]$")
    counts = {}
    for path in paths:
        try:
            out = subprocess.run(["callgrind_annotate", "--inclusive=no", "--threshold=100", path],
                                 capture_output=True, text=True, timeout=600).stdout
        except (OSError, subprocess.SubprocessError):
            return {}
        for line in out.splitlines():
            m = row.match(line)
            if not m or m.group(2).startswith("=>"):
                continue
            fn = re.sub(r"'\d+$", "", m.group(2).split(":", 1)[-1])  # recursion depth suffix
            key = (os.path.basename(m.group(3)), fn[:90])
            counts[key] = counts.get(key, 0) + int(m.group(1).replace(",", ""))
    return counts


def where_instructions_go(plain, traced, top=12):
    """The instructions strata adds, per object and for its largest functions."""
    diff = {k: traced.get(k, 0) - plain.get(k, 0) for k in set(plain) | set(traced)}
    by_object = {}
    for (obj, _), n in diff.items():
        by_object[obj] = by_object.get(obj, 0) + n
    lines = ["  added per object: " + ", ".join("%s %+.1f M" % (o, n / 1e6) for o, n in
                                                sorted(by_object.items(), key=lambda x: -abs(x[1]))[:6])]
    lines.append("  largest added functions:")
    for (obj, fn), n in sorted(diff.items(), key=lambda x: -x[1])[:top]:
        lines.append("    %7.1f M  %s  (%s)" % (n / 1e6, fn, obj))
    return lines


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--files", type=int, default=6000)
    ap.add_argument("--json", action="store_true", help="only the JSON figures")
    ap.add_argument("--no-gc", action="store_true",
                    help="the job runs with gc.disable(), plain and traced alike: with "
                         "collections on, the workers' page faults are bistable (101 k or 75 k "
                         "for the whole job, ~6%% of its CPU), and any change of the parent's "
                         "start-up allocations (strata's Python layer, or starting the script "
                         "with python3 -c) picks one (bench/README.md, session 27)")
    ap.add_argument("--configs", default=",".join(CONFIGS),
                    help="comma-separated configurations of the short job to pair with plain runs "
                         "(default: all; the breakdown needs all)")
    ap.add_argument("--callgrind", action="store_true",
                    help="only the instructions strata adds to the job in one process (valgrind; "
                         "exact between runs, ~2 minutes)")
    ap.add_argument("--callgrind-workers", action="store_true",
                    help="only the instructions strata adds to the job as it is, with its workers, "
                         "per process (valgrind; exact between runs, ~5 minutes)")
    ap.add_argument("--counts", action="store_true",
                    help="only the system calls and page faults each configuration adds (needs perf)")
    ap.add_argument("--compare-build", metavar="DIR",
                    help="another build directory (the code before a change): adds configuration "
                         "`compare`, its strata with default options, to the short job's rounds")
    args = ap.parse_args()
    if args.compare_build:
        CONFIGS["compare"] = ([], {})
        OTHER_STRATA["compare"] = os.path.abspath(os.path.join(args.compare_build, "bin", "strata"))
        if not args.configs.endswith(",compare"):
            args.configs += ",compare"
    configs = args.configs.split(",")
    unknown = [c for c in configs if c not in CONFIGS]
    if unknown:
        ap.error("unknown configuration(s) %s; known: %s" % (", ".join(unknown), ", ".join(CONFIGS)))
    strata = os.path.abspath(os.path.join(args.build, "bin", "strata"))
    tmp = tempfile.mkdtemp(prefix="strata-shortjob-")
    try:
        data = os.path.join(tmp, "data")
        make_data(data, args.files)
        job = os.path.join(tmp, "job.py")
        with open(job, "w") as f:
            f.write(JOB.replace('if __name__ == "__main__":\n',
                                'if __name__ == "__main__":\n    import gc; gc.disable()\n')
                    if args.no_gc else JOB)
        if args.callgrind or args.callgrind_workers:
            print("\n".join(callgrind_instructions(strata, tmp, job, data, args.callgrind_workers)))
            return
        if args.counts:
            print("\n".join(load_free_counts(strata, tmp, [sys.executable, job, data])))
            return
        result = {
            "true": paired(strata, tmp, args.rounds * 3, ["/bin/true"], ["default"]),
            "python_startup": paired(strata, tmp, args.rounds * 3, [sys.executable, "-c", "pass"],
                                     ["default", "no-python"]),
            "short_job": paired(strata, tmp, args.rounds, [sys.executable, job, data], configs),
            "fault_us": round(fault_cost_us(), 2),
        }
        print(json.dumps(result, indent=1))
        if not args.json and configs == list(CONFIGS):
            print("\n".join(breakdown(result)))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
