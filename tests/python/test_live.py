"""strata live (issue 12, docs/live.md) end to end: a real two-process job
(scripts/live_loop.py) under `strata run --live`, its REST API through urllib,
`strata ctl`, then `strata serve` over the finished trace, and a job whose
launcher is killed."""
import json
import os
import re
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.parse
import urllib.request

import pytest

from conftest import PYTHON, SCRIPTS, clean_env, strata_bin

LOOP = os.path.join(SCRIPTS, "live_loop.py")
ENDPOINTS = [("GET", "/"), ("GET", "/api/status"), ("GET", "/api/history"), ("GET", "/api/counters"),
             ("POST", "/api/mode"), ("GET", "/no-such-endpoint")]


def wait_for(what, predicate, timeout=20.0, interval=0.1):
    """Polls predicate() until it returns a true value (returned) or fails after timeout seconds."""
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        last = predicate()
        if last:
            return last
        time.sleep(interval)
    raise AssertionError("timed out after %.0f s waiting for %s (last: %r)" % (timeout, what, last))


def request(base, method, path, token=None, body=None, query_token=None):
    """(status, parsed JSON or text) of one HTTP request."""
    url = base + path + ("?token=" + query_token if query_token else "")
    data = json.dumps(body).encode() if isinstance(body, dict) else body
    req = urllib.request.Request(url, data=data, method=method)
    if token:
        req.add_header("Authorization", "Bearer " + token)
    if data is not None:
        req.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            status, text, ctype = r.status, r.read().decode(), r.headers.get("Content-Type", "")
    except urllib.error.HTTPError as e:
        status, text, ctype = e.code, e.read().decode(), e.headers.get("Content-Type", "")
    return status, (json.loads(text) if ctype.startswith("application/json") else text)


def make_work(tmp_path, name):
    work = tmp_path / name
    work.mkdir()
    (work / "data.bin").write_bytes(bytes(range(256)) * 256)
    return work


class Job:
    """A live_loop.py job under `strata run --live`, its URL and token."""

    def __init__(self, tmp_path, name="job", extra_args=(), exec_first=False):
        self.work = make_work(tmp_path, name)
        loop = [PYTHON, LOOP, str(self.work)]
        if exec_first:  # an image that execs the loop: its slot is replaced by the loop's
            loop = [PYTHON, "-c", "import os, sys; os.execv(sys.argv[1], sys.argv[1:])"] + loop
        self.trace = tmp_path / (name + "-trace")
        self.stderr_path = tmp_path / (name + "-stderr.txt")
        self.stdout_path = tmp_path / (name + "-stdout.txt")
        with open(self.stderr_path, "w") as err, open(self.stdout_path, "w") as out:
            self.proc = subprocess.Popen([strata_bin(), "run", "--live", *extra_args, "-o", str(self.trace), "--",
                                          *loop],
                                         stdout=out, stderr=err, env=clean_env())
        line = wait_for("the live URL on stderr",
                        lambda: re.search(r"strata: live at (http://127\.0\.0\.1:\d+)/\?token=([0-9a-f]{32})\n",
                                          self.stderr_path.read_text()))
        self.base, self.token = line.group(1), line.group(2)
        wait_for("the job's pids", lambda: (self.work / "pids").exists())
        self.parent, self.child = map(int, (self.work / "pids").read_text().split())
        wait_for("both processes in the status", lambda: {self.parent, self.child} <= set(self.running()))

    def get(self, path):
        status, body = request(self.base, "GET", path, self.token)
        assert status == 200, (path, status, body)
        return body

    def post_mode(self, body):
        return request(self.base, "POST", "/api/mode", self.token, body)

    def running(self):
        return {p["pid"]: p for p in self.get("/api/status")["processes"] if p["state"] == "running"}

    def process(self, pid):
        return self.running().get(pid)

    def stop(self, timeout=90):
        (self.work / "stop").touch()
        try:
            return self.proc.wait(timeout=timeout)
        finally:
            if self.proc.poll() is None:
                os.kill(self.proc.pid, signal.SIGKILL)
                self.proc.wait(timeout=10)


def ctl(*args, check=True):
    p = subprocess.run([strata_bin(), "ctl", *map(str, args)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       text=True, timeout=60, env=clean_env())
    if check:
        assert p.returncode == 0, p.stderr
    return p


@pytest.fixture(scope="module")
def job(tmp_path_factory):
    j = Job(tmp_path_factory.mktemp("live"))
    yield j
    if j.proc.poll() is None:
        j.stop()


def test_status_lists_the_jobs_processes(job):
    status = job.get("/api/status")
    assert status["live"] is True
    assert status["job"]["mode"] == "profile"
    procs = job.running()
    parent, child = procs[job.parent], procs[job.child]
    assert parent["command"] == "%s %s %s" % (PYTHON, LOOP, job.work)
    assert child["ppid"] == job.parent
    for p in (parent, child):
        assert p["mode"] == "profile"
        for key in ("events", "events_per_s", "read_bytes", "written_bytes", "read_bytes_per_s",
                    "written_bytes_per_s", "dropped", "open_files", "tags"):
            assert key in p, key
    wait_for("reads counted", lambda: job.process(job.parent)["read_bytes"] >= 65536)


def test_every_endpoint_needs_the_token(job):
    wrong = "0" * 32
    for method, path in ENDPOINTS:
        body = {"mode": "off"} if method == "POST" else None
        assert request(job.base, method, path, body=body)[0] == 401, path
        assert request(job.base, method, path, token=wrong, body=body)[0] == 403, path
        assert request(job.base, method, path, query_token=wrong, body=body)[0] == 403, path
        assert request(job.base, method, path, token=job.token[:-1], body=body)[0] == 403, path
    # None of them switched anything.
    assert job.process(job.parent)["mode"] == "profile"


def test_page_with_the_token(job):
    status, page = request(job.base, "GET", "/", query_token=job.token)
    assert status == 200
    assert "<html" in page.lower()
    for placeholder in ("__STRATA_TOKEN__", "/*STRATA_LIVE_JS*/", "/*STRATA_LIVE_CSS*/", "/*STRATA_CHART_JS*/"):
        assert placeholder not in page


def test_bad_requests_get_4xx_and_leave_the_job_alone(job):
    cases = [(b"{\"mode\": ", 400), ({"mode": "fast"}, 400), ({"mode": "trace", "pid": "x"}, 400),
             ({"mode": "trace", "for_s": -1}, 400), ({"mode": "trace", "pid": 999999999}, 404)]
    for body, expected in cases:
        status, answer = job.post_mode(body)
        assert status == expected, (body, answer)
        assert set(answer) == {"error"}, answer
    assert request(job.base, "GET", "/api/mode", job.token)[0] == 405
    assert request(job.base, "DELETE", "/api/status", job.token)[0] == 405
    assert request(job.base, "GET", "/../../etc/passwd", job.token)[0] in (400, 404)
    assert {p["mode"] for p in job.running().values()} == {"profile"}


def test_mode_off_stops_recording_and_trace_restarts_it(job):
    status, answer = job.post_mode({"mode": "off"})
    assert status == 200, answer
    assert sorted(answer["switched"]) == sorted([job.parent, job.child])
    assert job.get("/api/status")["job"]["mode"] == "off"
    wait_for("events_per_s 0 in off mode", lambda: job.process(job.parent)["events_per_s"] == 0)
    events = job.process(job.parent)["events"]
    time.sleep(1.5)
    assert job.process(job.parent)["events"] == events, "off records nothing"
    status, answer = job.post_mode({"mode": "trace"})
    assert status == 200, answer
    wait_for("events_per_s rising in trace mode", lambda: job.process(job.parent)["events_per_s"] > 10)
    assert job.process(job.parent)["mode"] == "trace"


def test_per_pid_switch_and_timed_revert(job):
    status, answer = job.post_mode({"mode": "profile"})
    assert status == 200, answer
    status, answer = job.post_mode({"mode": "trace", "pid": job.child, "for_s": 2})
    assert status == 200, answer
    assert answer["switched"] == [job.child]
    procs = job.running()
    assert procs[job.child]["mode"] == "trace"
    assert procs[job.parent]["mode"] == "profile"
    assert job.get("/api/status")["job"]["mode"] == "profile", "a per-pid switch leaves the job mode"
    wait_for("the child back in profile after 2 s", lambda: job.process(job.child)["mode"] == "profile", timeout=10)


def test_job_wide_timed_switch_reverts_processes_and_the_job_mode(job):
    status, answer = job.post_mode({"mode": "trace", "for_s": 1.5})
    assert status == 200 and sorted(answer["switched"]) == sorted([job.parent, job.child]), answer
    status = job.get("/api/status")
    assert status["job"]["mode"] == "trace" and status["job"]["revert_mode"] == "profile"
    assert status["job"]["revert_at_wall_ns"] > time.time_ns()
    wait_for("both back in profile", lambda: {p["mode"] for p in job.running().values()} == {"profile"}, timeout=10)
    assert job.get("/api/status")["job"] == {"mode": "profile"}


def test_history_keeps_a_sample_a_second(job):
    history = job.get("/api/history")
    assert history["interval_s"] == 1
    series = history["series"][str(job.parent)]
    assert len(series) >= 3
    assert all(len(s) == 4 for s in series)
    times = [s[0] for s in series]
    assert times == sorted(times)


def test_counters_return_what_the_job_wrote(job):
    fixed = str(job.work / "fixed.bin")
    answer = job.get("/api/counters?path=" + urllib.parse.quote(fixed))
    posix = [f for f in answer["files"] if f["module"] == "POSIX"]
    assert [f["path"] for f in posix] == [fixed]
    assert posix[0]["pid"] == job.parent and posix[0]["rank"] == -1
    assert posix[0]["counters"]["POSIX_BYTES_WRITTEN"] == 100000
    assert posix[0]["counters"]["POSIX_WRITES"] == 1
    assert posix[0]["counters"]["POSIX_OPENS"] == 1
    data = job.get("/api/counters?path=" + urllib.parse.quote(str(job.work / "data.bin")))["files"]
    assert data and all(f["counters"]["POSIX_BYTES_READ"] == 4096 * f["counters"]["POSIX_READS"] for f in data)


def test_ctl_status_mode_counters(job):
    status = json.loads(ctl(job.trace, "status", "--json").stdout)
    running = {p["pid"]: p for p in status["processes"] if p["state"] == "running"}
    assert {job.parent, job.child} <= set(running)
    text = ctl(job.trace, "status").stdout
    assert re.search(r"^\s*%d\s+%d\s+running\s+profile\b" % (job.child, job.parent), text, re.M), text
    p = ctl(job.trace, "mode", "smart", "--pid", job.parent)
    assert "switched %d to smart" % job.parent in p.stderr
    assert job.process(job.parent)["mode"] == "smart"
    assert job.process(job.child)["mode"] == "profile"
    ctl(job.trace, "mode", "profile")
    assert {job.process(pid)["mode"] for pid in (job.parent, job.child)} == {"profile"}
    fixed = str(job.work / "fixed.bin")
    counters = json.loads(ctl(job.trace, "counters", "--json", "--path", fixed).stdout)
    assert [(f["module"], f["counters"]["POSIX_BYTES_WRITTEN"]) for f in counters["files"]] == [("POSIX", 100000)]
    darshan = ctl(job.trace, "counters", "--path", fixed).stdout
    assert re.search(r"^POSIX\t-?\d+\t\d+\tPOSIX_BYTES_WRITTEN\t100000\t%s\t" % re.escape(fixed), darshan, re.M), darshan
    bad = ctl(job.trace, "mode", "fast", check=False)
    assert bad.returncode != 0 and "fast" in bad.stderr


def test_outputs_are_byte_identical_to_an_untraced_run(job, tmp_path):
    assert job.stop() == 0, job.stderr_path.read_text()
    assert not (job.trace / ".live" / "server").exists(), "the server file goes when the server stops"
    plain = make_work(tmp_path, "plain")
    (plain / "stop").touch()
    p = subprocess.run([PYTHON, LOOP, str(plain)], stdout=subprocess.PIPE, timeout=120, env=clean_env())
    assert p.returncode == 0
    assert job.stdout_path.read_bytes() == p.stdout
    for name in ("fixed.bin", "result.bin", "scratch-child.bin"):
        assert (job.work / name).read_bytes() == (plain / name).read_bytes(), name
    assert (job.work / "result.bin").stat().st_size == 1048576


def test_serve_a_finished_trace(job):
    assert job.proc.poll() is not None, "runs after the job ended"
    err_path = job.trace.parent / "serve-stderr.txt"
    with open(err_path, "w") as err:
        serve = subprocess.Popen([strata_bin(), "serve", str(job.trace)], stdout=subprocess.DEVNULL, stderr=err,
                                 env=clean_env())
    try:
        line = wait_for("the serve URL", lambda: re.search(r"at (http://127\.0\.0\.1:\d+)/\?token=([0-9a-f]{32})",
                                                           err_path.read_text()))
        base, token = line.group(1), line.group(2)
        status, page = request(base, "GET", "/", query_token=token)
        assert status == 200 and "<html" in page.lower()
        # The page `strata analyze --html` writes, timeline lanes and process
        # names included (it was drawn from the job alone, without them).
        report = job.trace.parent / "serve-report.html"
        subprocess.run([strata_bin(), "analyze", str(job.trace), "--html", str(report)], check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=clean_env(), timeout=120)
        assert page == report.read_text(), "strata serve's page differs from strata analyze --html"
        for method, path in ENDPOINTS:
            assert request(base, method, path, body={"mode": "off"} if method == "POST" else None)[0] == 401
        status, answer = request(base, "POST", "/api/mode", token, {"mode": "trace"})
        assert status == 409 and "error" in answer
        status, answer = request(base, "GET", "/api/status", token)
        assert status == 200 and answer["live"] is False
        procs = {p["pid"]: p for p in answer["processes"]}
        assert {job.parent, job.child} <= set(procs)
        assert {procs[job.parent]["state"], procs[job.child]["state"]} == {"exited"}
        fixed = str(job.work / "fixed.bin")
        status, answer = request(base, "GET", "/api/counters?path=" + urllib.parse.quote(fixed), token)
        assert status == 200
        assert [f["counters"]["POSIX_BYTES_WRITTEN"] for f in answer["files"] if f["module"] == "POSIX"] == [100000]
    finally:
        os.kill(serve.pid, signal.SIGTERM)
        assert serve.wait(timeout=20) == 0
    assert not (job.trace / ".live" / "server").exists()


def test_ctl_without_a_live_channel_names_the_trace(tmp_path):
    p = ctl(tmp_path, "status", check=False)
    assert p.returncode != 0
    assert "%s: not a live trace" % tmp_path in p.stderr and "strata run --live" in p.stderr


def test_killed_launcher_leaves_the_job_running_and_the_trace_readable(tmp_path):
    j = Job(tmp_path, "orphan")
    os.kill(j.proc.pid, signal.SIGKILL)
    j.proc.wait(timeout=10)
    # The job goes on: its processes still report and obey strata ctl.
    status = json.loads(ctl(j.trace, "status", "--json").stdout)
    running = {p["pid"] for p in status["processes"] if p["state"] == "running"}
    assert {j.parent, j.child} <= running
    ctl(j.trace, "mode", "trace")
    (j.work / "stop").touch()
    wait_for("the orphaned job to finish", lambda: (j.work / "result.bin").exists() and
             not os.path.exists("/proc/%d" % j.parent), timeout=60)
    assert (j.work / "result.bin").stat().st_size == 1048576
    p = subprocess.run([strata_bin(), "analyze", "--json", str(j.trace)], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, text=True, timeout=300, env=clean_env())
    assert p.returncode == 0, p.stderr
    pids = {p["pid"] for p in json.loads(p.stdout).get("processes", [])}
    assert {j.parent, j.child} <= pids, pids


def run_strata(*args, timeout=120):
    return subprocess.run([strata_bin(), *map(str, args)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                          timeout=timeout, env=clean_env())


def test_run_live_options(tmp_path):
    with socket.socket() as s:
        s.bind(("127.0.0.2", 0))
        port = s.getsockname()[1]
    p = run_strata("run", "--live", "--listen", "127.0.0.2", "--port", port, "-o", tmp_path / "t", "--",
                   PYTHON, "-c", "import sys; sys.exit(3)")
    assert p.returncode == 3, p.stderr
    assert "strata: warning: live server listening on 127.0.0.2" in p.stderr
    assert "strata: live at http://127.0.0.2:%d/?token=" % port in p.stderr
    assert not (tmp_path / "t" / ".live" / "server").exists()
    assert (tmp_path / "t" / ".live").stat().st_mode & 0o777 == 0o700
    q = run_strata("run", "--live", "-q", "-o", tmp_path / "q", "--", PYTHON, "-c", "print('only this')")
    assert q.returncode == 0 and q.stdout == "only this\n" and q.stderr == "", q.stderr


def test_a_busy_port_leaves_the_job_alone(tmp_path):
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen(1)
        port = busy.getsockname()[1]
        p = run_strata("run", "--live", "--port", port, "-o", tmp_path / "t", "--", PYTHON, "-c", "print('ran')")
    assert p.returncode == 0 and p.stdout == "ran\n"
    assert "strata: warning: no live server (cannot listen on 127.0.0.1:%d" % port in p.stderr
    assert "strata ctl %s still works" % (tmp_path / "t") in p.stderr


def test_server_options_need_live(tmp_path):
    for args, message in ((["--port", "8080"], "--port and --listen need --live"),
                          (["--listen", "127.0.0.2"], "--port and --listen need --live")):
        p = run_strata("run", *args, "-o", tmp_path / "t", "--", PYTHON, "-c", "pass")
        assert p.returncode == 2 and message in p.stderr, p.stderr
        assert not (tmp_path / "t").exists()
    p = run_strata("ctl", tmp_path, "mode", "trace", "--for", "soon")
    assert p.returncode != 0 and "soon: not a duration" in p.stderr, p.stderr


def test_a_killed_process_reads_as_gone(tmp_path):
    j = Job(tmp_path, "gone")
    try:
        (j.work / "kill-child").touch()
        wait_for("the killed child gone", lambda: {p["pid"]: p["state"] for p in j.get("/api/status")["processes"]}
                 .get(j.child) == "gone")
        assert j.process(j.parent)["state"] == "running"
        status, answer = j.post_mode({"mode": "trace", "pid": j.child})
        assert status == 404 and "no running process with pid %d" % j.child in answer["error"]
        status, answer = j.post_mode({"mode": "trace"})
        assert status == 200 and answer["switched"] == [j.parent], answer
    finally:
        assert j.stop() == 0


def test_an_exec_replaces_the_slot_and_switches_once(tmp_path):
    j = Job(tmp_path, "exec", exec_first=True)
    try:
        mine = [p for p in j.get("/api/status")["processes"] if p["pid"] == j.parent]
        assert [p["state"] for p in mine] == ["replaced", "running"], mine
        assert mine[0]["command"].startswith(PYTHON + " -c import os")
        assert mine[1]["command"] == "%s %s %s" % (PYTHON, LOOP, j.work)
        status, answer = j.post_mode({"mode": "trace", "pid": j.parent})
        assert status == 200 and answer == {"switched": [j.parent], "pending": []}, answer
        assert [p["mode"] for p in j.get("/api/status")["processes"] if p["pid"] == j.parent][1] == "trace"
        status = json.loads(ctl(j.trace, "status", "--json").stdout)
        assert [p["state"] for p in status["processes"] if p["pid"] == j.parent] == ["replaced", "running"]
    finally:
        assert j.stop() == 0
