"""The job test_live_page.py watches under `strata run --live`: a parent, a
child that exits at once, and two forked workers that write and read files
until told to stop.

argv: DIR STOP_FILE. The parent first writes DIR/result.bin once (3 writes of
40000 bytes: the counters the page must show exactly), then forks a child
that writes DIR/early.bin and exits (the page must keep it, as exited; the
parent writes its pid to DIR/early.pid once it has reaped it), then two
workers. Every process but the early child loops over its own
DIR/work-<i>.bin (write 4 KiB, read it back) until STOP_FILE exists or 120 s
have passed, whichever comes first.
"""
import os
import sys
import time

RESULT_WRITES = 3
RESULT_CHUNK = 40000
WORKERS = 2
WORK_CHUNK = 4096
MAX_SECONDS = 120


def write_result(directory):
    fd = os.open(os.path.join(directory, "result.bin"), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        for i in range(RESULT_WRITES):
            os.write(fd, bytes([i]) * RESULT_CHUNK)
    finally:
        os.close(fd)


def early_child(directory):
    """Forks a child that writes one file and exits normally; returns its pid
    once reaped, after writing it to DIR/early.pid."""
    pid = os.fork()
    if pid == 0:
        with open(os.path.join(directory, "early.bin"), "wb") as f:
            f.write(b"early")
        sys.exit(0)
    _, status = os.waitpid(pid, 0)
    assert status == 0, status
    with open(os.path.join(directory, "early.pid"), "w") as f:
        f.write(str(pid))
    return pid


def work(directory, stop_file, index):
    path = os.path.join(directory, "work-%d.bin" % index)
    block = bytes([index]) * WORK_CHUNK
    deadline = time.monotonic() + MAX_SECONDS
    while not os.path.exists(stop_file) and time.monotonic() < deadline:
        with open(path, "wb") as f:
            f.write(block)
        with open(path, "rb") as f:
            assert f.read() == block
        time.sleep(0.01)


def main():
    directory, stop_file = sys.argv[1], sys.argv[2]
    write_result(directory)
    early_child(directory)
    children = []
    for index in range(1, WORKERS + 1):
        pid = os.fork()
        if pid == 0:
            # A normal exit (not os._exit) so the runtime ends its trace
            # file and reports the process as exited.
            work(directory, stop_file, index)
            sys.exit(0)
        children.append(pid)
    work(directory, stop_file, 0)
    failed = 0
    for pid in children:
        _, status = os.waitpid(pid, 0)
        failed += status != 0
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
