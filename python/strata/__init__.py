"""strata: Python API of the strata I/O data-flow tracer.

    import strata
    with strata.region("preprocess", cat="app"): ...
    @strata.trace
    def load_sample(i): ...
    for batch in strata.iterate(loader, name="train", tag="step"): ...
    strata.tag(epoch=3)
    df = strata.read_trace("t")

Under `strata run` the runtime (libstrata.so) is preloaded and these calls record
events into the trace; in a process started otherwise (a notebook),
`strata.start(dir)` ... `strata.stop()` or `with strata.tracing(dir):` traces it
from that point on. Without it every call is a cheap no-op: `trace` returns
the function unchanged, `iterate` returns the iterable unchanged, `region` and
`tag` do nothing.
"""
import errno
import os
import time

from . import _capi


def _wraps(fn):
    # functools (with collections) is imported on first use, not at start-up
    # of every traced Python process.
    import functools
    return functools.wraps(fn)

__all__ = [
    "enabled", "now", "region", "trace", "iterate", "tag", "instant", "counter",
    "complete", "set_metadata", "thread_name", "flush", "read_trace", "trace_info",
    "start", "stop", "tracing",
]
__version__ = "0.1.0"

ENABLED = _capi.ENABLED

_bcache = {}


def _b(s):
    """str -> bytes, cached for the low-cardinality strings (names, categories, keys)."""
    b = _bcache.get(s)
    if b is None:
        b = s.encode("utf-8", "surrogateescape") if isinstance(s, str) else bytes(s)
        if len(_bcache) < 65536:
            _bcache[s] = b
    return b


def _path_b(p):
    if p is None:
        return None
    if isinstance(p, bytes):
        return p
    try:
        import os
        p = os.fspath(p)
    except TypeError:
        p = str(p)
    return p.encode("utf-8", "surrogateescape") if isinstance(p, str) else p


def enabled():
    """True when the strata runtime is loaded and recording this process."""
    return ENABLED


def _bind_hot_calls():
    # strata._fast when built (~10x cheaper per call than ctypes), else ctypes.
    global _now, _complete, _complete_io, _tag_save, _tag_restore
    global _tag_set_int, _tag_set_str, _tag_unset
    _h = _capi.hot_calls()
    _now, _complete, _complete_io = _h.now, _h.complete, _h.complete_io
    _tag_save, _tag_restore = _h.tag_save, _h.tag_restore
    _tag_set_int, _tag_set_str, _tag_unset = _h.tag_set_int, _h.tag_set_str, _h.tag_unset


if ENABLED:
    _bind_hot_calls()
else:
    _now = time.monotonic_ns


def now():
    """Current time in the trace's time base (CLOCK_MONOTONIC ns)."""
    return _now()


def complete(name, cat="app", start_ns=0, dur_ns=0, path=None, size=-1, ret=-1):
    """Records one complete event with explicit times (see now()). With path, size
    or ret it is an application-level I/O event (strata_complete_io)."""
    if not ENABLED:
        return
    if path is None and size == -1 and ret == -1:
        _complete(_b(name), _b(cat), start_ns, dur_ns)
    else:
        _complete_io(_b(name), _b(cat), start_ns, dur_ns, _path_b(path), int(size), int(ret))


def instant(name, cat="app"):
    if ENABLED:
        _capi.lib.strata_instant(_b(name), _b(cat))


def counter(name, value):
    if ENABLED:
        _capi.lib.strata_counter(_b(name), int(value))


def set_metadata(key, value):
    if ENABLED:
        _capi.set_metadata(_b(key), str(value).encode("utf-8", "surrogateescape"))


def thread_name(name):
    if ENABLED:
        _capi.thread_name(str(name).encode("utf-8", "surrogateescape"))


def flush():
    """Writes every buffered event of this process to disk now."""
    if ENABLED:
        _capi.flush()


# --------------------------------------------------------------------------
# Attach: tracing a process `strata run` did not start (a notebook, a service).

_attach_env = None  # os.environ entries start() replaced: name -> old value or None


def _autoload_dir():
    here = os.path.dirname(os.path.abspath(__file__))
    d = os.path.join(os.path.dirname(here), "autoload")
    return d if os.path.isdir(d) else None


def _export_env(trace_dir, lib_path):
    """What `strata run` sets, so that programs exec'd after start() are
    traced too (Python ones with the automatic instrumentation)."""
    global _attach_env
    env = {"STRATA_DIR": trace_dir}
    pre = os.environ.get("LD_PRELOAD", "")
    if lib_path not in pre.replace(" ", ":").split(":"):
        env["LD_PRELOAD"] = lib_path + (":" + pre if pre else "")
    if "STRATA_PY_NATIVE" not in os.environ and _capi.fast is not None:
        env["STRATA_PY_NATIVE"] = os.path.dirname(_capi.fast.__file__)
    auto = _autoload_dir()
    if auto:
        pkg_parent = os.path.dirname(auto)
        entries = auto + ":" + pkg_parent
        pp = os.environ.get("PYTHONPATH", "")
        env["PYTHONPATH"] = entries + (":" + pp if pp else "")
    _attach_env = {k: os.environ.get(k) for k in env}
    os.environ.update(env)


def _restore_env():
    global _attach_env
    for k, v in (_attach_env or {}).items():
        if v is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = v
    _attach_env = None


def start(dir):
    """Starts tracing this process into directory `dir`, as `strata run` would:
    POSIX/STDIO calls of every thread, of libraries loaded later (ctypes,
    extension modules), of forked children, and of programs started after
    this call. Raises RuntimeError when already tracing (e.g. under
    `strata run`) or when libstrata.so cannot be found (set STRATA_LIB)."""
    global ENABLED
    import ctypes
    lib = _capi.attach_lib()
    if lib.strata_enabled():
        raise RuntimeError("strata.start: this process is traced already (strata run or start())")
    trace_dir = os.path.abspath(os.fspath(dir))
    _export_env(trace_dir, os.path.abspath(_capi._attach_path))
    if lib.strata_start(trace_dir.encode("utf-8", "surrogateescape")) != 0:
        err = ctypes.get_errno()
        _restore_env()
        if err == errno.EBUSY:
            raise RuntimeError("strata.start: this process is traced already (strata run or start())")
        raise RuntimeError("strata.start(%r): %s" % (trace_dir, os.strerror(err)))
    ENABLED = _capi.rebind()
    if ENABLED:
        _bind_hot_calls()
        from . import _auto
        _auto._gc_neutral(_auto.install)  # hidden from the program's collections
    return trace_dir


def stop():
    """Finishes the trace start() began: every buffered event is written and
    the process runs untraced again. Returns False if start() was not called."""
    global ENABLED
    lib = _capi._attach_lib
    if lib is None or lib.strata_stop() != 0:
        return False
    _restore_env()
    ENABLED = _capi.rebind()
    return True


class tracing:
    """Context manager: `with strata.tracing("t"): ...` is start("t") ... stop()."""

    def __init__(self, dir):
        self.dir = dir

    def __enter__(self):
        return start(self.dir)

    def __exit__(self, *exc):
        stop()
        return False


def _set_tags(kv):
    for k, v in kv.items():
        kb = _b(k)
        if v is None:
            _tag_unset(kb)
        elif isinstance(v, (bool, int)) and -(1 << 63) <= v < (1 << 63):
            _tag_set_int(kb, int(v))
        else:
            _tag_set_str(kb, str(v).encode("utf-8", "surrogateescape"))


class tag:
    """Sets context tags on the calling thread: every event it records afterwards
    (application, POSIX and STDIO events) carries them. Ints are stored as ints
    (past 64 bits, as their str()), anything else as its str(); None removes
    the key.

        strata.tag(epoch=3)              # in force until changed
        with strata.tag(stage="eval"):   # restored at the end of the block
            ...
    """
    __slots__ = ("_saved",)

    def __init__(self, **kv):
        if ENABLED:
            self._saved = _tag_save()
            _set_tags(kv)
        else:
            self._saved = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        if self._saved is not None:
            _tag_restore(self._saved)
        return False

    def restore(self):
        """Puts back the tags that were in force before this call."""
        self.__exit__(None, None, None)


class region:
    """Context manager: one complete event `name` (category `cat`) covering the
    block. Keyword arguments are tags in force for the block (and on the event).
    Implemented with explicit times, so regions may span generator yields."""
    __slots__ = ("_name", "_cat", "_tags", "_saved", "_t0")

    def __init__(self, name, cat="app", **tags):
        self._name = name
        self._cat = cat
        self._tags = tags
        self._saved = None

    def __enter__(self):
        if ENABLED:
            if self._tags:
                self._saved = _tag_save()
                _set_tags(self._tags)
            self._t0 = _now()
        return self

    def __exit__(self, *exc):
        if ENABLED:
            t1 = _now()
            _complete(_b(self._name), _b(self._cat), self._t0, t1 - self._t0)
            if self._saved is not None:
                _tag_restore(self._saved)
                self._saved = None
        return False

    def __call__(self, fn):  # also usable as a decorator: @strata.region("x", stage="eval")
        return _trace(fn, self._name, self._cat, self._tags)


def _enter_tags(tags):
    """Tags in force for one timed section of a wrapper (region's keywords)."""
    if not tags:
        return None
    saved = _tag_save()
    _set_tags(tags)
    return saved


def _leave_tags(saved):
    if saved is not None:
        _tag_restore(saved)


def _wrap_function(fn, nb, cb, tags):
    @_wraps(fn)
    def wrapper(*args, **kwargs):
        saved = _enter_tags(tags)
        t0 = _now()
        try:
            return fn(*args, **kwargs)
        finally:
            _complete(nb, cb, t0, _now() - t0)
            _leave_tags(saved)
    return wrapper


def _wrap_coroutine(fn, nb, cb, tags):
    @_wraps(fn)
    async def wrapper(*args, **kwargs):
        saved = _enter_tags(tags)
        t0 = _now()
        try:
            return await fn(*args, **kwargs)
        finally:
            _complete(nb, cb, t0, _now() - t0)
            _leave_tags(saved)
    return wrapper


def _wrap_generator(fn, nb, cb, tags):
    # One event per resumption of the generator (the time it spends producing
    # each item, not the consumer's time); send() and throw() are forwarded.
    @_wraps(fn)
    def wrapper(*args, **kwargs):
        gen = fn(*args, **kwargs)
        to_send, to_throw = None, None
        while True:
            saved = _enter_tags(tags)
            t0 = _now()
            try:
                if to_throw is not None:
                    exc, to_throw = to_throw, None
                    item = gen.throw(exc)
                else:
                    item = gen.send(to_send)
            except StopIteration as stop:
                _complete(nb, cb, t0, _now() - t0)
                _leave_tags(saved)
                return stop.value
            except BaseException:
                _complete(nb, cb, t0, _now() - t0)
                _leave_tags(saved)
                raise
            _complete(nb, cb, t0, _now() - t0)
            _leave_tags(saved)
            try:
                to_send = yield item
            except GeneratorExit:
                gen.close()
                raise
            except BaseException as exc:
                to_throw, to_send = exc, None
    return wrapper


def _wrap_async_generator(fn, nb, cb, tags):
    # One event per resumption, as for generators; asend() values and
    # athrow() exceptions forwarded.
    @_wraps(fn)
    async def wrapper(*args, **kwargs):
        agen = fn(*args, **kwargs)
        to_send, to_throw = None, None
        while True:
            saved = _enter_tags(tags)
            t0 = _now()
            try:
                if to_throw is not None:
                    exc, to_throw = to_throw, None
                    item = await agen.athrow(exc)
                else:
                    item = await agen.asend(to_send)
            except StopAsyncIteration:
                _complete(nb, cb, t0, _now() - t0)
                _leave_tags(saved)
                return
            except BaseException:
                _complete(nb, cb, t0, _now() - t0)
                _leave_tags(saved)
                raise
            _complete(nb, cb, t0, _now() - t0)
            _leave_tags(saved)
            try:
                to_send = yield item
            except GeneratorExit:
                await agen.aclose()
                raise
            except BaseException as exc:
                to_throw, to_send = exc, None
    return wrapper


def trace(fn=None, *, name=None, cat="app"):
    """Decorator: one complete event per call, named after the function's
    qualified name (or `name`). Works on functions, methods, static/class
    methods, coroutine functions, and generator and async generator functions
    (one event per resumption). Keeps functools.wraps metadata. Without the tracer the function
    is returned unchanged.

        @strata.trace
        def f(): ...
        @strata.trace(name="load", cat="io")
        def g(): ...
    """
    if fn is None:
        return lambda f: trace(f, name=name, cat=cat)
    return _trace(fn, name, cat, None)


def _trace(fn, name, cat, tags):
    if isinstance(fn, (staticmethod, classmethod)):
        return type(fn)(_trace(fn.__func__, name, cat, tags))
    if not ENABLED:
        return fn
    nb = _b(name or getattr(fn, "__qualname__", None) or getattr(fn, "__name__", "call"))
    cb = _b(cat)
    # code flags instead of the inspect module (heavy to import at start-up)
    flags = getattr(getattr(fn, "__code__", None), "co_flags", 0)
    if flags & 0x20:     # CO_GENERATOR
        return _wrap_generator(fn, nb, cb, tags)
    if flags & 0x200:    # CO_ASYNC_GENERATOR
        return _wrap_async_generator(fn, nb, cb, tags)
    if flags & 0x80:     # CO_COROUTINE
        return _wrap_coroutine(fn, nb, cb, tags)
    return _wrap_function(fn, nb, cb, tags)


def _iterate(iterable, nb, fb, cb, kb, start):
    saved = _tag_save()
    it = iter(iterable)
    i = start
    try:
        while True:
            if kb is not None:
                _tag_set_int(kb, i)
            t0 = _now()
            try:
                item = next(it)
            except StopIteration:
                break
            _complete(fb, cb, t0, _now() - t0)
            try:
                yield item
            finally:
                _complete(nb, cb, t0, _now() - t0)
            i += 1
    finally:
        _tag_restore(saved)


def iterate(iterable, name="iterate", tag="step", cat="app", start=0):
    """Iterates over `iterable`, recording for item i (counted from `start`):
    an event `name` covering the whole step (from asking for item i until the
    loop asks for item i+1) and an event `name`.fetch covering the time spent
    getting the item. The tag `tag` (None for none) is set to i while item i is
    fetched and while the loop body runs; the previous tags are restored at the
    end. Without the tracer the iterable is returned unchanged."""
    if not ENABLED:
        return iterable
    return _iterate(iterable, _b(name), _b(name + ".fetch"), _b(cat),
                    _b(tag) if tag else None, start)


def read_trace(path, tags=True, threads=0):
    """Reads a trace (directory or file) into a pandas DataFrame, one row per
    event. See strata._frame.read_trace."""
    from ._frame import read_trace as _rt
    return _rt(path, tags=tags, threads=threads)


def trace_info(path):
    """Per-process information of a trace (list of dicts)."""
    from ._frame import trace_info as _ti
    return _ti(path)


def __getattr__(attr):  # lazy submodules: strata.dask
    if attr == "dask":
        import importlib
        return importlib.import_module(".dask", __name__)
    raise AttributeError("module 'strata' has no attribute %r" % attr)
