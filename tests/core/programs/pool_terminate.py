"""Maps 40 file reads over a 2-worker multiprocessing.Pool for each start
method, then ends the pool with terminate() (SIGTERM to the workers)."""
import multiprocessing as mp
import os
import sys


def work(path):
    with open(path, "rb") as f:
        return len(f.read())


if __name__ == "__main__":
    data = sys.argv[1]
    files = [os.path.join(data, f"f{i}") for i in range(40)]
    for method in ("fork", "forkserver", "spawn"):
        pool = mp.get_context(method).Pool(2)
        total = sum(pool.map(work, files))
        pool.terminate()
        pool.join()
        print(method, total, flush=True)
