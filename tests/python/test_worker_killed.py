"""A DataLoader worker killed by SIGKILL mid-epoch: the job goes on, the trace
stays readable, and what the worker flushed before dying is all there."""
import os

import pytest

import conftest
import strata

N, KILL_AT = 20, 8


@pytest.mark.parametrize("method", ["fork", "spawn"])
def test_worker_killed_mid_epoch(tmp_path, method):
    data = tmp_path / "data"
    data.mkdir()
    for i in range(N):
        (data / ("f%d" % i)).write_bytes(b"x" * (100 + i))
    out = tmp_path / "trace"
    p = conftest.run_traced(out, [conftest.PYTHON, os.path.join(conftest.SCRIPTS, "kill_worker.py"),
                                  str(data), str(N), str(KILL_AT), method])
    assert "caught" in p.stdout
    df = strata.read_trace(out)
    infos = {i["pid"]: i for i in strata.trace_info(out)}
    main = int(df.loc[df["name"] == "worker_death_seen", "pid"].iloc[0])
    assert infos[main]["has_footer"]
    # worker 0 got samples 0, 2, 4, ... and died at KILL_AT after flushing
    opens = df[(df["cat"] == "POSIX") & df["name"].astype(str).str.startswith("open")
               & df["path"].astype(str).str.startswith(str(data) + "/")]
    w0 = opens[opens["worker"] == 0]
    dead_pid = int(w0["pid"].iloc[0])
    assert not infos[dead_pid]["has_footer"]
    assert sorted(w0["path"].tolist()) == sorted(str(data / ("f%d" % i)) for i in range(0, KILL_AT, 2))
    assert (w0["step"] == w0["path"].astype(str).map(lambda s: int(os.path.basename(s)[1:]))).all()
    # the other worker ended normally and kept everything it did
    w1 = opens[opens["worker"] == 1]
    assert infos[int(w1["pid"].iloc[0])]["has_footer"]
    assert set(range(1, KILL_AT, 2)) <= {int(os.path.basename(s)[1:]) for s in w1["path"]}
