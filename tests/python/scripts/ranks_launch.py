"""Starts a command as N ranks the way torchrun does: N processes with RANK,
LOCAL_RANK, WORLD_SIZE (and LOCAL_WORLD_SIZE) set, waits for all of them
(at most --timeout seconds) and exits with the first non-zero status.

    ranks_launch.py --ranks 2 [--timeout 240] -- python3 job.py ARGS
"""
import argparse
import os
import subprocess
import sys


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ranks", type=int, required=True)
    ap.add_argument("--timeout", type=float, default=240)
    ap.add_argument("cmd", nargs=argparse.REMAINDER)
    a = ap.parse_args()
    cmd = a.cmd[1:] if a.cmd and a.cmd[0] == "--" else a.cmd
    procs = []
    for r in range(a.ranks):
        env = dict(os.environ, RANK=str(r), LOCAL_RANK=str(r), WORLD_SIZE=str(a.ranks), LOCAL_WORLD_SIZE=str(a.ranks))
        procs.append(subprocess.Popen(cmd, env=env))
    status = 0
    for p in procs:
        try:
            rc = p.wait(timeout=a.timeout)
        except subprocess.TimeoutExpired:
            p.kill()  # ours, by its Popen handle
            rc = p.wait()
        status = status or rc
    sys.exit(status)


if __name__ == "__main__":
    main()
