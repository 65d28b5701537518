"""The traced program's garbage collections run where they run without strata.

CPython starts collections by counting allocations; the Python layer's own
objects (its modules at start-up, the torch and numpy patches at their import)
used to move every later collection of the program, which put one more full
collection (a copy of the whole inherited heap) into every DataLoader worker
of a short job (issue 8 section 6, docs/python.md). The layer now hides what
it allocates from that count. Compared here with the same program run plain:
the collections of each generation after importing numpy and torch (both
patched), the middle and old generations' counters, the thresholds the
program sees once it runs, and that a program's own settings win."""
import json
import os
import subprocess

import pytest

from conftest import PYTHON, run_traced

pytest.importorskip("numpy")
pytest.importorskip("torch")

PROGRAM = r'''
import gc, json, sys
def state():
    return {"collections": [s["collections"] for s in gc.get_stats()],
            "older_counts": list(gc.get_count()[1:]),
            "threshold": list(gc.get_threshold()),
            "enabled": gc.isenabled(), "callbacks": len(gc.callbacks)}
out = {}
if sys.argv[1] == "imports":
    import numpy, torch
    out["after_imports"] = state()
    keep = [[] for _ in range(3000)]  # a few young periods of the program's own objects
    out["later"] = state()
elif sys.argv[1] == "own_threshold":
    gc.set_threshold(500, 5, 5)
    import numpy, torch
    keep = [[] for _ in range(3000)]
    out["later"] = state()
elif sys.argv[1] == "disabled":
    gc.disable()
    import numpy, torch
    out["later"] = state()
print(json.dumps(out))
'''


def plain_env():
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("STRATA_") and k not in ("LD_PRELOAD", "PYTHONPATH")}
    return env


def run_both(tmp_path, mode):
    script = tmp_path / "gc_program.py"
    script.write_text(PROGRAM)
    plain = subprocess.run([PYTHON, str(script), mode], env=plain_env(), capture_output=True,
                           text=True, timeout=300)
    assert plain.returncode == 0, plain.stderr[-2000:]
    traced = run_traced(tmp_path / "trace", [PYTHON, str(script), mode])
    return json.loads(plain.stdout), json.loads(traced.stdout.strip().splitlines()[-1])


def test_collections_after_patched_imports_are_the_programs(tmp_path):
    plain, traced = run_both(tmp_path, "imports")
    # Before the layer hid its objects: one more young collection by the
    # program's start, so the middle counter one step ahead from then on.
    # Right after torch's import the threshold still holds what the patches
    # added, until the next young collection (docs/python.md).
    for state in (plain, traced):
        assert state["after_imports"].pop("threshold")[1:] == [10, 10]
    assert traced["after_imports"] == plain["after_imports"], (plain, traced)
    assert traced["later"] == plain["later"], (plain, traced)
    assert traced["later"]["threshold"] == [700, 10, 10]
    assert traced["later"]["callbacks"] == 0


def test_threshold_the_program_sets_is_kept(tmp_path):
    plain, traced = run_both(tmp_path, "own_threshold")
    assert plain["later"]["threshold"] == [500, 5, 5]
    assert traced["later"]["threshold"] == [500, 5, 5]


def test_collector_the_program_disables_stays_off(tmp_path):
    plain, traced = run_both(tmp_path, "disabled")
    assert plain["later"]["enabled"] is False
    assert traced["later"] == plain["later"], (plain, traced)
