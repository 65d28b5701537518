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
