"""strata.start()/stop()/tracing(): tracing a Python process `strata run`
did not start (python/strata/__init__.py, src/runtime/attach.cc, got.cc).

Each workload runs in a fresh interpreter without LD_PRELOAD or STRATA_*
(scripts/attach_work.py); the trace is read back with `strata cat`."""
import collections
import json
import os
import subprocess

import pytest

from conftest import PYDIR, PYTHON, SCRIPTS, build_dir, clean_env, run_traced, strata_cli, strata_info_json

WORK = os.path.join(SCRIPTS, "attach_work.py")


def ctypes_lib():
    return os.environ.get("STRATA_TEST_CTYPES_LIB") or os.path.join(build_dir(), "lib", "libstrata_test_ctypes_io.so")


def run_attached(*args, check=True):
    """attach_work.py in a plain interpreter: strata.start finds libstrata of
    this build through STRATA_LIB."""
    env = clean_env({"STRATA_LIB": os.path.join(build_dir(), "lib", "libstrata.so")})
    p = subprocess.run([PYTHON, WORK] + [str(a) for a in args], env=env, stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, text=True, timeout=300)
    if check:
        assert p.returncode == 0, p.stdout + p.stderr
    return p


def events(trace):
    return [json.loads(line) for line in strata_cli("cat", str(trace)).splitlines() if line.strip()]


def summary(evs, work):
    """Events on files under `work`: count and bytes (ret of data calls) per function."""
    count, nbytes = collections.Counter(), collections.Counter()
    work = str(work)
    for e in evs:
        p = e.get("path", "")
        if p == work or p.startswith(work + "/"):
            count[e["name"]] += 1
            if "size" in e and e.get("ret", 0) > 0:
                nbytes[e["name"]] += e["ret"]
    return count, nbytes


def on_file(evs, path):
    return [e for e in evs if e.get("path") == str(path)]


def test_same_counts_as_strata_run(tmp_path):
    run_work, attach_work = tmp_path / "run", tmp_path / "attach"
    run_work.mkdir()
    attach_work.mkdir()
    run_traced(tmp_path / "t-run", [PYTHON, WORK, "run", str(run_work)])
    run_attached("attach", attach_work, tmp_path / "t-attach")
    a_count, a_bytes = summary(events(tmp_path / "t-run"), run_work)
    b_count, b_bytes = summary(events(tmp_path / "t-attach"), attach_work)
    assert a_count == b_count
    assert a_bytes == b_bytes
    # The workload, exactly: data.bin written in 3 x 1000, read in 2000 + 1000,
    # child.txt written by the forked child in 1000 + 500.
    assert b_count["write"] == 5 and b_bytes["write"] == 4500
    assert b_count["read"] == 3 and b_bytes["read"] == 3000  # 2000, 1000, 0
    assert b_count["rename"] == 1 and b_count["unlink"] == 1


def test_nothing_before_start_or_after_stop(tmp_path):
    p = run_attached("attach", tmp_path, tmp_path / "t")
    assert p.stdout.splitlines()[0] == "start True True"
    assert p.stdout.splitlines()[-1] == "stop True False"
    evs = events(tmp_path / "t")
    assert on_file(evs, tmp_path / "before.txt") == []
    assert on_file(evs, tmp_path / "after.txt") == []
    assert len([e for e in on_file(evs, tmp_path / "data.bin") if e["name"] == "write"]) == 3
    assert os.path.getsize(tmp_path / "before.txt") == 10
    assert os.path.getsize(tmp_path / "after.txt") == 20
    # The trace works with the tools as usual.
    report = json.loads(strata_cli("analyze", "--json", str(tmp_path / "t")))
    assert isinstance(report, dict) and report


def test_output_and_files_same_as_untraced(tmp_path):
    plain, attached = tmp_path / "plain", tmp_path / "attached"
    plain.mkdir()
    attached.mkdir()
    p = run_attached("run", plain)
    q = run_attached("context", attached, tmp_path / "t")
    assert q.stdout == p.stdout + "after False\n"
    assert q.stderr == p.stderr == ""
    assert (attached / "child.txt").read_bytes() == (plain / "child.txt").read_bytes()
    assert sorted(os.listdir(attached)) == sorted(os.listdir(plain)) == ["child.txt"]


def test_forked_child_keeps_tracing(tmp_path):
    run_attached("attach", tmp_path, tmp_path / "t")
    info = strata_info_json(tmp_path / "t")
    assert info["processes"] == 2
    assert info["attached"] == 2
    writes = [e for e in on_file(events(tmp_path / "t"), tmp_path / "child.txt") if e["name"] == "write"]
    assert [e["ret"] for e in writes] == [1000, 500]
    parent = {e["pid"] for e in on_file(events(tmp_path / "t"), tmp_path / "data.bin")}
    assert len(parent) == 1 and writes[0]["pid"] not in parent


def test_ctypes_library_loaded_after_start(tmp_path):
    lib = ctypes_lib()
    assert os.path.exists(lib), lib
    p = run_attached("ctypes", tmp_path, tmp_path / "t", lib)
    assert p.stdout == "wrote 700 read 700\nafter stop wrote 200\n"
    evs = events(tmp_path / "t")
    names = collections.Counter(e["name"] for e in on_file(evs, tmp_path / "lib.bin"))
    assert names["write"] == 7
    assert names["fread"] == 1
    assert names["open"] + names["open64"] == 1
    assert names["fopen"] + names["fopen64"] == 1
    assert on_file(evs, tmp_path / "late.bin") == []


def test_start_stop_start_gives_two_traces(tmp_path):
    run_attached("twice", tmp_path, tmp_path / "t1", tmp_path / "t2")
    one = summary(events(tmp_path / "t1"), tmp_path / "one")
    two = summary(events(tmp_path / "t2"), tmp_path / "two")
    assert one[0]["write"] == 5
    assert one == two
    assert summary(events(tmp_path / "t1"), tmp_path / "two")[0] == collections.Counter()
    assert summary(events(tmp_path / "t2"), tmp_path / "one")[0] == collections.Counter()
    for t in ("t1", "t2"):
        info = strata_info_json(tmp_path / t)
        assert info["processes"] == 2 and info["incomplete_files"] == 0


def test_notebook_cells(tmp_path):
    p = run_attached("notebook", tmp_path, tmp_path / "t1", tmp_path / "t2")
    assert p.stdout == "cell3 2000\n"
    e1, e2 = events(tmp_path / "t1"), events(tmp_path / "t2")
    assert [e["ret"] for e in on_file(e1, tmp_path / "cell2.txt") if e["name"] == "write"] == [1000, 1000]
    assert sum(e["ret"] for e in on_file(e1, tmp_path / "cell2.txt") if e["name"] == "read") == 2000
    assert on_file(e1 + e2, tmp_path / "between.txt") == []
    assert [e["ret"] for e in on_file(e2, tmp_path / "cell7.txt") if e["name"] == "write"] == [1000] * 3
    assert on_file(e1, tmp_path / "cell7.txt") == []


def test_exec_child_traced_only_while_started(tmp_path):
    p = run_attached("exec", tmp_path, tmp_path / "t")
    assert p.stdout == "children 0 0 False\n"
    evs = events(tmp_path / "t")
    writes = [e for e in on_file(evs, tmp_path / "exec.txt") if e["name"] == "write"]
    assert [e["ret"] for e in writes] == [4321]
    assert on_file(evs, tmp_path / "exec2.txt") == []
    info = strata_info_json(tmp_path / "t")
    assert info["processes"] == 2 and info["attached"] == 1  # the child was preloaded


def test_python_layer_switches_on(tmp_path):
    pytest.importorskip("numpy")
    p = run_attached("api", tmp_path, tmp_path / "t")
    assert p.stdout == "loaded 80\n"
    evs = events(tmp_path / "t")
    regions = [e for e in evs if e["name"] == "cell"]
    assert len(regions) == 1 and regions[0]["cat"] == "notebook"
    assert [e for e in evs if e["name"] == "after"] == []
    assert len([e for e in evs if e["name"] == "numpy.load" and e["cat"] == "numpy"]) == 1


def test_start_under_strata_run_is_refused(tmp_path):
    code = ("import strata\ntry:\n    strata.start('x')\nexcept RuntimeError as e:\n    print('refused', e)\n")
    p = run_traced(tmp_path / "t", [PYTHON, "-c", code])
    assert p.stdout.startswith("refused strata.start: this process is traced already")


def test_thread_writing_through_start_and_stop(tmp_path):
    traces = [tmp_path / ("t%d" % i) for i in range(3)]
    p = run_attached("threads", tmp_path, *traces)
    assert p.stdout == "thread wrote True\n"
    for t in traces:
        evs = events(t)
        assert [e["ret"] for e in on_file(evs, tmp_path / (t.name + ".txt")) if e["name"] == "write"] == [1000]
        others = [u for u in traces if u != t]
        assert all(on_file(evs, tmp_path / (u.name + ".txt")) == [] for u in others)
        assert strata_info_json(t)["incomplete_files"] == 0


def test_misuse(tmp_path):
    p = run_attached("errors", tmp_path, tmp_path / "t")
    assert p.stdout == ("stop before start False\n"
                        "second start: strata.start: this process is traced already (strata run or start())\n"
                        "stop True stop again False\n"
                        "environment restored True\n")
    assert strata_info_json(tmp_path / "t")["incomplete_files"] == 0


def test_dataloader_patched_when_torch_imported_before_start(tmp_path):
    pytest.importorskip("torch")
    p = run_attached("torch", tmp_path, tmp_path / "t")
    assert p.stdout == "batches [200, 200, 200, 200]\n"
    evs = events(tmp_path / "t")
    names = collections.Counter(e["name"] for e in evs if e["cat"] == "dataloader")
    assert names["dataloader.iter"] == 1 and names["dataloader.epoch"] == 1
    assert names["dataloader.next"] == 4
    # The step tag reaches the reads of each sample: samples 2i and 2i+1 in step i.
    for i in range(8):
        reads = [e for e in on_file(evs, tmp_path / ("s%d.bin" % i)) if e["name"] == "read"]
        assert [e["tags"].get("step") for e in reads] == [i // 2, i // 2]
        assert sum(e["ret"] for e in reads) == 100


def test_exit_without_stop_finishes_the_trace(tmp_path):
    run_attached("nostop", tmp_path, tmp_path / "t")
    info = strata_info_json(tmp_path / "t")
    assert info["processes"] == 1 and info["incomplete_files"] == 0 and info["writing_pids"] == []
    writes = [e["ret"] for e in on_file(events(tmp_path / "t"), tmp_path / "last.txt") if e["name"] == "write"]
    assert writes == [1000, 1000, 500]
