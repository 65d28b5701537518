"""The live page in headless Chromium against a real job under `strata run --live`.

Starts tests/web/live_workload.py (a parent and two forked workers doing file
I/O until a stop file appears) under `strata run --live`, reads the page's
address from <trace>/.live/server, and runs tests/web/live_page.test.mjs
(playwright-core driving /usr/bin/chromium) on it: the rows are the job's
processes, the switches stop and restart recording, the counters show the file
the job wrote, no console errors, the 401/403 states, and the lost connection
once the job ends. Skipped only when Chromium is not installed.

Environment: STRATA_BUILD_DIR (the build tree with bin/strata and
lib/libstrata.so; CTest sets it).
"""
import contextlib
import os
import subprocess
import sys
import time

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
WEB = os.path.join(REPO, "web")
CHROMIUM = "/usr/bin/chromium"
PYTHON = "/usr/bin/python3"
PAGE_TEST = os.path.join(HERE, "live_page.test.mjs")
WORKLOAD = os.path.join(HERE, "live_workload.py")

sys.path.insert(0, HERE)
import live_workload  # noqa: E402  (its constants: what the job writes)


def strata_bin():
    build = os.environ.get("STRATA_BUILD_DIR") or os.path.join(REPO, "build")
    return os.path.join(build, "bin", "strata")


def wait_for(what, fn, seconds):
    """fn() until it returns a truthy value; fails naming `what` after `seconds`."""
    end = time.monotonic() + seconds
    while True:
        v = fn()
        if v:
            return v
        if time.monotonic() > end:
            raise AssertionError("%s: not within %d s" % (what, seconds))
        time.sleep(0.1)


def pid_of(name, suffix):
    """The pid in a channel or trace file name <host>-<pid>-<start_mono_ns><suffix>
    (the host may hold dashes: the pid is the second field from the end)."""
    return int(name[: -len(suffix)].rsplit("-", 2)[1])


def slot_pids(trace):
    live = os.path.join(trace, ".live")
    try:
        names = os.listdir(live)
    except FileNotFoundError:
        return set()
    return {pid_of(n, ".live") for n in names if n.endswith(".live")}


def trace_pids(trace):
    return {pid_of(n, ".strata") for n in os.listdir(trace) if n.endswith(".strata")}


def read_text(path):
    try:
        with open(path) as f:
            return f.read()
    except FileNotFoundError:
        return None


def read_server_file(trace):
    """(url with token, token, launcher pid) from <trace>/.live/server, once complete."""
    try:
        with open(os.path.join(trace, ".live", "server")) as f:
            lines = f.read().split("\n")
    except FileNotFoundError:
        return None
    if len(lines) < 3 or not lines[2].strip():
        return None
    url, token = lines[0].strip(), lines[1].strip()
    if "token=" not in url:
        url += ("&" if "?" in url else "?") + "token=" + token
    return url, token, int(lines[2])


@pytest.fixture
def live_job(tmp_path):
    """A job under `strata run --live`; yields (trace dir, work dir, stop file,
    launcher Popen, stderr path) and ends it (stop file, then a bounded wait;
    SIGKILL by pid only if it overstays)."""
    strata = strata_bin()
    assert os.path.exists(strata), "build strata first: " + strata
    trace, work = tmp_path / "trace", tmp_path / "work"
    work.mkdir()
    stop = tmp_path / "stop"
    err_path = tmp_path / "launcher.err"
    env = {k: v for k, v in os.environ.items() if not k.startswith("STRATA_") and k != "LD_PRELOAD"}
    with open(err_path, "w") as err:
        job = subprocess.Popen([strata, "run", "--live", "-o", str(trace), "--", PYTHON, WORKLOAD, str(work), str(stop)],
                               stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err, env=env)
    try:
        yield str(trace), str(work), str(stop), job, str(err_path)
    finally:
        stop.touch()
        try:
            job.wait(timeout=60)
        except subprocess.TimeoutExpired:
            job.kill()
            job.wait(timeout=10)
            raise AssertionError("the job did not end within 60 s of its stop file")


def node_ready():
    return (subprocess.run(["node", "--version"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode == 0
            and os.path.isdir(os.path.join(WEB, "node_modules", "playwright-core")))


@pytest.mark.skipif(not os.access(CHROMIUM, os.X_OK), reason=CHROMIUM + " is not installed")
def test_live_page_in_chromium(live_job):
    assert node_ready(), "node and web/node_modules/playwright-core are needed: run web/build.sh"
    trace, work, stop, job, err_path = live_job
    workers = live_workload.WORKERS

    server = wait_for("the launcher's " + os.path.join(trace, ".live", "server"), lambda: read_server_file(trace), 30)
    url, token, launcher_pid = server
    assert launcher_pid == job.pid, "the server file names the launcher we started"
    printed = wait_for("the address on the launcher's stderr",
                       lambda: [l for l in open(err_path).read().splitlines() if "http://" in l], 10)
    assert token in printed[0] and url.split("?")[0] in printed[0], printed
    # The parent, the child that exits at once, the workers.
    pids = wait_for("a channel file for the parent, its early child and %d workers" % workers,
                    lambda: (lambda s: s if len(s) == 2 + workers else None)(slot_pids(trace)), 30)
    early_pid = int(wait_for("early.pid", lambda: read_text(os.path.join(work, "early.pid")), 30))
    assert early_pid in pids

    result = os.path.join(work, "result.bin")
    saved_page = os.path.join(os.path.dirname(work), "live.html")
    common = ["--pids", ",".join(map(str, sorted(pids))), "--exited-pids", str(early_pid), "--file", result,
              "--file-writes", str(live_workload.RESULT_WRITES),
              "--file-bytes", str(live_workload.RESULT_WRITES * live_workload.RESULT_CHUNK), "--chromium", CHROMIUM]
    run_page_checks(["--url", url, "--stop-file", stop, "--save-page", saved_page] + common)

    # The page's last check ends the job (its stop file): it must end cleanly,
    # and the processes the page listed are exactly the trace's.
    assert job.wait(timeout=60) == 0, open(err_path).read()
    assert trace_pids(trace) == pids
    with open(result, "rb") as f:
        assert len(f.read()) == live_workload.RESULT_WRITES * live_workload.RESULT_CHUNK

    # The same page over `strata serve` of the finished trace ("live": false).
    with serving(trace) as serve_url:
        run_page_checks(["--serve-url", serve_url, "--page-html", saved_page] + common)


def run_page_checks(argv):
    page = subprocess.run(["node", PAGE_TEST] + argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          text=True, timeout=300)
    print(page.stdout)
    assert page.returncode == 0, "the page's checks failed:\n" + page.stdout
    summary = page.stdout.strip().splitlines()[-1]
    assert '"failed":0' in summary, summary


@contextlib.contextmanager
def serving(trace):
    """`strata serve TRACE` for the block: yields its address (with token)
    and stops it with SIGTERM by pid, bounded."""
    err_path = trace + ".serve.err"
    with open(err_path, "w") as err:
        server = subprocess.Popen([strata_bin(), "serve", trace], stdin=subprocess.DEVNULL,
                                  stdout=subprocess.DEVNULL, stderr=err)
    try:
        def address():
            for line in open(err_path).read().splitlines():
                if " at http://" in line:
                    return line.split(" at ", 1)[1].split()[0]
            assert server.poll() is None, "strata serve ended: " + open(err_path).read()
            return None
        yield wait_for("the address strata serve prints", address, 60)
    finally:
        server.terminate()
        try:
            server.wait(timeout=10)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait(timeout=10)
