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
  <tag key>       Int64 (nullable) for integer tags, category for string tags
                  (e.g. epoch, step, worker); a tag key that collides with a
                  column above is prefixed "tag_".
"""
import glob
import os

import numpy as np

KINDS = ["complete", "instant", "counter", "begin", "end"]
BASE_COLUMNS = ["pid", "tid", "ts", "dur", "cat", "name", "kind", "path", "fd",
                "offset", "size", "ret", "err"]

_native = None


def _runtime_lib_dir():
    try:
        with open("/proc/self/maps") as f:
            for line in f:
                if "libstrata" in line and line.rstrip().endswith(".so"):
                    return os.path.dirname(line.split(None, 5)[-1].strip())
    except OSError:
        pass
    return None


def _native_candidates():
    here = os.path.dirname(os.path.abspath(__file__))
    out = []
    env = os.environ.get("STRATA_PY_NATIVE")
    if env:
        out.append(env)
    libdir = _runtime_lib_dir()
    if libdir:
        out.append(os.path.join(libdir, os.pardir, "python", "strata"))
    repo = os.path.dirname(os.path.dirname(here))
    builds = glob.glob(os.path.join(repo, "build*", "python", "strata", "_reader*.so"))
    builds.sort(key=lambda p: os.path.getmtime(p), reverse=True)
    out.extend(os.path.dirname(p) for p in builds)
    return out


def _load_native():
    """strata._reader: beside the package (installed), or in a build tree."""
    global _native
    if _native is not None:
        return _native
    try:
        from . import _reader
        _native = _reader
        return _native
    except ImportError:
        pass
    import importlib.machinery
    import importlib.util
    import sys
    for d in _native_candidates():
        for so in sorted(glob.glob(os.path.join(d, "_reader*.so"))):
            loader = importlib.machinery.ExtensionFileLoader("strata._reader", so)
            spec = importlib.util.spec_from_file_location("strata._reader", so, loader=loader)
            mod = importlib.util.module_from_spec(spec)
            loader.exec_module(mod)
            sys.modules["strata._reader"] = mod
            _native = mod
            return mod
    raise ImportError("strata._reader (the native trace reader) was not found: build it "
                      "(cmake --build <build>; target strata_py_reader) or set STRATA_PY_NATIVE "
                      "to the directory holding _reader*.so")


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


def _unique_codes(strings):
    """strings (list, by table id) -> (unique sorted categories, int32 map id->code)."""
    if not strings:
        return [], np.zeros(0, dtype=np.int32)
    cats, inv = np.unique(np.asarray(strings, dtype=object), return_inverse=True)
    return list(cats), inv.astype(np.int32)


def tag_columns(contexts, ctx_codes, keys=None):
    """Tag columns for events whose shared context ids are ctx_codes.
    keys: list of (key, is_int) to produce (all keys seen when None)."""
    import pandas as pd
    nctx = len(contexts)
    if keys is None:
        seen = {}
        for tags in contexts:
            for k, v in tags:
                is_int = not isinstance(v, str)
                seen[k] = seen.get(k, True) and is_int
        keys = list(seen.items())
    cols = {}
    for key, is_int in keys:
        if is_int:
            vals = np.zeros(nctx, dtype=np.int64)
            mask = np.ones(nctx, dtype=bool)
            for i, tags in enumerate(contexts):
                for k, v in tags:
                    if k == key:
                        vals[i] = v
                        mask[i] = False
            cols[key] = pd.arrays.IntegerArray(vals[ctx_codes], mask[ctx_codes])
        else:
            strs = {}
            codes = np.full(nctx, -1, dtype=np.int32)
            for i, tags in enumerate(contexts):
                for k, v in tags:
                    if k == key:
                        codes[i] = strs.setdefault(str(v), len(strs))
            cats = list(strs)
            cols[key] = _categorical(codes[ctx_codes], cats)
    return cols


def frame(cols, procs, keys=None, tags=True):
    """Builds the DataFrame from the native module's columns. procs: the scan
    dicts of the files read, in the order given to _reader.read."""
    import pandas as pd
    names = cols["names"]
    name_codes = cols["name"]
    n_cat, n_map = _unique_codes([nm for nm, _, _, _ in names])
    c_cat, c_map = _unique_codes([ct for _, ct, _, _ in names])
    k_map = np.asarray([k for _, _, k, _ in names], dtype=np.int32) if names else np.zeros(0, np.int32)
    # -1 (unknown name id) stays -1: index with a sentinel slot at the end.
    n_map = np.append(n_map, -1).astype(np.int32)
    c_map = np.append(c_map, -1).astype(np.int32)
    k_map = np.append(k_map, -1).astype(np.int32)
    pids = np.asarray([p["pid"] for p in procs], dtype=np.int64)
    data = {
        "pid": pids[cols["proc"]] if len(pids) else np.zeros(0, np.int64),
        "tid": cols["tid"],
        "ts": cols["ts"],
        "dur": cols["dur"],
        "cat": _categorical(c_map[name_codes], c_cat),
        "name": _categorical(n_map[name_codes], n_cat),
        "kind": _categorical(k_map[name_codes], KINDS),
        "path": _categorical(cols["path"], list(cols["paths"])),
        "fd": cols["fd"],
        "offset": cols["offset"],
        "size": cols["size"],
        "ret": cols["ret"],
        "err": cols["err"],
    }
    if tags:
        for k, v in tag_columns(cols["contexts"], cols["ctx"], keys).items():
            data[("tag_" + k) if k in data else k] = v
    return pd.DataFrame(data, copy=False)


def read_trace(path, tags=True):
    """A strata trace (directory or one .strata file) as a pandas DataFrame,
    one row per event, sorted by file then thread block order (not by ts)."""
    native = _load_native()
    procs = native.scan(os.fspath(path), False)
    specs = [native.FileSpec(p["file"], p["ts_offset"]) for p in procs]
    cols = native.read(specs)
    return frame(cols, procs, None, tags)
