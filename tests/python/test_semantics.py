"""strata's patches change nothing a program can observe: the same script
prints the same thing plain and under strata run (spawn and fork workers)."""
import json
import os
import subprocess

import pytest

import conftest


@pytest.mark.parametrize("method", ["fork", "spawn"])
def test_same_behaviour_traced_and_plain(tmp_path, method):
    script = os.path.join(conftest.SCRIPTS, "semantics.py")
    plain_dir, traced_dir = tmp_path / "plain", tmp_path / "traced"
    plain_dir.mkdir()
    traced_dir.mkdir()
    plain = subprocess.run([conftest.PYTHON, script, str(plain_dir), method], env=conftest.clean_env(),
                           stdout=subprocess.PIPE, text=True, check=True, timeout=300).stdout
    traced = conftest.run_traced(tmp_path / "trace", [conftest.PYTHON, script, str(traced_dir), method]).stdout
    a, b = json.loads(plain.strip().splitlines()[-1]), json.loads(traced.strip().splitlines()[-1])
    assert a == b
    assert a["err"] == ["Bad", "Caught Bad in DataLoader worker process 0."] or a["err"][0] == "Bad"
    assert a["inits"] == ["0 2 kept", "1 2 kept"] and a["worker_init_fn_after"] is True
    import strata
    df = strata.read_trace(tmp_path / "trace")
    assert int((df["name"] == "dataloader.batch").sum()) > 0   # it was traced


@pytest.mark.parametrize("fast", ["1", "0"])
def test_patched_functions_introspect_as_the_originals(tmp_path, fast):
    """np.load, np.fromfile, PIL.Image.open, torch.save and torch.load under
    the Python layer (strata._fast.IoCall, or the Python stand-in with
    STRATA_PY_FAST=0) answer introspection as the originals do: __defaults__,
    __kwdefaults__, __code__, __class__ (inspect.isfunction), no __wrapped__,
    vars(), dir(), inspect.signature/getsource, pickling by name. functools.wraps
    gave them none of __defaults__/__kwdefaults__/__code__ and a __wrapped__.
    Only type() tells them apart (tests/python/scripts/introspect.py)."""
    script = os.path.join(conftest.SCRIPTS, "introspect.py")
    out = {}
    for mode in ("plain", "traced"):
        d = tmp_path / mode
        d.mkdir()
        cmd = [conftest.PYTHON, script, str(d)]
        if mode == "plain":
            out[mode] = subprocess.run(cmd, env=conftest.clean_env(), stdout=subprocess.PIPE, text=True,
                                       check=True, timeout=300).stdout
        else:
            out[mode] = conftest.run_traced(tmp_path / "trace", cmd, env={"STRATA_PY_FAST": fast}).stdout
    assert out["traced"] == out["plain"]
    assert "  signature (file, mmap_mode=None, allow_pickle=False" in out["plain"]
    import strata
    df = strata.read_trace(tmp_path / "trace")
    assert int((df["name"] == "numpy.load").sum()) == 1   # patched, and recording


def _interpreters_that_count_threads_at_fork():
    """CPython 3.12 and later found on this machine (PATH, /usr, pyenv's
    versions): the interpreters that warn at a fork made with threads."""
    import glob
    import shutil
    names = ["python3.%d" % minor for minor in range(12, 20)]
    found = [shutil.which(n) for n in names]
    found += [os.path.join(d, n) for d in ("/usr/bin", "/usr/local/bin") for n in names]
    pyenv = os.environ.get("PYENV_ROOT") or os.path.expanduser("~/.pyenv")
    found += sorted(glob.glob(os.path.join(pyenv, "versions", "3.1[2-9]*", "bin", "python3")))
    usable = {}
    for path in filter(None, found):
        try:
            p = subprocess.run([path, "-c", "import sys; print(*sys.version_info[:2])"], stdout=subprocess.PIPE,
                               stderr=subprocess.DEVNULL, text=True, timeout=60, env=conftest.clean_env())
        except (OSError, subprocess.TimeoutExpired):
            continue
        version = tuple(int(x) for x in p.stdout.split()) if p.returncode == 0 else ()
        if version >= (3, 12):
            usable.setdefault(version, path)  # one interpreter per version
    return [usable[v] for v in sorted(usable)]


def test_fork_warns_under_strata_exactly_when_it_warns_without(tmp_path):
    """CPython 3.12+ counts the process's threads as os.fork returns and warns
    "This process (pid=N) is multi-threaded" when it finds more than one: it
    counted strata's writer thread, so every fork of a single-threaded program
    warned under strata (shown under -W default, -X dev, pytest). The writer
    now steps aside for the fork; a fork with a second thread of the
    program's still warns, naming the program's line (scripts/forkwarn.py:
    os.fork, os.forkpty, multiprocessing's fork, a fork beside a thread)."""
    interpreters = _interpreters_that_count_threads_at_fork()
    if not interpreters:
        pytest.skip("no CPython 3.12 or later on this machine")
    script = os.path.join(conftest.SCRIPTS, "forkwarn.py")
    import re
    for i, python in enumerate(interpreters):
        cmd = [python, "-W", "always", script]
        plain = subprocess.run(cmd, env=conftest.clean_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True, timeout=300)
        trace = tmp_path / ("trace%d" % i)
        traced = conftest.run_traced(trace, cmd, check=False)
        same_pid = lambda text: re.sub(r"pid=\d+", "pid=N", text)  # noqa: E731
        assert (traced.returncode, traced.stdout) == (plain.returncode, plain.stdout) == (0, "forked 5 times\n")
        program_stderr = "".join(line for line in traced.stderr.splitlines(True) if not line.startswith("strata: "))
        assert same_pid(program_stderr) == same_pid(plain.stderr), python
        warnings = [line for line in plain.stderr.splitlines() if "is multi-threaded" in line]
        assert len(warnings) == 1 and warnings[0].startswith(script + ":"), plain.stderr
        assert conftest.strata_info_json(trace)["processes"] == 6, python
