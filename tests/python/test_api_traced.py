"""Each form of the Python API records what it says (run under strata run)."""
import os

import pytest

import conftest
import strata


@pytest.fixture(scope="module", params=["fast", "ctypes"])
def api_trace(tmp_path_factory, request):
    """The script run twice: through strata._fast, and through ctypes only."""
    d = tmp_path_factory.mktemp("api")
    data = d / "data.bin"
    data.write_bytes(os.urandom(10000))
    out = d / "trace"
    env = {"STRATA_PY_FAST": "0"} if request.param == "ctypes" else {}
    p = conftest.run_traced(out, [conftest.PYTHON, os.path.join(conftest.SCRIPTS, "api_forms.py"), str(data),
                                  request.param], env=env)
    assert p.stdout.strip().endswith("ok")
    df = strata.read_trace(out)
    py = df[df["pid"] == df.loc[df["name"] == "block", "pid"].iloc[0]]
    return out, str(data), py


def count(df, name, cat=None):
    sel = df["name"] == name
    if cat is not None:
        sel &= df["cat"] == cat
    return int(sel.sum())


def data_events(df, path, prefix):
    return df[(df["cat"] == "POSIX") & (df["path"] == path) & df["name"].astype(str).str.startswith(prefix)]


def test_region(api_trace):
    _, data, df = api_trace
    ev = df[df["name"] == "block"]
    assert len(ev) == 1 and ev["cat"].iloc[0] == "test" and ev["phase"].iloc[0] == "warmup"
    reads = data_events(df, data, "read")
    assert (reads["phase"] == "warmup").sum() > 0
    # the region covers its POSIX reads
    b = ev.iloc[0]
    inside = reads[reads["phase"] == "warmup"]
    assert (inside["ts"] >= b["ts"]).all() and (inside["ts"] + inside["dur"] <= b["ts"] + b["dur"]).all()


def test_decorator_function_and_methods(api_trace):
    _, _, df = api_trace
    assert count(df, "double", "app") == 3
    assert count(df, "Loader.m", "app") == 2
    assert count(df, "Loader.s", "app") == 1
    assert count(df, "Loader.classmethod", "test") == 1


def test_decorator_generator(api_trace):
    _, _, df = api_trace
    # list(gen(4)): 5 resumptions; next + send + send(->StopIteration): 3
    assert count(df, "gen", "test") == 8


def test_decorator_async(api_trace):
    _, _, df = api_trace
    assert count(df, "coro", "test") == 1
    assert count(df, "agen", "test") == 4
    # athrow() reaches the generator, which catches it: next, athrow
    assert count(df, "agen_catch", "test") == 2


def test_region_as_decorator_tags_each_call(api_trace):
    _, data, df = api_trace
    ev = df[df["name"] == "decorated"]
    assert len(ev) == 2 and (ev["stage"] == "eval").all()
    assert (data_events(df, data, "read")["stage"] == "eval").sum() >= 2


def test_an_int_tag_past_64_bits_is_its_string(api_trace):
    _, data, df = api_trace
    reads = data_events(df, data, "read")
    assert (reads["big"].astype(str) == str(2 ** 70)).sum() >= 1


def test_iterate(api_trace):
    _, data, df = api_trace
    loop, fetch = df[df["name"] == "loop"], df[df["name"] == "loop.fetch"]
    assert len(loop) == 5 and len(fetch) == 5
    assert sorted(loop["step"].tolist()) == [10, 11, 12, 13, 14]
    assert sorted(fetch["step"].tolist()) == [10, 11, 12, 13, 14]
    opens = data_events(df, data, "open")
    assert sorted(opens["step"].dropna().tolist()) == [10, 11, 12, 13, 14]
    reads = data_events(df, data, "read")
    per_step = reads.groupby("step").size()
    assert list(per_step.index) == [10, 11, 12, 13, 14] and per_step.nunique() == 1
    # the step tag is gone after the loop
    assert df.loc[df["name"] == "mark", "step"].isna().all()


def test_tags_on_posix_events(api_trace):
    _, data, df = api_trace
    opens = data_events(df, data, "open")
    assert len(opens) == 11   # read_file() ran 11 times
    tagged = opens[opens["epoch"] == 7]
    assert len(tagged) == 1 and tagged["stage"].iloc[0] == "train"
    assert df["epoch"].dropna().eq(7).all()
    for name in ("mark", "queue_depth", "app_read", "plain"):
        assert df.loc[df["name"] == name, "run"].tolist() == ["r1"], name


def test_instant_counter_complete(api_trace):
    _, _, df = api_trace
    mark = df[df["name"] == "mark"]
    assert len(mark) == 1 and mark["kind"].iloc[0] == "instant" and mark["cat"].iloc[0] == "test"
    c = df[df["name"] == "queue_depth"]
    assert len(c) == 1 and c["kind"].iloc[0] == "counter" and c["size"].iloc[0] == 42
    io = df[df["name"] == "app_read"].iloc[0]
    assert (io["path"], io["size"], io["ret"]) == ("/virtual/file", 4096, 4000)
    # times are stored in 8-cycle TSC ticks (format.h): explicit ns round to a tick
    assert abs(io["dur"] - 1000) < 10
    plain = df[df["name"] == "plain"].iloc[0]
    assert abs(plain["dur"] - 500) < 10 and plain["cat"] == "test"


def test_thread_tags_are_per_thread(api_trace):
    _, data, df = api_trace
    tb = df[df["name"] == "thread_block"]
    assert len(tb) == 1
    main_tid = df.loc[df["name"] == "block", "tid"].iloc[0]
    assert tb["tid"].iloc[0] != main_tid
    assert tb["run"].isna().all() and tb["epoch"].isna().all()


def test_metadata(api_trace):
    out, _, df = api_trace
    procs = strata.trace_info(out)
    mine = [p for p in procs if p["pid"] == df["pid"].iloc[0]]
    assert len(mine) == 1 and mine[0]["metadata"].get("purpose") == "api-forms"
