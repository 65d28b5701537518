"""The PyTorch example at tiny size under `strata run`, with no change to its
code: events from the main process and every DataLoader worker, epoch/step/
worker tags on worker POSIX reads, checkpoint events with the right bytes, and
every sample file opened and read exactly as many times as the loader fetched it.
Tiny size: 64 train / 16 val images, batch 8, 2 workers, 2 epochs; validation
after each epoch and once more after loading the last checkpoint."""
import json
import os
import subprocess

import pytest

import conftest
import strata

TRAIN, VAL, BATCH, WORKERS, EPOCHS = 64, 16, 8, 2, 2
TRAIN_STEPS, VAL_STEPS = TRAIN // BATCH, VAL // BATCH
VAL_PASSES = EPOCHS + 1


def run_example(tmp, data, *flags, env=None):
    out = tmp / "trace"
    summary = tmp / "summary.json"
    conftest.run_traced(out, [conftest.PYTHON, conftest.EXAMPLE, "--data", str(data), "--tiny",
                              "--ckpt", str(tmp / "ckpt"), "--summary", str(summary)] + list(flags),
                        env=env)
    with open(summary) as f:
        return out, json.load(f), strata.read_trace(out)


def posix(df, prefix, paths):
    return df[(df["cat"] == "POSIX") & df["path"].isin(paths) & df["name"].astype(str).str.startswith(prefix)]


def main_pid(df):
    return int(df.loc[df["name"] == "torch.save", "pid"].iloc[0])


def check_run(out, summary, df, epochs=EPOCHS, persistent=False):
    train, val = summary["train_files"], summary["val_files"]
    assert len(train) == TRAIN and len(val) == VAL
    mpid = main_pid(df)
    infos = strata.trace_info(out)
    workers = [p for p in infos if "dataloader_worker" in p["metadata"]]
    # one process per worker per loader pass (or per loader when persistent)
    val_passes = epochs + 1
    n_workers = 2 * WORKERS if persistent else (epochs + val_passes) * WORKERS
    assert len(workers) == n_workers
    worker_pids = {p["pid"] for p in workers}
    # children of the main process (fork, spawn) or of its forkserver
    parent = {p["pid"]: p["ppid"] for p in infos}
    assert all(p["ppid"] == mpid or parent.get(p["ppid"]) == mpid for p in workers)
    # every worker recorded events (nothing lost at os._exit)
    assert worker_pids <= set(df["pid"].unique())
    for p in workers:
        assert p["events"] > 0

    # -- every sample file opened and read as many times as it was fetched
    opens = posix(df, "open", train + val)
    per_file = opens.groupby("path", observed=True).size()
    assert {f: int(per_file.get(f, 0)) for f in train} == {f: epochs for f in train}
    assert {f: int(per_file.get(f, 0)) for f in val} == {f: val_passes for f in val}
    reads = posix(df, "read", train + val)
    # a tiny PNG is read by one read(2) of 4 KiB through Pillow: one read per fetch
    nreads = reads.groupby("path", observed=True).size()
    assert {f: int(nreads.get(f, 0)) for f in train} == {f: epochs for f in train}
    assert {f: int(nreads.get(f, 0)) for f in val} == {f: val_passes for f in val}
    nbytes = reads[reads["ret"] > 0].groupby("path", observed=True)["ret"].sum()
    for f in train:
        assert nbytes[f] == epochs * os.path.getsize(f), f
    for f in val:
        assert nbytes[f] == val_passes * os.path.getsize(f), f
    # all sample reads happen in workers, never in the main process
    assert set(reads["pid"].unique()) <= worker_pids

    # -- epoch/step/worker tags on the workers' POSIX reads
    tr = reads[reads["path"].isin(train)]
    assert tr["epoch"].notna().all() and tr["step"].notna().all() and tr["worker"].notna().all()
    assert sorted(tr["epoch"].unique().tolist()) == list(range(epochs))
    assert (tr["worker"] == tr["step"] % WORKERS).all()   # batches go round-robin to workers
    for e in range(epochs):
        ep = tr[tr["epoch"] == e]
        files_per_step = ep.groupby("step")["path"].nunique()
        assert files_per_step.to_dict() == {s: BATCH for s in range(TRAIN_STEPS)}
        assert set(ep["path"].unique()) == set(train)
        # a batch is built by one worker process
        assert (ep.groupby("step")["pid"].nunique() == 1).all()
    vr = reads[reads["path"].isin(val)]
    # The training loader (iterated first) counts epochs; validation passes,
    # the final evaluation included, carry the epoch in progress and loader 1.
    assert sorted(vr["epoch"].unique().tolist()) == list(range(epochs))
    assert (tr["loader"] == 0).all() and (vr["loader"] == 1).all()

    # -- DataLoader events in the main process
    m = df[df["pid"] == mpid]
    nxt = m[m["name"] == "dataloader.next"]
    assert len(nxt) == epochs * TRAIN_STEPS + val_passes * VAL_STEPS
    ep_ev = m[m["name"] == "dataloader.epoch"]
    assert len(ep_ev) == epochs + val_passes
    steps = nxt.groupby("epoch")["step"].apply(lambda s: sorted(s.tolist()))
    for e in range(epochs):
        val_in_epoch = val_passes - epochs + 1 if e == epochs - 1 else 1   # the last one has the final evaluation
        assert steps[e] == sorted(list(range(TRAIN_STEPS)) + list(range(VAL_STEPS)) * val_in_epoch)
    # -- batches built in the workers, with their tags
    batches = df[df["name"] == "dataloader.batch"]
    assert len(batches) == epochs * TRAIN_STEPS + val_passes * VAL_STEPS
    assert set(batches["pid"].unique()) <= worker_pids
    assert (batches["worker"] == batches["step"] % WORKERS).all()
    assert int((df["name"] == "dataloader.collate").sum()) == len(batches)

    # -- compute events (top level only)
    train_steps = epochs * TRAIN_STEPS
    assert int((m["name"] == "SmallCNN.forward").sum()) == train_steps + val_passes * VAL_STEPS
    assert int((m["name"] == "CrossEntropyLoss.forward").sum()) == train_steps
    assert int((m["name"] == "backward").sum()) == train_steps
    assert int((m["name"] == "SGD.step").sum()) == train_steps
    assert int((df["name"] == "Conv2d.forward").sum()) == 0

    # -- checkpoints: path and bytes
    saves = m[m["name"] == "torch.save"].sort_values("ts")
    assert saves["cat"].eq("checkpoint").all()
    assert saves["path"].tolist() == [e["checkpoint"] for e in summary["epochs"]]
    assert saves["size"].tolist() == [e["checkpoint_bytes"] for e in summary["epochs"]]
    assert saves["epoch"].tolist() == [e for e in range(epochs)]
    loads = m[m["name"] == "torch.load"]
    last = summary["epochs"][-1]
    assert loads["path"].tolist() == [last["checkpoint"]]
    assert loads["size"].tolist() == [last["checkpoint_bytes"]]
    assert loads["ret"].tolist() == [last["checkpoint_bytes"]]
    # -- Pillow application-level I/O in the workers, above the POSIX reads
    pil = df[df["name"] == "PIL.Image.open"]
    assert len(pil) == epochs * TRAIN + val_passes * VAL
    assert set(pil["path"].unique()) == set(train + val)
    return mpid, workers


def test_example_fork(tmp_path, tiny_data):
    out, summary, df = run_example(tmp_path, tiny_data)
    check_run(out, summary, df)


@pytest.mark.parametrize("method", ["spawn", "forkserver"])
def test_example_start_methods(tmp_path, tiny_data, method):
    out, summary, df = run_example(tmp_path, tiny_data, "--start-method", method, "--epochs", "1")
    check_run(out, summary, df, epochs=1)


def test_example_persistent_workers(tmp_path, tiny_data):
    out, summary, df = run_example(tmp_path, tiny_data, "--persistent-workers")
    check_run(out, summary, df, persistent=True)


def test_deep_mode_sample_tags(tmp_path, tiny_data):
    out, summary, df = run_example(tmp_path, tiny_data, "--epochs", "1", env={"STRATA_PY_DEEP": "1"})
    train = summary["train_files"]
    get = df[df["name"] == "dataset.getitem"]
    assert len(get) == TRAIN + 2 * VAL
    opens = posix(df, "open", train)
    # the sample tag of each open is the index of its file in the data set
    assert sorted((opens["sample"].astype(int)).tolist()) == list(range(TRAIN))
    for _, row in opens.iterrows():
        assert train[int(row["sample"])] == row["path"]
    # every nn.Module call, not only the top level
    assert int((df["name"] == "Conv2d.forward").sum()) == 2 * (TRAIN_STEPS + 2 * VAL_STEPS)


def test_numpy_dataset(tmp_path):
    """The example with .npy samples: numpy.load events name each file with the
    array's bytes, above the POSIX reads of that file."""
    data = tmp_path / "npy"
    subprocess.run([conftest.PYTHON, conftest.EXAMPLE, "--data", str(data), "--tiny",
                             "--format", "npy", "--generate-only"], check=True, env=conftest.clean_env())
    out, summary, df = run_example(tmp_path, data, "--format", "npy", "--epochs", "1")
    train, val = summary["train_files"], summary["val_files"]
    loads = df[df["name"] == "numpy.load"]
    assert loads["cat"].eq("numpy").all()
    per_file = loads.groupby("path", observed=True).size()
    assert {f: int(per_file.get(f, 0)) for f in train} == {f: 1 for f in train}
    assert {f: int(per_file.get(f, 0)) for f in val} == {f: 2 for f in val}
    assert loads["size"].eq(16 * 16 * 3).all() and loads["ret"].eq(16 * 16 * 3).all()
    # the numpy.fromfile inside each np.load (in the DataLoader workers too) is part of its event
    assert int((df["name"] == "numpy.fromfile").sum()) == 0
    # each numpy.load contains the POSIX reads of its file (same process and thread)
    reads = posix(df, "read", train)
    for _, r in reads.iterrows():
        enclosing = loads[(loads["pid"] == r["pid"]) & (loads["tid"] == r["tid"]) & (loads["path"] == r["path"])
                          & (loads["ts"] <= r["ts"]) & (loads["ts"] + loads["dur"] >= r["ts"] + r["dur"])]
        assert len(enclosing) == 1


NUMPY_CALLS = r'''
import pathlib, sys, numpy as np
d = pathlib.Path(sys.argv[1])
a = np.arange(16, dtype=np.float64)
np.save(d / "a.npy", a)
np.savez(d / "b.npz", a=a)
a.tofile(d / "c.bin")
print(np.load.__name__, np.load.__module__, np.load.__doc__ == np.load.__wrapped__.__doc__
      if hasattr(np.load, "__wrapped__") else True)
import copy, pickle
print(pickle.loads(pickle.dumps(np.load)) is np.load, copy.deepcopy(np.fromfile) is np.fromfile)
class Holder:
    load = np.load          # a function in a class binds as a method
try:
    Holder().load(str(d / "a.npy"))
except Exception as e:
    print(type(e).__name__)
class Reader:
    read = np.fromfile      # a builtin in a class does not bind
print(Reader().read(str(d / "c.bin"), count=2).tolist())
print(repr(np.fromfile), repr(np.load).split(" at ")[0], pickle.loads(pickle.dumps(np.fromfile)) is np.fromfile)
import weakref
print(weakref.ref(np.load)() is np.load)
print(np.load(str(d / "a.npy")).sum(), np.load(d / "a.npy").sum(), np.load(file=d / "a.npy").sum())
with open(d / "a.npy", "rb") as f:
    print(np.load(f).sum())
print(type(np.load(d / "a.npy", mmap_mode="r")).__name__)
print(sorted(np.load(d / "b.npz").files))
print(np.fromfile(str(d / "c.bin")).sum(), np.fromfile(d / "c.bin", dtype=np.float64, count=4).tolist())
try:
    np.load(d / "missing.npy")
except FileNotFoundError as e:
    print("FileNotFoundError", e.errno, e.strerror, e.filename == str(d / "missing.npy"))
try:
    np.fromfile(d / "c.bin", dtype="no such dtype")
except TypeError as e:
    print("TypeError", e)
'''


@pytest.mark.parametrize("fast", ["1", "0"])
def test_numpy_patches_pass_calls_through_and_record_them(tmp_path, fast):
    """numpy.load / numpy.fromfile under the Python layer (strata._fast.io_call,
    or its Python version with STRATA_PY_FAST=0): the program sees the same results, exceptions and function attributes as
    without strata; each call is one event naming its file (str, Path or open
    file), with the array's bytes, -1 for memory maps, .npz and failures; a
    call numpy makes inside another (np.load's numpy.fromfile) is none."""
    script = tmp_path / "calls.py"
    script.write_text(NUMPY_CALLS)
    runs = {}
    for mode in ("plain", "traced"):
        d = tmp_path / mode
        d.mkdir()
        cmd = [conftest.PYTHON, str(script), str(d)]
        if mode == "plain":
            p = subprocess.run(cmd, env=conftest.clean_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True, timeout=120, check=True)
        else:
            p = conftest.run_traced(tmp_path / "trace", cmd, env={"STRATA_PY_FAST": fast})
        runs[mode] = p.stdout.replace(str(d), "D")
    assert runs["traced"] == runs["plain"]
    assert runs["plain"].splitlines()[0] == "load numpy True"
    df = strata.read_trace(tmp_path / "trace")
    ev = df[df["cat"] == "numpy"]
    d = str(tmp_path / "traced")
    got = [(n, p.replace(d, "D") if isinstance(p, str) else None, int(s)) for n, p, s in
           zip(ev["name"].astype(str), ev["path"].astype(object), ev["size"])]
    # np.load of an .npy reads the array with numpy.fromfile on the file it
    # opened: that call is part of the load's event, not one of its own
    expected = [("numpy.load", "D/a.npy", 128)] * 4 + [
        ("numpy.load", "D/a.npy", -1),                 # memory map
        ("numpy.load", "D/b.npz", -1),                 # NpzFile, not an array
        ("numpy.fromfile", "D/c.bin", 128), ("numpy.fromfile", "D/c.bin", 32),
        ("numpy.fromfile", "D/c.bin", 16),             # called through a class attribute
        ("numpy.load", "D/missing.npy", -1),           # raised
        ("numpy.fromfile", "D/c.bin", -1),             # raised
        ("numpy.load", None, -1)]                      # bound to a Holder: its first argument, raised
    assert sorted(got, key=str) == sorted(expected, key=str)
    assert (ev["size"] == ev["ret"]).all()


INTERRUPTED_CALL = r'''
import numpy as np, sys
import strata._auto as layer
d = sys.argv[1]
np.arange(4.0).tofile(d + "/a.bin")
clock = layer._now
def interrupted_clock():
    # Where a signal handler's exception (a caught Ctrl-C, a timeout) can land:
    # the wrapper's first clock read, before its try.
    layer._now = clock
    raise KeyboardInterrupt
layer._now = interrupted_clock
try:
    np.fromfile(d + "/a.bin")
except KeyboardInterrupt:
    print("interrupted")
for i in range(1000):
    np.fromfile(d + "/a.bin")
'''


def test_numpy_calls_after_an_interrupted_one_are_recorded(tmp_path):
    """An exception raised inside the Python layer's wrapper at its clock read
    (by a signal handler, in a real program) must not leave the thread's
    nesting flag set: the Python version of the wrapper set it before its
    try, and the thread's later numpy calls were all left unrecorded. (The C
    version runs no Python code there.)"""
    script = tmp_path / "interrupted.py"
    script.write_text(INTERRUPTED_CALL)
    p = conftest.run_traced(tmp_path / "trace", [conftest.PYTHON, str(script), str(tmp_path)],
                            env={"STRATA_PY_FAST": "0"})
    assert p.stdout.split() == ["interrupted"]
    df = strata.read_trace(tmp_path / "trace")
    assert int((df["name"] == "numpy.fromfile").sum()) == 1000


IO_CALL_EDGES = r'''
import io, strata._fast as F
class Weird:
    @property
    def __class__(self):
        raise RuntimeError("no class")
weird = Weird()
w = F.io_call(lambda *a, **k: weird, b"edge.weird", b"numpy", list, None, "file")
print(w("/tmp/x") is weird)                       # isinstance raised: result passes, no error left set
class Named:
    @property
    def name(self):
        raise KeyError("name")
w2 = F.io_call(lambda *a, **k: 1, b"edge.named", b"numpy", None, None, "fp")
print(w2(Named()), w2(io.BytesIO(b"x")), w2(fp="/tmp/kw"), w2())
try:
    F.io_call(len, b"x", b"y", "not a type", None, "file")
except TypeError:
    print("TypeError")
'''


def test_io_call_edges(tmp_path):
    """strata._fast.io_call on objects that raise from isinstance or from their
    `name`, file objects without a name, the file passed by keyword or not at
    all: the call's result reaches the program untouched, and each call is one
    event (with the path when one is given)."""
    script = tmp_path / "edges.py"
    script.write_text(IO_CALL_EDGES)
    p = conftest.run_traced(tmp_path / "trace", [conftest.PYTHON, str(script)])
    assert p.stdout.split() == ["True", "1", "1", "1", "1", "TypeError"]
    df = strata.read_trace(tmp_path / "trace")
    ev = df[df["cat"] == "numpy"]
    got = [(n, p if isinstance(p, str) else None) for n, p in zip(ev["name"].astype(str), ev["path"].astype(object))]
    assert sorted(got, key=str) == sorted([("edge.weird", "/tmp/x"), ("edge.named", None), ("edge.named", None),
                                           ("edge.named", "/tmp/kw"), ("edge.named", None)], key=str)
