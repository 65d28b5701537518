"""Python multiprocessing under strata: argv = METHOD FILE NWORKERS NREADS.
Each worker preads FILE NREADS times (os.pread, 4 KiB at offset 0). Prints
one JSON object: parent pid, worker pids with their parent pids, and the
helper processes multiprocessing started (resource tracker, fork server)."""
import json
import multiprocessing as mp
import os
import sys


def worker(path, n, q):
    fd = os.open(path, os.O_RDONLY)
    for _ in range(n):
        if len(os.pread(fd, 4096, 0)) != 4096:
            raise SystemExit(1)
    os.close(fd)
    q.put((os.getpid(), os.getppid()))


def main():
    method, path, nworkers, nreads = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    ctx = mp.get_context(method)
    q = ctx.Queue()
    procs = [ctx.Process(target=worker, args=(path, nreads, q)) for _ in range(nworkers)]
    for p in procs:
        p.start()
    results = [q.get(timeout=60) for _ in procs]
    for p in procs:
        p.join(60)
    helpers = []
    if method in ("spawn", "forkserver"):
        from multiprocessing import resource_tracker
        pid = getattr(resource_tracker._resource_tracker, "_pid", None)
        if pid:
            helpers.append(pid)
    if method == "forkserver":
        helpers += sorted({ppid for _, ppid in results})
    print(json.dumps({
        "parent": os.getpid(),
        "workers": [{"pid": pid, "ppid": ppid} for pid, ppid in results],
        "exitcodes": [p.exitcode for p in procs],
        "helpers": helpers,
    }))


if __name__ == "__main__":
    main()
