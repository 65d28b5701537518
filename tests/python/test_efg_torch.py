"""`strata efg` on a real PyTorch DataLoader job (scripts/efg_loader.py):
the epoch loop and the step loop nested in it come out with the right counts
from POSIX events alone (--no-python) and with the Python layer's events."""
import json
import os
import subprocess

import numpy as np
import pytest

import conftest

EPOCHS, STEPS = 3, 8
SCRIPT = os.path.join(conftest.SCRIPTS, "efg_loader.py")


def trace(tmp_path, python_layer):
    data, ckpt = tmp_path / "samples", tmp_path / "ckpts"
    data.mkdir()
    ckpt.mkdir()
    for i in range(STEPS):
        np.save(data / ("s%03d.npy" % i), np.full((1, 64), i, dtype=np.float32))
    out = tmp_path / "trace"
    cmd = [conftest.PYTHON, SCRIPT, str(data), str(ckpt), str(EPOCHS), str(STEPS)]
    if python_layer:
        conftest.run_traced(out, cmd)
    else:
        env = conftest.clean_env()
        p = subprocess.run([conftest.strata_bin(), "run", "--no-python", "-q", "-o", str(out), "--"] + cmd,
                           env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=600)
        assert p.returncode == 0, p.stderr
    return out, str(data)


def loops_of(proc):
    stack = [(l, None) for l in proc["loops"]]
    while stack:
        loop, parent = stack.pop()
        yield loop, parent
        stack.extend((c, loop) for c in loop["loops"])


def node(proc, i):
    return next(n for n in proc["nodes"] if n["id"] == i)


@pytest.mark.parametrize("python_layer", [False, True], ids=["posix_only", "with_python_layer"])
def test_epoch_and_step_loops(tmp_path, python_layer):
    out, data = trace(tmp_path, python_layer)
    graphs = json.loads(conftest.strata_cli("efg", str(out), "--json"))
    found = []
    for proc in graphs["processes"]:
        for loop, parent in loops_of(proc):
            # The step loop: entered once per epoch, one trip per sample, reading the data set.
            if loop["entries"] != EPOCHS or loop["iterations"] != EPOCHS * STEPS:
                continue
            if parent is None or parent["entries"] != 1 or parent["iterations"] != EPOCHS:
                continue
            files = {node(proc, n)["file"] for n in loop["body"]}
            found.append((proc["pid"], files))
            # The epoch loop is the main loop (start-up imports form irregular loops).
            assert proc["main_loop"] == parent["id"], proc["structure"][:2000]
    assert found, json.dumps(graphs["processes"], indent=1)[:20000]
    assert any(data in files for _, files in found), found
