#!/usr/bin/python3
"""How fast strata live answers (issue 12), on a real job: the two-process
loop of tests/python/scripts/live_loop.py under `strata run --live`.

  bench/live/api_latency.py [ROUNDS]        # default 40; uses build/bin/strata

Measures, with wall clocks on this machine (information, not a test):
  - POST /api/mode round trip, job-wide and per pid: the request, the
    processes' acknowledgement (applied_seq) and the answer;
  - GET /api/status and GET /api/history round trips;
  - `strata ctl TRACE mode` and `status --json` as whole commands;
  - GET /api/counters (snapshot request to every process + analysis).
Prints median, 90th percentile and max in milliseconds.
"""
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
STRATA = os.environ.get("STRATA_BIN", os.path.join(REPO, "build", "bin", "strata"))
LOOP = os.path.join(REPO, "tests", "python", "scripts", "live_loop.py")
ROUNDS = int(sys.argv[1]) if len(sys.argv) > 1 else 40


def timed(fn):
    t = time.perf_counter()
    fn()
    return (time.perf_counter() - t) * 1e3


def row(name, ms):
    ms = sorted(ms)
    p90 = ms[min(len(ms) - 1, int(0.9 * len(ms)))]
    print("%-40s %8.2f %8.2f %8.2f  (n=%d)" % (name, statistics.median(ms), p90, ms[-1], len(ms)))


def main():
    env = {k: v for k, v in os.environ.items() if not k.startswith("STRATA_") and k != "LD_PRELOAD"}
    with tempfile.TemporaryDirectory(prefix="strata-live-bench-") as tmp:
        work = os.path.join(tmp, "work")
        os.mkdir(work)
        with open(os.path.join(work, "data.bin"), "wb") as f:
            f.write(bytes(range(256)) * 256)
        trace = os.path.join(tmp, "t")
        err_path = os.path.join(tmp, "stderr")
        with open(err_path, "w") as err:
            job = subprocess.Popen([STRATA, "run", "--live", "-o", trace, "--", "/usr/bin/python3", LOOP, work],
                                   stdout=subprocess.DEVNULL, stderr=err, env=env)
        try:
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline and not (
                    os.path.exists(os.path.join(work, "pids")) and re.search(r"live at (\S+)", open(err_path).read())):
                time.sleep(0.05)
            url = re.search(r"live at (http://[^/]+)/\?token=(\w+)", open(err_path).read())
            base, token = url.group(1), url.group(2)
            parent, child = map(int, open(os.path.join(work, "pids")).read().split())
            time.sleep(1.5)

            def call(method, path, body=None):
                req = urllib.request.Request(base + path, method=method,
                                             data=json.dumps(body).encode() if body else None)
                req.add_header("Authorization", "Bearer " + token)
                with urllib.request.urlopen(req, timeout=30) as r:
                    return json.loads(r.read())

            modes = ["trace", "profile"]
            job_wide, per_pid, status, history, counters, pending = [], [], [], [], [], 0
            for i in range(ROUNDS):
                answer = {}
                job_wide.append(timed(lambda: answer.update(call("POST", "/api/mode", {"mode": modes[i % 2]}))))
                pending += len(answer["pending"])
                per_pid.append(timed(lambda: call("POST", "/api/mode", {"mode": modes[i % 2], "pid": child})))
                status.append(timed(lambda: call("GET", "/api/status")))
                history.append(timed(lambda: call("GET", "/api/history")))
            for _ in range(max(3, ROUNDS // 8)):
                counters.append(timed(lambda: call("GET", "/api/counters")))
            ctl_mode = [timed(lambda: subprocess.run([STRATA, "ctl", trace, "mode", modes[i % 2]], check=True,
                                                     capture_output=True, env=env)) for i in range(ROUNDS // 4)]
            ctl_status = [timed(lambda: subprocess.run([STRATA, "ctl", trace, "status", "--json"], check=True,
                                                       capture_output=True, env=env)) for _ in range(ROUNDS // 4)]
            print("%-40s %8s %8s %8s" % ("ms, 2 processes", "median", "p90", "max"))
            row("POST /api/mode, job-wide (acknowledged)", job_wide)
            row("POST /api/mode, one pid (acknowledged)", per_pid)
            row("GET /api/status", status)
            row("GET /api/history", history)
            row("GET /api/counters (snapshot + analysis)", counters)
            row("strata ctl mode (whole command)", ctl_mode)
            row("strata ctl status --json (whole command)", ctl_status)
            print("job-wide switches not acknowledged within 1 s: %d of %d" % (pending, 2 * ROUNDS))
        finally:
            open(os.path.join(work, "stop"), "w").close()
            try:
                job.wait(timeout=60)
            finally:
                if job.poll() is None:
                    job.kill()
                    job.wait()


if __name__ == "__main__":
    main()
