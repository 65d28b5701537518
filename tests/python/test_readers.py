"""strata.read_trace (pandas) and strata.dask.read_trace agree with the C++
tools (`strata info --json`, `strata cat`) on the same trace: counts per layer
and function, sums of durations, bytes and tags."""
import json
import os
import subprocess

import numpy as np
import pandas as pd
import pytest

import conftest
import strata
import strata.dask as sd


@pytest.fixture(scope="module")
def traced(tmp_path_factory, tiny_data):
    tmp = tmp_path_factory.mktemp("readers")
    out = tmp / "trace"
    # A 64 KiB ring (1,024 events) cuts each busy file into several blocks
    # whatever the machine's load, which the Dask partitioning test needs.
    conftest.run_traced(out, [conftest.PYTHON, conftest.EXAMPLE, "--data", str(tiny_data), "--tiny",
                              "--ckpt", str(tmp / "ckpt")], env={"STRATA_BUFFER_SIZE": "65536"})
    info = conftest.strata_info_json(out)
    info["analyze"] = json.loads(conftest.strata_cli("analyze", "--json", "--by", "epoch", str(out)))
    lines = conftest.strata_cli("cat", str(out)).splitlines()
    cat = pd.DataFrame.from_records([json.loads(l) for l in lines])
    return out, info, cat


def cat_tags(cat, key):
    return cat["tags"].map(lambda t: t.get(key) if isinstance(t, dict) else None)


def test_read_trace_matches_info(traced):
    out, info, _ = traced
    df = strata.read_trace(out)
    assert len(df) == info["events"]
    assert df["pid"].nunique() == info["processes"]
    assert df.groupby("cat", observed=True).size().to_dict() == info["by_category"]
    assert df.groupby("name", observed=True).size().to_dict() == info["by_name"]
    assert int((df["ts"] + df["dur"]).max() - df["ts"].min()) == info["span_ns"] or \
        int((df["ts"] + df["dur"]).max()) == info["span_ns"]


def test_read_trace_matches_cat_event_by_event(traced):
    out, _, cat = traced
    df = strata.read_trace(out)
    key = ["pid", "tid", "ts", "dur"]
    a = df[key + ["name"]].astype({"name": str}).sort_values(key + ["name"]).reset_index(drop=True)
    b = cat[key + ["name"]].astype({"name": str}).sort_values(key + ["name"]).reset_index(drop=True)
    pd.testing.assert_frame_equal(a, b, check_dtype=False)
    # sums of the I/O columns and tags per function
    assert int(df["mem_align"].sum()) > 0  # the DataLoader's reads record their buffers
    for col in ("ret", "size", "offset", "mem_align"):
        if col in cat:
            mine = df[col].where(df[col] >= 0, 0)
            theirs = cat[col].fillna(0).clip(lower=0)
            assert mine.sum() == theirs.sum(), col
    for key in ("epoch", "step", "worker"):
        theirs = cat_tags(cat, key)
        assert int(df[key].notna().sum()) == int(theirs.notna().sum()), key
        assert int(df[key].sum()) == int(theirs.dropna().astype(int).sum()), key
    assert set(df["path"].dropna().astype(str)) == set(cat["path"].dropna())


def test_compressed_trace_reads_the_same(traced, tmp_path):
    """`strata efg --compress` output (EFG blocks): read_trace, cat and
    analyze --json give what the native trace gives, on a real PyTorch job
    with several processes and many blocks per file."""
    out, info, _ = traced
    small = tmp_path / "small"
    conftest.strata_cli("efg", str(out), "--compress", "-o", str(small))
    assert sorted(os.listdir(small)) == sorted(f for f in os.listdir(out) if f.endswith(".strata"))
    pd.testing.assert_frame_equal(strata.read_trace(out), strata.read_trace(small))
    assert conftest.strata_cli("cat", str(out)) == conftest.strata_cli("cat", str(small))
    mine = json.loads(conftest.strata_cli("analyze", "--json", "--by", "epoch", str(small)))
    mine["input"] = info["analyze"]["input"]
    assert mine == info["analyze"]


def test_dask_matches_pandas_and_info(traced):
    from distributed import Client, LocalCluster
    out, info, cat = traced
    df = strata.read_trace(out)
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster, \
            Client(cluster) as client:
        ddf = sd.read_trace(out, events_per_partition=2000)
        assert ddf.npartitions > len(strata.trace_info(out))   # several partitions per big file
        assert len(ddf) == info["events"]
        s = sd.summary(ddf)
        assert s["count"].groupby(level="name").sum().to_dict() == info["by_name"]
        assert s["count"].groupby(level="cat").sum().to_dict() == info["by_category"]
        pd.testing.assert_frame_equal(s, sd.summary(df), check_dtype=False)
        e = sd.by_tag(ddf, "epoch")
        pd.testing.assert_frame_equal(e, sd.by_tag(df, "epoch"), check_dtype=False)
        # epoch totals against strata cat
        ce = cat.assign(epoch=cat_tags(cat, "epoch")).dropna(subset=["epoch"])
        assert e["count"].groupby(level=0).sum().to_dict() == \
            ce.groupby(ce["epoch"].astype(int)).size().to_dict()
        assert e["total_ns"].groupby(level=0).sum().to_dict() == \
            ce.groupby(ce["epoch"].astype(int))["dur"].sum().to_dict()
        f = sd.by_file(ddf)
        pd.testing.assert_frame_equal(f, sd.by_file(df), check_dtype=False)
        p = sd.by_process(ddf)
        assert p["count"].groupby(level="pid").sum().sum() == info["events"]
        # against the C++ analyzer: functions and the --by epoch breakdown
        an = info["analyze"]
        assert {(f["category"], f["name"]): (f["count"], f["errors"], f["time_ns"]) for f in an["functions"]} == \
            {k: (int(r["count"]), int(r["errors"]), int(r["total_ns"])) for k, r in s.iterrows()}
        io = sd.by_tag_io(ddf, "epoch")
        pd.testing.assert_frame_equal(io, sd.by_tag_io(df, "epoch"), check_dtype=False)
        assert {str(k): {c: int(r[c]) for c in io.columns} for k, r in io.iterrows()} == \
            {k: {c: v[c] for c in io.columns} for k, v in an["by_epoch"].items()}
        t = sd.totals(ddf)
        assert t["events"] == info["events"] and t["processes"] == info["processes"]
        # per-file bytes read against strata cat
        reads = cat[cat["name"].isin(sd.READ_NAMES) & cat["cat"].isin(["POSIX", "STDIO"])]
        reads = reads[reads["ret"].fillna(0) > 0]
        expect = reads.groupby("path")["ret"].sum()
        got = f["bytes_read"][f["bytes_read"] > 0]
        assert got.to_dict() == expect.astype(np.int64).to_dict()


needs_analysis = pytest.mark.skipif(
    not hasattr(strata._frame._load_native(), "analyze_unit"),
    reason="sanitizer build: strata._reader is built without the analysis bindings")


@needs_analysis
def test_dask_analyze_equals_strata_analyze(traced):
    """strata.dask.analyze runs the analyzer's passes one task per process
    file with a tree of merges; its JSON report equals strata analyze's."""
    from distributed import Client, LocalCluster
    out, info, _ = traced
    assert len(strata.trace_info(out)) >= 3  # a tree of merges, not one task
    path = os.path.abspath(out)
    local = conftest.strata_cli("analyze", "--json", "--by", "epoch", "--stage-capacity", str(1 << 30), path)
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster, \
            Client(cluster):
        remote = sd.analyze(path, json=True, by="epoch", stage_capacity=1 << 30)
    assert json.loads(remote) == json.loads(local)
    assert remote == local  # byte for byte, key order included
    text = sd.analyze(path, json=False, scheduler="sync")
    assert text == conftest.strata_cli("analyze", path)


@needs_analysis
def test_dask_analyze_refuses_a_by_tag_no_event_carries(traced):
    # strata analyze --by KEY exits 2 naming the keys the trace has; the
    # Dask form raised nothing and returned a report with one "(none)" row.
    out, _, _ = traced
    path = os.path.abspath(out)
    cli = subprocess.run([conftest.strata_bin(), "analyze", "--json", "--by", "no_such_key", path],
                         capture_output=True, text=True)
    assert cli.returncode == 2 and cli.stdout == ""
    with pytest.raises(ValueError) as err:
        sd.analyze(path, json=True, by="no_such_key", scheduler="sync")
    assert "strata analyze: " + str(err.value) + "\n" == cli.stderr


@needs_analysis
def test_dask_analyze_rejects_a_corrupt_state(traced):
    out, _, _ = traced
    native = strata._frame._load_native()
    good = native.analyze_unit(os.path.abspath(out), 0)
    with pytest.raises(ValueError, match="analysis state"):
        native.analysis_report(os.path.abspath(out), good[: len(good) // 2])


NON_UTF8 = r'''
import os, sys, numpy as np
d = os.fsencode(sys.argv[1])
bad = os.path.join(d, b"s\xff\xfe.npy")      # not UTF-8
good = os.path.join(d, "é.npy".encode())     # UTF-8, not ASCII
for p in (bad, good):
    with open(p, "wb") as f:
        f.write(b"x")
np.fromfile(os.fsdecode(bad), dtype=np.uint8)   # the Python layer's event names the file too
np.fromfile(os.fsdecode(good), dtype=np.uint8)
'''


def test_read_trace_gives_non_utf8_paths_back_losslessly(tmp_path):
    """A path that is not UTF-8 (the kernel's paths are bytes) reaches
    strata.read_trace as os.fsdecode would make it: os.fsencode of the path
    column gives the bytes back. It raised UnicodeDecodeError before."""
    data = tmp_path / "data"
    data.mkdir()
    script = tmp_path / "non_utf8.py"
    script.write_text(NON_UTF8)
    conftest.run_traced(tmp_path / "trace", [conftest.PYTHON, str(script), str(data)])
    df = strata.read_trace(tmp_path / "trace")
    d = os.fsencode(str(data))
    bad, good = os.path.join(d, b"s\xff\xfe.npy"), os.path.join(d, "é.npy".encode())
    for name in ("open64", "numpy.fromfile"):
        paths = {os.fsencode(p) for p in df[df["name"].astype(str) == name]["path"].dropna()}
        assert {bad, good} <= paths, (name, paths)


def test_summary_of_a_copy_counts_the_bytes_it_moved(tmp_path):
    """cp asks copy_file_range for SSIZE_MAX bytes ("all there is"): the
    summary's size of such a call is the bytes it moved, as in `strata
    analyze`'s functions table; summing the raw sizes overflowed int64."""
    src, dst = tmp_path / "in.bin", tmp_path / "out.bin"
    src.write_bytes(bytes(range(256)) * 1000)
    conftest.run_traced(tmp_path / "trace", ["/bin/cp", str(src), str(dst)])
    s = sd.summary(strata.read_trace(tmp_path / "trace"))
    copies = s.xs("POSIX", level="cat")
    if "copy_file_range" not in copies.index:
        pytest.skip("cp did not copy with copy_file_range here")
    assert copies.loc["copy_file_range", "ret"] == 256000
    assert copies.loc["copy_file_range", "size"] == 256000
    assert copies.loc["copy_file_range.out", "size"] == 256000
