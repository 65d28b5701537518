"""`strata efg` and `strata analyze`'s structure section on real PyTorch
DataLoader jobs: scripts/efg_loader.py (reads in the main process) gives the
epoch loop and the step loop nested in it with the right counts, per entry,
from POSIX events alone (--no-python) and with the Python layer's events; the
demo's job (examples/pytorch/train.py, worker processes) gives them from the
main process's DataLoader events."""
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
            # Every entry made the same trips: counted per entry, not divided.
            assert (loop["trips_min"], loop["trips_max"]) == (STEPS, STEPS), loop
            assert (parent["trips_min"], parent["trips_max"]) == (EPOCHS, EPOCHS), parent
            assert 0 <= parent["time_share"] <= 1, parent["time_share"]
    assert found, json.dumps(graphs["processes"], indent=1)[:20000]
    assert any(data in files for _, files in found), found

    # strata analyze's structure section shows the same main loop.
    report = json.loads(conftest.strata_cli("analyze", "--json", str(out)))
    mains = [g["main_loop"] for g in report["structure"] if g["pids"][0] in {pid for pid, _ in found}]
    assert mains, report["structure"]
    for main in mains:
        assert (main["entries"], main["iterations"]) == (1, EPOCHS), main
        assert (main["trips_min"], main["trips_max"]) == (EPOCHS, EPOCHS), main
        assert main["structure"].startswith("loop x%d {" % EPOCHS), main["structure"]
        assert " loop x%d {" % STEPS in main["structure"], main["structure"]
        assert 0 <= main["time_share"] <= 1, main


def first_process(groups):
    """The group of the job's first process (the training script: its
    DataLoader workers are forked later, with higher pids)."""
    first = min(pid for g in groups for pid in g["pids"])
    return next(g for g in groups if first in g["pids"])


def test_demo_job_epoch_loop_nests_training_steps(tmp_path, tiny_data):
    """The demo's job (examples/pytorch/train.py: 2 DataLoader worker
    processes per pass, validation after every epoch, a checkpoint per epoch,
    the checkpoint loaded back at the end) with the Python layer: the main
    process does no I/O per step itself, its DataLoader events make the step
    loop; the epoch loop holds it, 8 training steps (64 images, batch 8) per
    epoch, 2 epochs."""
    out = tmp_path / "trace"
    conftest.run_traced(out, [conftest.PYTHON, conftest.EXAMPLE, "--data", str(tiny_data), "--tiny",
                              "--ckpt", str(tmp_path / "ckpt")])
    epochs, steps = 2, 8
    graphs = json.loads(conftest.strata_cli("efg", str(out), "--json"))
    proc = first_process(graphs["processes"])
    assert proc["main_loop"] >= 0, proc["structure"][:3000]
    main = next(l for l, _ in loops_of(proc) if l["id"] == proc["main_loop"])
    assert (main["entries"], main["iterations"], main["trips_min"], main["trips_max"]) == (1, epochs, epochs, epochs), \
        proc["structure"][:3000]
    train_steps = [l for l, _ in loops_of({"loops": main["loops"]})
                   if node(proc, l["header"])["function"] == "dataloader.next"
                   and node(proc, l["header"])["role"] == "loader=0"]
    assert len(train_steps) == 1, proc["structure"][:3000]
    step = train_steps[0]
    assert (step["entries"], step["iterations"], step["trips_min"], step["trips_max"]) == \
        (epochs, epochs * steps, steps, steps), step
    assert 0 <= main["time_share"] <= 1, main

    report = json.loads(conftest.strata_cli("analyze", "--json", str(out)))
    group = first_process(report["structure"])
    line = group["main_loop"]["structure"]
    assert line.startswith("loop x%d {" % epochs), line
    assert "loop x%d { dataloader.next@loader0" % steps in line, line
    assert (group["main_loop"]["trips_min"], group["main_loop"]["trips_max"]) == (epochs, epochs)
