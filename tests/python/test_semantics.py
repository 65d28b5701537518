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
