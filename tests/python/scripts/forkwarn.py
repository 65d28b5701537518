"""Forks of a program that is single-threaded but for one stretch, run with
`-W always`: CPython 3.12 and later warn "This process (pid=N) is
multi-threaded" at the fork made while the second thread is alive, and only
there (test_semantics.py runs it plain and under strata run)."""
import multiprocessing
import os
import threading
import time


def fork_and_wait():
    pid = os.fork()
    if pid == 0:
        os._exit(0)
    os.waitpid(pid, 0)


if __name__ == "__main__":
    fork_and_wait()
    pid, fd = os.forkpty()
    if pid == 0:
        os._exit(0)
    os.waitpid(pid, 0)
    os.close(fd)
    multiprocessing.set_start_method("fork")
    worker = multiprocessing.Process(target=int)
    worker.start()
    worker.join()
    release = threading.Event()
    thread = threading.Thread(target=release.wait)
    thread.start()
    fork_and_wait()  # the one fork made with two threads of the program's
    release.set()
    thread.join()
    # join returns a moment before the kernel takes the thread out of the
    # process, and the interpreter counts the threads the kernel lists
    for _ in range(1000):
        if not os.path.exists("/proc/self/task/%d" % thread.native_id):
            break
        time.sleep(0.001)
    fork_and_wait()
    print("forked 5 times")
