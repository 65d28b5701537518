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


def test_a_command_cut_short_says_so_in_the_header(tmp_path):
    # `timeout 60 strata run -- cmd`, a batch system's SIGTERM: strata passes
    # the signal on, the command dies of it, and its handler records it. The
    # report read as if the job had ended by itself.
    import signal
    import subprocess
    import time
    f = tmp_path / "f.txt"
    f.write_text("x\n")
    out = tmp_path / "trace"
    p = subprocess.Popen([conftest.strata_bin(), "run", "-q", "-o", str(out), "--", "tail", "-f", str(f)],
                         env=conftest.clean_env(), stdout=subprocess.DEVNULL)
    deadline = time.time() + 30
    while not list(out.glob("*.strata")) and time.time() < deadline:
        time.sleep(0.05)
    time.sleep(0.3)  # tail is past its start and waiting
    p.send_signal(signal.SIGTERM)
    assert p.wait(timeout=60) == -signal.SIGTERM
    pid = strata.trace_info(out)[0]["pid"]
    said = "the command (pid %d) was killed by SIGTERM" % pid
    text = conftest.strata_cli("analyze", str(out))
    assert 0 <= text.find("cut short: " + said) < text.index("Verdict:"), text  # in the header
    assert "cut short:      " + said in conftest.strata_cli("info", str(out))
    import json
    assert json.loads(conftest.strata_cli("analyze", "--json", str(out)))["cut_short"] == said
    assert json.loads(conftest.strata_cli("info", "--json", str(out)))["cut_short"] == said
    # a run that ended by itself says nothing
    conftest.run_traced(tmp_path / "whole", ["cat", str(f)])
    assert "cut short" not in conftest.strata_cli("analyze", str(tmp_path / "whole"))
    assert json.loads(conftest.strata_cli("info", "--json", str(tmp_path / "whole")))["cut_short"] is None
