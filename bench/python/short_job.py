#!/usr/bin/python3
"""Fixed costs of `strata run` on a short real job (issue 8, section 6).

A PyTorch job of a few seconds: 6,000 small .npy files read by a DataLoader
with 2 non-persistent workers over 3 epochs (~120 k events). Runs it plain
and under strata in interleaved rounds and prints, per configuration, the
median over rounds of the paired ratio traced/plain of wall time and of the
CPU time of the process tree, plus start-up costs measured the same way:

    /usr/bin/python3 bench/python/short_job.py --build build --rounds 7

Configurations: `default` (all layers, Python layer), `proc-only`
(`--layers proc --no-python`), `no-python` (POSIX/STDIO without the Python
layer). Budget: default within 3% of plain.
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

CONFIGS = {
    "default": [],
    "no-python": ["--no-python"],
    "proc-only": ["--layers", "proc", "--no-python"],
}


def timed(cmd):
    """(wall seconds, CPU seconds of the process tree)."""
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wall = time.perf_counter() - t0
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)


def make_data(d, n):
    import numpy as np
    os.makedirs(d, exist_ok=True)
    rng = np.random.default_rng(0)
    for i in range(n):
        np.save(os.path.join(d, f"s{i:05d}.npy"), rng.random(64, dtype=np.float32))


def paired(strata, tmp, rounds, workload, configs):
    """Median over rounds of traced/plain for wall and CPU, per config."""
    ratios = {c: {"wall": [], "cpu": []} for c in configs}
    plain_wall = []
    for r in range(rounds):
        pw, pc = timed(workload)
        plain_wall.append(pw)
        for c in configs:
            out = os.path.join(tmp, f"t-{c}-{r}")
            tw, tc = timed([strata, "run", "-q", "-o", out] + CONFIGS[c] + ["--"] + workload)
            ratios[c]["wall"].append(tw / pw)
            ratios[c]["cpu"].append(tc / pc)
            shutil.rmtree(out, ignore_errors=True)
    return {
        "plain_wall_s": round(statistics.median(plain_wall), 4),
        **{c: {k: round(statistics.median(v), 4) for k, v in ratios[c].items()} for c in configs},
    }


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--files", type=int, default=6000)
    args = ap.parse_args()
    strata = os.path.abspath(os.path.join(args.build, "bin", "strata"))
    tmp = tempfile.mkdtemp(prefix="strata-shortjob-")
    try:
        data = os.path.join(tmp, "data")
        make_data(data, args.files)
        job = os.path.join(tmp, "job.py")
        with open(job, "w") as f:
            f.write(JOB)
        result = {
            "true": paired(strata, tmp, args.rounds * 3, ["/bin/true"], ["default"]),
            "python_startup": paired(strata, tmp, args.rounds, [sys.executable, "-c", "pass"], ["default", "no-python"]),
            "short_job": paired(strata, tmp, args.rounds, [sys.executable, job, data], list(CONFIGS)),
        }
        print(json.dumps(result, indent=1))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
