"""strata traces as dask DataFrames, for traces too large for one machine.

    import strata.dask as sd
    from distributed import Client, LocalCluster
    client = Client(LocalCluster(n_workers=2))
    ddf = sd.read_trace("t")                 # one partition per group of blocks
    sd.summary(ddf)                          # per (cat, name): count, time, bytes
    sd.by_tag(ddf, "epoch")                  # per tag value and layer
    sd.by_tag_io(ddf, "epoch")               # per tag value: events, reads, writes, bytes
    sd.by_file(ddf)                          # per file: opens, reads, writes, bytes

Every partition is decoded by the native reader (strata._reader) on a worker:
a partition is a run of consecutive EVENTS blocks of one file, so the trace is
never materialised in one process. Columns are those of strata.read_trace,
except that cat, name, kind and path are plain strings (object) so that
partitions decoded separately concatenate without category unions.
"""
import os

import numpy as np

from . import _frame

DEFAULT_EVENTS_PER_PARTITION = 2_000_000


def _partition_frame(spec, keys, tags):
    # spec: (file, ts_offset, first_block, nblocks, events, pid), plain data so
    # that workers need nothing but the strata package to unpickle the task.
    native = _frame._load_native()
    cols = native.read([native.FileSpec(*spec)], 1)
    return _partition_frame_from_cols(cols, keys, tags)


def plan(path, events_per_partition=DEFAULT_EVENTS_PER_PARTITION):
    """(partition specs, process dicts, tag keys): one spec per partition,
    (file, ts_offset, first_block, nblocks, events, pid)."""
    native = _frame._load_native()
    procs = native.scan(os.fspath(path), True)
    keys = {}
    for p in procs:
        for k, is_int in p["tag_keys"]:
            keys[k] = keys.get(k, True) and is_int
    parts = []
    for p in procs:
        counts = np.asarray(p["block_events"])
        first, acc = 0, 0
        for b, n in enumerate(counts):
            acc += int(n)
            if acc >= events_per_partition:
                parts.append((p["file"], p["ts_offset"], first, b + 1 - first, acc, p["pid"]))
                first, acc = b + 1, 0
        if acc > 0 or (first == 0 and len(counts) == 0):
            parts.append((p["file"], p["ts_offset"], first, -1, acc, p["pid"]))
    return parts, procs, sorted(keys.items())


def read_trace(path, events_per_partition=DEFAULT_EVENTS_PER_PARTITION, tags=True):
    """A dask DataFrame of the trace, one partition per group of blocks of
    about events_per_partition events (never across files)."""
    import dask
    import dask.dataframe as dd
    parts, procs, keys = plan(path, events_per_partition)
    meta = _partition_frame_from_cols(_frame._load_native().read([]), keys, tags)
    pieces = [dask.delayed(_partition_frame)(spec, keys, tags) for spec in parts]
    if not pieces:
        return dd.from_pandas(meta, npartitions=1)
    return dd.from_delayed(pieces, meta=meta, verify_meta=False)


def _partition_frame_from_cols(cols, keys, tags):
    df = _frame.frame(cols, keys if tags else None, tags)
    for c in ("cat", "name", "kind", "path"):
        df[c] = df[c].astype(object)
    for key, is_int in (keys if tags else []):
        col = ("tag_" + key) if key in _frame.BASE_COLUMNS else key
        if not is_int:
            df[col] = df[col].astype(object)
    return df


# ---- summaries ------------------------------------------------------------------
# Each works on a pandas DataFrame (strata.read_trace) or a dask DataFrame and
# returns a pandas DataFrame.

def _compute(x):
    return x.compute() if hasattr(x, "dask") and hasattr(x, "compute") else x


def _gb(d, keys):
    """groupby over observed values only (pandas categoricals), dask or pandas."""
    import pandas as pd
    if isinstance(d, pd.DataFrame):
        return d.groupby(keys, observed=True)
    return d.groupby(keys)


def _finish(out, keys):
    """Plain (non-categorical) index, sorted: equal results from pandas and dask."""
    out = out.reset_index()
    for k in keys:
        if str(out[k].dtype) == "category":
            out[k] = out[k].astype(object)
    return out.set_index(keys).sort_index()


# Linux's MAX_RW_COUNT: a read or write that asks for more asks for all there
# is (cp asks copy_file_range for SSIZE_MAX); its size counts as the bytes it
# moved, as in `strata analyze`'s functions table (and the sums do not
# overflow). Other calls' size column (an mmap's length) is kept.
MAX_ONE_CALL = 0x7FFFF000


def _with_bytes(df):
    pos_ret = df["ret"].where(df["ret"] > 0, 0)
    data = df["name"].astype(str).isin(read_names() + write_names())
    all_there_is = (df["size"] > MAX_ONE_CALL) & data
    pos_size = df["size"].where(df["size"] > 0, 0).where(~all_there_is, pos_ret)
    return df.assign(ret_pos=pos_ret, size_pos=pos_size)


def totals(df):
    """events, processes, threads, files (distinct paths), time span."""
    agg = df[["pid", "ts", "dur"]].assign(end=df["ts"] + df["dur"])
    r = {
        "events": int(len(df)),
        "processes": int(_compute(df["pid"].nunique())),
        "files": int(_compute(df["path"].dropna().nunique())),
        "first_ts": int(_compute(agg["ts"].min())),
        "last_end": int(_compute(agg["end"].max())),
    }
    return r


def summary(df):
    """Per (cat, name): count, errors, total_ns, size (sum of positive sizes)
    and ret (sum of positive returns, the bytes of reads and writes)."""
    d = _with_bytes(df).assign(errors=(df["err"] != 0).astype("int64"), one=1)
    g = _gb(d, ["cat", "name"])
    out = g.agg({"one": "sum", "errors": "sum", "dur": "sum", "size_pos": "sum", "ret_pos": "sum"})
    out = _compute(out)
    out.columns = ["count", "errors", "total_ns", "size", "ret"]
    return _finish(out, ["cat", "name"])


def by_tag(df, key):
    """Per tag value and layer (cat): events, total_ns, bytes (positive ret)."""
    col = ("tag_" + key) if key in _frame.BASE_COLUMNS else key
    d = _with_bytes(df)[[col, "cat", "dur", "ret_pos"]].assign(one=1)
    d = d[d[col].notnull()]
    out = _compute(_gb(d, [col, "cat"]).agg({"one": "sum", "dur": "sum", "ret_pos": "sum"}))
    out.columns = ["count", "total_ns", "bytes"]
    return _finish(out, [col, "cat"])


# Which calls read, write and open, and which layers carry file I/O: from the
# runtime's table of functions (src/runtime/functions.h, through the native
# module), the one the analyzer classifies with. Names include each call's
# aliases and glibc's decorated entry points (__read_chk, fread_unlocked),
# which the runtime records under the base name.
_TABLES = None


def _tables():
    global _TABLES
    if _TABLES is None:
        native = _frame._load_native()
        names = {"read": [], "write": [], "open": []}
        for f in native.functions():
            kind = f["op"] if f["op"] in ("read", "write", "open") else None
            if kind is None:
                continue
            for n in [f["name"]] + list(f["aliases"]):
                names[kind] += [n, "__%s_chk" % n, "%s_unlocked" % n, "__%s_2" % n]
        io_layers = [l["category"] for l in native.layers() if l["counted"]]
        _TABLES = ({k: sorted(set(v)) for k, v in names.items()}, io_layers)
    return _TABLES


def read_names():
    """Names of read calls (POSIX and STDIO), from the runtime's table."""
    return _tables()[0]["read"]


def write_names():
    """Names of write calls, from the runtime's table."""
    return _tables()[0]["write"]


def open_names():
    """Names of open calls (open, creat, fopen, freopen families; not fdopen)."""
    return _tables()[0]["open"]


def __getattr__(name):
    # READ_NAMES, WRITE_NAMES, OPEN_NAMES: read from the table on first use.
    lists = {"READ_NAMES": read_names, "WRITE_NAMES": write_names, "OPEN_NAMES": open_names}
    if name in lists:
        return lists[name]()
    raise AttributeError(name)


def io_layers():
    """Categories of the layers with file counters (POSIX, STDIO)."""
    return _tables()[1]


def by_tag_io(df, key):
    """Per tag value, like `strata analyze --by KEY`: events, reads, writes
    (POSIX/STDIO data calls) and the bytes they moved (positive returns)."""
    col = ("tag_" + key) if key in _frame.BASE_COLUMNS else key
    d = df[df[col].notnull()]
    io = d["cat"].isin(io_layers())
    is_read = io & d["name"].isin(read_names())
    is_write = io & d["name"].isin(write_names())
    pos = d["ret"].where(d["ret"] > 0, 0)
    d = d[[col]].assign(events=1, reads=is_read.astype("int64"), writes=is_write.astype("int64"),
                        bytes_read=pos.where(is_read, 0), bytes_written=pos.where(is_write, 0))
    out = _compute(_gb(d, col).agg({"events": "sum", "reads": "sum", "writes": "sum",
                                    "bytes_read": "sum", "bytes_written": "sum"}))
    return _finish(out, [col])


def by_file(df):
    """Per path, POSIX and STDIO layers: opens, reads, writes, bytes read and
    written (positive returns), I/O time."""
    d = df[df["path"].notnull() & df["cat"].isin(io_layers())]
    is_read = d["name"].isin(read_names())
    is_write = d["name"].isin(write_names())
    is_open = d["name"].isin(open_names())
    pos = d["ret"].where(d["ret"] > 0, 0)
    d = d[["path", "dur"]].assign(
        opens=is_open.astype("int64"), reads=is_read.astype("int64"), writes=is_write.astype("int64"),
        bytes_read=pos.where(is_read, 0), bytes_written=pos.where(is_write, 0))
    out = _compute(_gb(d, "path").agg({"opens": "sum", "reads": "sum", "writes": "sum",
                                       "bytes_read": "sum", "bytes_written": "sum", "dur": "sum"}))
    out = out.rename(columns={"dur": "io_ns"})
    return _finish(out, ["path"])


def by_process(df):
    """Per pid: events and total_ns per layer."""
    d = df[["pid", "cat", "dur"]].assign(one=1)
    out = _compute(_gb(d, ["pid", "cat"]).agg({"one": "sum", "dur": "sum"}))
    out.columns = ["count", "total_ns"]
    return _finish(out, ["pid", "cat"])


# ---- strata analyze on a cluster: the same passes, one task per unit ------------

def _unit_state(path, unit, opts):
    return _frame._load_native().analyze_unit(path, unit, **opts)


def _merge_states(path, first, later, opts):
    return _frame._load_native().merge_states(path, first, later, **opts)


def analyze(path, json=True, by="", stage_capacity=-1, stage_speedup=4.0, top=3, scheduler=None):
    """The report of `strata analyze PATH [--json]`, computed by Dask: each
    unit (process file of a strata trace, .pfw file of a DFTracer trace) is
    analysed by the analyzer's own passes in one task, the states are merged
    pairwise in unit order (a tree of merges), and the report is rendered from
    the merged state. The result equals `strata analyze`'s output for the same
    options; the trace must be readable by the workers at the same path.
    Uses the active distributed Client if there is one (or `scheduler`)."""
    import dask
    native = _frame._load_native()
    if not hasattr(native, "analyze_unit"):
        raise RuntimeError("this build of strata._reader has no analysis bindings (sanitizer build)")
    path = os.path.abspath(os.fspath(path))
    opts = dict(by=by, stage_capacity=int(stage_capacity), stage_speedup=float(stage_speedup), top=int(top))
    units = native.analysis_units(path)
    if not units:
        raise ValueError(f"{path}: no trace files to analyse")
    states = [dask.delayed(_unit_state, pure=True)(path, i, opts) for i in range(len(units))]
    while len(states) > 1:
        merged = [dask.delayed(_merge_states, pure=True)(path, states[k], states[k + 1], opts)
                  for k in range(0, len(states) - 1, 2)]
        if len(states) % 2:
            merged.append(states[-1])
        states = merged
    state = states[0].compute(scheduler=scheduler)
    return native.analysis_report(path, state, json, **opts)
