"""Workloads of test_attach.py: strata.start()/stop() in a Python process.

    attach_work.py run WORK                 the workload only (under strata run)
    attach_work.py attach WORK TRACE        before.txt, start, workload, stop, after.txt
    attach_work.py context WORK TRACE       the same with `with strata.tracing(TRACE)`
    attach_work.py twice WORK T1 T2         two sessions, workload in WORK/one and WORK/two
    attach_work.py ctypes WORK TRACE LIB    LIB loaded with ctypes after start
    attach_work.py notebook WORK T1 T2      cells run with exec, one trace per start
    attach_work.py exec WORK TRACE          a program started after start() is traced
    attach_work.py api WORK TRACE           strata.region and the automatic layer after start
    attach_work.py threads WORK T...        start/stop per trace while a thread writes
    attach_work.py errors WORK TRACE        stop before start, start twice, stop twice
    attach_work.py torch WORK TRACE         a DataLoader (torch imported before start)
    attach_work.py nostop WORK TRACE        exits while tracing

Prints what it did; the output is the same traced or not.
"""
import os
import subprocess
import sys

import strata


def write(path, n, chunk=1000):
    with open(path, "wb", buffering=0) as f:
        while n > 0:
            k = min(chunk, n)
            f.write(b"p" * k)
            n -= k


def workload(work):
    """3 writes of 1000 bytes, 3 reads (2000, 1000, 0),
    stat, rename, unlink, and a forked child writing child.txt (2 writes)."""
    data = os.path.join(work, "data.bin")
    write(data, 3000)
    fd = os.open(data, os.O_RDONLY)
    got = 0
    while True:
        b = os.read(fd, 2000)
        if not b:
            break
        got += len(b)
    os.close(fd)
    size = os.stat(data).st_size
    os.rename(data, os.path.join(work, "moved.bin"))
    os.unlink(os.path.join(work, "moved.bin"))
    pid = os.fork()
    if pid == 0:
        write(os.path.join(work, "child.txt"), 1500)
        os._exit(0)
    _, status = os.waitpid(pid, 0)
    print("workload: read %d size %d child %d" % (got, size, os.waitstatus_to_exitcode(status)))


def main():
    mode, work = sys.argv[1], sys.argv[2]
    args = sys.argv[3:]
    if mode == "run":
        workload(work)
    elif mode == "attach":
        write(os.path.join(work, "before.txt"), 10)
        print("start", strata.start(args[0]) == os.path.abspath(args[0]), strata.enabled())
        workload(work)
        print("stop", strata.stop(), strata.enabled())
        write(os.path.join(work, "after.txt"), 20)
    elif mode == "context":
        with strata.tracing(args[0]):
            workload(work)
        print("after", strata.enabled())
    elif mode == "twice":
        for sub, trace in (("one", args[0]), ("two", args[1])):
            os.mkdir(os.path.join(work, sub))
            strata.start(trace)
            workload(os.path.join(work, sub))
            strata.stop()
    elif mode == "ctypes":
        strata.start(args[0])
        import ctypes
        lib = ctypes.CDLL(args[1])
        lib.ctypes_io_write.restype = ctypes.c_long
        lib.ctypes_io_read.restype = ctypes.c_long
        path = os.path.join(work, "lib.bin").encode()
        print("wrote", lib.ctypes_io_write(path, 7), "read", lib.ctypes_io_read(path))
        strata.stop()
        print("after stop wrote", lib.ctypes_io_write(os.path.join(work, "late.bin").encode(), 2))
    elif mode == "notebook":
        cells = [
            "import strata, os\nstrata.start(T1)",
            "write(os.path.join(WORK, 'cell2.txt'), 2000)",
            "x = open(os.path.join(WORK, 'cell2.txt'), 'rb').read()\nprint('cell3', len(x))",
            "strata.stop()",
            "write(os.path.join(WORK, 'between.txt'), 5)",
            "strata.start(T2)",
            "write(os.path.join(WORK, 'cell7.txt'), 3000)",
            "strata.stop()",
        ]
        ns = {"T1": args[0], "T2": args[1], "WORK": work, "write": write}
        for i, cell in enumerate(cells):
            exec(compile(cell, "<cell %d>" % (i + 1), "exec"), ns)
    elif mode == "exec":
        strata.start(args[0])
        child = "open(%r, 'wb').write(b'e' * 4321)" % os.path.join(work, "exec.txt")
        r = subprocess.run([sys.executable, "-c", child], env=dict(os.environ))
        strata.stop()
        r2 = subprocess.run([sys.executable, "-c", child.replace("exec.txt", "exec2.txt")])
        print("children", r.returncode, r2.returncode, "LD_PRELOAD" in os.environ)
    elif mode == "api":
        strata.start(args[0])
        with strata.region("cell", cat="notebook"):
            write(os.path.join(work, "api.txt"), 100)
        import numpy as np
        np.save(os.path.join(work, "a.npy"), np.zeros(10))
        print("loaded", np.load(os.path.join(work, "a.npy")).nbytes)
        strata.stop()
        with strata.region("after", cat="notebook"):
            pass
    elif mode == "torch":
        # Imported before start(), as in a notebook: patched when start() runs.
        import torch.utils.data as tud
        for i in range(8):
            write(os.path.join(work, "s%d.bin" % i), 100)

        class Files(tud.Dataset):
            def __len__(self):
                return 8

            def __getitem__(self, i):
                with open(os.path.join(work, "s%d.bin" % i), "rb") as f:
                    return len(f.read())

        loader = tud.DataLoader(Files(), batch_size=2, num_workers=0)
        strata.start(args[0])
        sizes = [int(b.sum()) for b in loader]
        strata.stop()
        print("batches", sizes)
    elif mode == "nostop":
        # The interpreter exits while tracing (a notebook kernel shut down).
        strata.start(args[0])
        write(os.path.join(work, "last.txt"), 2500)
    elif mode == "errors":
        env_before = {k: os.environ.get(k) for k in ("LD_PRELOAD", "STRATA_DIR", "PYTHONPATH")}
        print("stop before start", strata.stop())
        strata.start(args[0])
        try:
            strata.start(args[0])
        except RuntimeError as e:
            print("second start:", e)
        print("stop", strata.stop(), "stop again", strata.stop())
        print("environment restored", env_before == {k: os.environ.get(k) for k in env_before})
    elif mode == "threads":
        # A thread writes all along while the main thread starts and stops
        # tracing three times: its data and the traces stay whole.
        import threading
        stop_flag = threading.Event()
        written = [0]

        def writer():
            with open(os.path.join(work, "thread.bin"), "wb", buffering=0) as f:
                while not stop_flag.is_set():
                    written[0] += f.write(b"t" * 64)

        t = threading.Thread(target=writer)
        t.start()
        for trace in args:
            strata.start(trace)
            write(os.path.join(work, os.path.basename(trace) + ".txt"), 1000)
            strata.stop()
        stop_flag.set()
        t.join()
        print("thread wrote", written[0] == os.path.getsize(os.path.join(work, "thread.bin")))
    else:
        sys.exit("bad mode " + mode)


if __name__ == "__main__":
    main()
