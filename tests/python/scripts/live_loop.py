"""Workload of tests/python/test_live.py: two processes doing file I/O in a
loop until WORK/stop exists (at most 120 s), with fixed outputs.

  python3 live_loop.py WORK

Writes WORK/fixed.bin (exactly 100000 bytes, one write) first, then WORK/pids
("parent child"), then reads WORK/data.bin in 4 KiB preads in both processes
(the child also rewrites WORK/scratch-child.bin), and at the end writes
WORK/result.bin (16 writes of 65536 bytes) and prints one line. Everything it
writes is the same in every run, traced or not. When WORK/kill-child appears,
the parent kills its child with SIGKILL (a process that vanishes unannounced).
"""
import os
import signal
import sys
import time

work = sys.argv[1]
stop = os.path.join(work, "stop")


def write_all(path, chunks):
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    for chunk in chunks:
        os.write(fd, chunk)
    os.close(fd)


def loop(scratch=None, child=None):
    deadline = time.monotonic() + 120
    data = os.path.join(work, "data.bin")
    while True:  # at least once, so the outputs exist even when stop does from the start
        fd = os.open(data, os.O_RDONLY)
        for i in range(16):
            os.pread(fd, 4096, i * 4096)
        os.close(fd)
        if scratch:
            write_all(scratch, [b"s" * 512])
        if child and os.path.exists(os.path.join(work, "kill-child")):
            os.kill(child, signal.SIGKILL)
            child = None
        if os.path.exists(stop) or time.monotonic() > deadline:
            break
        time.sleep(0.01)


write_all(os.path.join(work, "fixed.bin"), [bytes(range(256)) * 390 + bytes(160)])
child = os.fork()
if child == 0:
    loop(os.path.join(work, "scratch-child.bin"))
    os._exit(0)
with open(os.path.join(work, "pids.tmp"), "w") as f:
    f.write("%d %d\n" % (os.getpid(), child))
os.rename(os.path.join(work, "pids.tmp"), os.path.join(work, "pids"))
loop(child=child)
os.waitpid(child, 0)
write_all(os.path.join(work, "result.bin"), [bytes([i]) * 65536 for i in range(16)])
print("live_loop done: 100000 + 1048576 bytes written")
