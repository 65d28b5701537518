"""Trace -> pandas DataFrame, through the native module strata._reader.

Columns of read_trace (one row per event):
  pid, tid        int64      process and thread of the event
  ts, dur         int64      start (ns since the trace start) and duration (ns)
  cat, name       category   layer ("POSIX", "STDIO", "dataloader", ...) and function
  kind            category   complete / instant / counter / begin / end
  path            category   file the event names (NaN when none)
  fd              int32      file descriptor (-1 when none)
  offset, size    int64      offset and bytes requested (-1 when none); counters: value in size
  ret             int64      return value (bytes for reads/writes)
  err             int32      errno (0 on success)
  mem_align       int32      POSIX reads/writes: alignment of the memory buffer in bytes
                             (a power of two, 4096 = 4096 or more; 0 when not recorded)
  <tag key>       Int64 (nullable) for integer tags, category for string tags
                  (e.g. epoch, step, worker); a tag key that collides with a
                  column above is prefixed "tag_".
"""
import os

import numpy as np

KINDS = ["complete", "instant", "counter", "begin", "end"]
BASE_COLUMNS = ["pid", "tid", "ts", "dur", "cat", "name", "kind", "path", "fd",
                "offset", "size", "ret", "err", "mem_align"]

_native = None


def _load_native():
    """strata._reader: beside the package (installed), or in a build tree."""
    global _native
    if _native is None:
        from . import _capi
        _native = _capi.load_extension("_reader")
        if _native is None:
            raise ImportError("strata._reader (the native trace reader) was not found in %s: build it "
                              "(cmake --build <build>; target strata_py_reader) or set STRATA_PY_NATIVE "
                              "to the directory holding _reader*.so" % _capi.native_dirs())
    return _native


def scan(path, blocks=True):
    """Files of a trace with process info, trace-time offset, events per block
    and tag keys (nothing is decoded)."""
    return _load_native().scan(os.fspath(path), blocks)


def trace_info(path):
    """One dict per traced process (pid, ppid, rank, hostname, exe, argv,
    metadata, file, start_ns, has_footer, events_written, events_dropped...)."""
    out = []
    for d in scan(path, blocks=True):
        d = dict(d)
        d["events"] = int(np.asarray(d.pop("block_events")).sum())
        out.append(d)
    return out


def _categorical(codes, categories):
    import pandas as pd
    return pd.Categorical.from_codes(codes, categories=categories, validate=False) \
        if _from_codes_has_validate() else pd.Categorical.from_codes(codes, categories=categories)


_fc_validate = None


def _from_codes_has_validate():
    global _fc_validate
    if _fc_validate is None:
        import inspect
        import pandas as pd
        _fc_validate = "validate" in inspect.signature(pd.Categorical.from_codes).parameters
    return _fc_validate


def frame(cols, keys=None, tags=True):
    """Builds the DataFrame from the native module's columns (no copy of the
    numeric columns). keys: list of (key, is_int) that must all be present
    (missing ones become all-NA columns), so that partitions share one schema."""
    import pandas as pd
    data = {
        "pid": cols["pid"],
        "tid": cols["tid"],
        "ts": cols["ts"],
        "dur": cols["dur"],
        "cat": _categorical(cols["cat"], list(cols["cats"])),
        "name": _categorical(cols["name"], list(cols["names"])),
        "kind": _categorical(cols["kind"], KINDS),
        "path": _categorical(cols["path"], list(cols["paths"])),
        "fd": cols["fd"],
        "offset": cols["offset"],
        "size": cols["size"],
        "ret": cols["ret"],
        "err": cols["err"],
        "mem_align": cols["mem_align"],
    }
    if tags:
        n = len(cols["ts"])
        have = {}
        for key, is_int, vals, mask, cats in cols["tags"]:
            have[key] = (is_int, vals, mask, cats)
        order = [k for k, _ in keys] if keys is not None else list(have)
        want = dict(keys) if keys is not None else {k: v[0] for k, v in have.items()}
        for key in order:
            col = ("tag_" + key) if key in data else key
            is_int = want[key]
            if key in have and have[key][0] == is_int:
                _, vals, mask, cats = have[key]
                data[col] = pd.arrays.IntegerArray(vals, mask) if is_int else _categorical(vals, list(cats))
            elif key in have:   # int here, str elsewhere: as strings
                _, vals, mask, _ = have[key]
                strs = pd.arrays.IntegerArray(vals, mask).astype(str)
                data[col] = pd.Categorical(pd.Series(strs).where(~mask, None))
            elif is_int:
                data[col] = pd.arrays.IntegerArray(np.zeros(n, np.int64), np.ones(n, bool))
            else:
                data[col] = _categorical(np.full(n, -1, np.int32), [])
    return pd.DataFrame(data, copy=False)


def read_trace(path, tags=True, threads=0):
    """A strata trace (directory or one .strata file) as a pandas DataFrame,
    one row per event, in file then block order (not sorted by ts). Files are
    decoded in parallel (threads: 0 = one per core)."""
    native = _load_native()
    procs = native.scan(os.fspath(path), False)
    specs = [native.FileSpec(p["file"], p["ts_offset"], 0, -1, -1, p["pid"]) for p in procs]
    return frame(native.read(specs, threads), None, tags)
