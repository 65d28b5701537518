"""`strata analyze` of a real PyTorch job (the example at tiny size, 3 epochs,
2 DataLoader workers) fits a screen: at most 46 lines (4 are kept for the
verdict) and 100 columns, with the demo's options too; the interpreter's
libraries are summed in one line and listed with --all (issue 10 §3)."""
import os
import shutil
import subprocess
import tempfile

import pytest

import conftest

MAX_LINES = 50  # issue 10: about 50 lines, verdict included
MAX_COLUMNS = 100


@pytest.fixture(scope="module")
def trace():
    # Paths as short as the demo's (/tmp/strata-demo/data/train/): pytest's
    # temporary paths are 30 columns longer and hold "test", a validation word.
    top = tempfile.mkdtemp(prefix="strata-rs-", dir="/tmp")
    try:
        data, out = os.path.join(top, "data"), os.path.join(top, "trace")
        subprocess.run([conftest.PYTHON, conftest.EXAMPLE, "--data", data, "--tiny", "--generate-only"],
                       check=True, env=conftest.clean_env(), timeout=300)
        conftest.run_traced(out, [conftest.PYTHON, conftest.EXAMPLE, "--data", data, "--tiny",
                                  "--epochs", "3", "--ckpt", os.path.join(top, "ckpt")])
        yield out
    finally:
        shutil.rmtree(top, ignore_errors=True)


def analyze(*args):
    return conftest.strata_cli("analyze", *args)


ENV_LINE = "  environment (libraries, .pyc, /usr, /dev): "


def env_files(text):
    """The file count of the default report's one environment line."""
    lines = [l for l in text.splitlines() if l.startswith(ENV_LINE)]
    assert len(lines) == 1, text
    return int(lines[0][len(ENV_LINE):].split()[0])


def check_fits(text):
    lines = text.splitlines()
    assert len(lines) <= MAX_LINES, text
    wide = [l for l in lines if len(l) > MAX_COLUMNS]  # str: code points, as a terminal counts
    assert wide == [], text


def test_default_report_fits_a_screen(trace):
    text = analyze(trace)
    check_fits(text)
    assert "== Deep learning == 3 epochs" in text
    # The libraries of the interpreter and of torch: one line, not listed.
    assert env_files(text) > 50, text
    assert not any(l.startswith("  /usr/") for l in text.splitlines()), text
    paths = [l for l in text.splitlines() if l.startswith("  /")]
    assert not any(".pyc" in l or "site-packages" in l or "dist-packages" in l for l in paths), text


def test_demo_options_fit_a_screen(trace):
    # The demo's command: the staging section the user asked for comes on top.
    text = analyze(trace, "--by", "epoch", "--stage-capacity", "64MiB")
    check_fits(text)
    assert "/etc/" not in text  # environment files are not staging candidates


def test_all_lists_the_environment(trace):
    text = analyze(trace, "--all")
    listed = [l for l in text.splitlines() if l.startswith("  /usr/")]
    # Every environment file of the default report's line has its entry now.
    assert len(listed) > 0
    assert ENV_LINE not in text
    assert all(len(l) <= MAX_COLUMNS for l in text.splitlines())
    assert env_files(analyze(trace)) >= len(listed)


def test_path_lists_the_files_under_it(trace):
    import json
    under = [f["path"] for f in json.loads(analyze(trace, "--json"))["files"] if f["path"].startswith("/usr/")]
    assert len(under) > 5
    text = analyze(trace, "--path", "/usr/")
    listed = [l.strip() for l in text.splitlines() if l.startswith("  /")]
    assert len(listed) == 3, text  # --top's default
    for entry in listed:
        if "  (" in entry:
            assert entry.split("  (")[0] in under, (entry, text)
        else:  # a long path the report wrapped: its first line starts it
            assert any(p.startswith(entry) for p in under), (entry, text)
    assert "  ... %d more (--top N, --all)\n" % (len(under) - 3) in text
    on_json = json.loads(analyze(trace, "--json", "--path", "/usr/"))["files"]
    assert sorted(f["path"] for f in on_json) == sorted(under)


@pytest.mark.parametrize("kind,procs", [("npy", "one"), ("npz", "one"), ("npy", "fork")])
def test_reread_factor_split_in_opens_and_per_open(kind, procs, tmp_path):
    # 20 files read whole in each of 3 passes: the re-read factor is 3 opens
    # per file times what one open reads; numpy reads an .npz archive's index
    # again (more than the file per open). "fork": each pass in its own
    # process, so the counts are merged over 4 process files.
    script = os.path.join(conftest.SCRIPTS, "reread_job.py")
    data, trace = str(tmp_path / "data"), str(tmp_path / "trace")
    subprocess.run([conftest.PYTHON, script, data, "gen", kind, "20"], check=True, timeout=120)
    conftest.run_traced(trace, [conftest.PYTHON, script, data, "read", "3"] + (["fork"] if procs == "fork" else []))
    import json
    report = json.loads(analyze(trace, "--json"))
    dirs = [d for d in report["dataset_dirs"] if d["dir"] == data + "/"]
    assert len(dirs) == 1, report["dataset_dirs"]
    d = dirs[0]
    # np.load of an .npy file opens it, then numpy.fromfile fdopens a dup of
    # the descriptor: 2 opens per load, one of them a new pass over the file.
    assert (d["files"], d["file_opens"]) == (20, 60)
    assert d["opens"] == (120 if kind == "npy" else 60)
    size = sum(os.path.getsize(os.path.join(data, n)) for n in os.listdir(data))
    assert d["extent"] == size
    assert d["reread"] == pytest.approx(d["bytes_read"] / size, rel=1e-5)
    assert d["reread_per_open"] == pytest.approx(d["reread"] / 3, rel=1e-5)
    if kind == "npy":
        # Python's buffered read of the header (4 KiB) and then the array
        # again through the fdopen'ed stream: ~2x the file per pass.
        assert d["reread_per_open"] > 1.5
    else:
        assert d["reread_per_open"] > 1.05  # the zip index read again: more than the file per open
    text = analyze(trace, "--section", "files")
    assert "(x%.2f = 3.00 opens/file x %.2f/open)" % (d["reread"], d["reread_per_open"]) in text, text
