"""The HTML report of a real PyTorch job in headless Chromium.

Traces the example at tiny size (2 DataLoader workers, 2 epochs, validation
after each and a final evaluation), writes `strata analyze --html`, and runs
tests/web/report_page.test.mjs on it: every view drawn and labelled, no lane
left out, a timeline row per process named "training loop" and "DataLoader
worker N (train|validation, epoch E)", wheel/drag/button zoom, no console
output. Skipped only when Chromium is not installed.

Environment: STRATA_BUILD_DIR (CTest sets it).
"""
import json
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
CHROMIUM = "/usr/bin/chromium"
PAGE_TEST = os.path.join(HERE, "report_page.test.mjs")
sys.path.insert(0, os.path.join(REPO, "tests", "python"))
import conftest  # noqa: E402  (tests/python's helpers: run_traced, strata_cli)
import strata  # noqa: E402  (python/, put on sys.path by conftest)

EPOCHS, WORKERS = 2, 2


@pytest.fixture(scope="module")
def report():
    if not os.access(CHROMIUM, os.X_OK):
        pytest.skip(CHROMIUM + " is not installed")
    # Not under pytest's temporary directory: its path holds "test", a word
    # that makes every data file a validation file (docs/analysis.md, File roles).
    top = tempfile.mkdtemp(prefix="strata-rp-", dir="/tmp")
    try:
        yield make_report(pathlib.Path(top))
    finally:
        shutil.rmtree(top, ignore_errors=True)


def make_report(tmp):
    data, out = tmp / "data", tmp / "trace"
    subprocess.run([conftest.PYTHON, conftest.EXAMPLE, "--data", str(data), "--tiny", "--generate-only"],
                   check=True, env=conftest.clean_env(), timeout=300)
    conftest.run_traced(out, [conftest.PYTHON, conftest.EXAMPLE, "--data", str(data), "--tiny",
                              "--epochs", str(EPOCHS), "--ckpt", str(tmp / "ckpt")])
    page = tmp / "r.html"
    conftest.strata_cli("analyze", str(out), "--html", str(page))
    return out, page


def test_report_page_in_chromium(report):
    out, page = report
    pids = {p["pid"] for p in strata.trace_info(out)}
    names = ["training loop"]
    # Workers of the training loader in each epoch, of the validation loader
    # after each; the last epoch's validation and the final evaluation both
    # start workers of the validation loader in the last epoch: their pids
    # tell them apart.
    for epoch in range(EPOCHS):
        names += ["DataLoader worker %d (train, epoch %d)" % (w, epoch) for w in range(WORKERS)]
    for epoch in range(EPOCHS - 1):
        names += ["DataLoader worker %d (validation, epoch %d)" % (w, epoch) for w in range(WORKERS)]
    workers = sorted((p for p in strata.trace_info(out) if "dataloader_worker" in p["metadata"]),
                     key=lambda p: p["start_mono_ns"])
    assert len(workers) == (2 * EPOCHS + 1) * WORKERS
    names += ["DataLoader worker %s (validation, epoch %d) [pid %d]" % (p["metadata"]["dataloader_worker"], EPOCHS - 1, p["pid"])
              for p in workers[-2 * WORKERS:]]  # the last two passes of the validation loader
    cmd = ["node", PAGE_TEST, "--page", str(page), "--processes", str(len(pids)), "--loops", "1"]
    for n in names:
        cmd += ["--name", n]
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=180)
    print(p.stdout)
    assert p.returncode == 0, p.stdout
    assert json.loads(p.stdout.strip().splitlines()[-1]) == {"failures": 0}
    # --json carries the same names, one per process.
    report = json.loads(conftest.strata_cli("analyze", str(out), "--json"))
    assert set(report["process_names"]) == {str(pid) for pid in pids}
    assert set(names) <= set(report["process_names"].values())


def test_hundreds_of_processes(tmp_path):
    """A synthetic job of 300 processes (bench/gen_trace): a timeline and a
    heatmap row each, every lane drawn, zoom works, and the page stays small."""
    if not os.access(CHROMIUM, os.X_OK):
        pytest.skip(CHROMIUM + " is not installed")
    gen = os.path.join(conftest.build_dir(), "bin", "gen_trace")
    if not os.access(gen, os.X_OK):
        pytest.skip(gen + " is not built (STRATA_BUILD_BENCH=OFF)")
    out, page = tmp_path / "trace", tmp_path / "r.html"
    subprocess.run([gen, "-o", str(out), "-n", "600k", "-p", "300", "-t", "2", "-j", "2", "--force"],
                   check=True, stdout=subprocess.DEVNULL, timeout=300)
    conftest.strata_cli("analyze", str(out), "--html", str(page))
    size = os.path.getsize(page)
    assert size < 5 * 1000 * 1000, size
    p = subprocess.run(["node", PAGE_TEST, "--page", str(page), "--processes", "300"],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=180)
    print(p.stdout)
    assert p.returncode == 0, p.stdout


def test_critical_path_of_each_rank(tmp_path):
    """Two torchrun-style ranks (tests/python/scripts/ranks_launch.py), each a
    training loop with 2 DataLoader workers: the page draws a critical-path
    bar and a table row per rank, beside every other view."""
    if not os.access(CHROMIUM, os.X_OK):
        pytest.skip(CHROMIUM + " is not installed")
    top = pathlib.Path(tempfile.mkdtemp(prefix="strata-rp-", dir="/tmp"))  # no "test" in the paths (see report())
    try:
        data, out, page = top / "data", top / "trace", top / "r.html"
        data.mkdir()
        for i in range(8):
            (data / ("s%04d.bin" % i)).write_bytes(bytes([i]) * 4096)
        conftest.run_traced(out, [conftest.PYTHON, os.path.join(conftest.SCRIPTS, "ranks_launch.py"), "--ranks", "2", "--",
                                  conftest.PYTHON, os.path.join(conftest.SCRIPTS, "epochs_job.py"), "--data", str(data),
                                  "--epochs", "2", "--workers", "2", "--step-ms", "20"], timeout=300)
        conftest.strata_cli("analyze", str(out), "--html", str(page))
        pids = {p["pid"] for p in strata.trace_info(out)}
        p = subprocess.run(["node", PAGE_TEST, "--page", str(page), "--processes", str(len(pids)), "--loops", "2",
                            "--name", "training loop (rank 0)", "--name", "training loop (rank 1)"],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=180)
        print(p.stdout)
        assert p.returncode == 0, p.stdout
        html = page.read_text()
        assert "Chart.js" not in html  # the page draws its own charts
    finally:
        shutil.rmtree(top, ignore_errors=True)
