"""Bindings of the strata C API (include/strata/strata.h).

The runtime (libstrata.so) is normally already in the process: `strata run`
preloads it. The hot calls go through the native module strata._fast, which
looks the symbols up in the process; the other calls through ctypes, bound on
first use (`lib`), since importing ctypes costs every traced Python process
a few milliseconds at start-up. Without _fast, ctypes serves everything. We
never load the runtime ourselves unless STRATA_PY_LIB names it explicitly.
When the symbols are absent, or the runtime says it is not recording, ENABLED
is False and every wrapper in strata becomes a cheap no-op.
"""
import os
import sys

ENABLED = False
fast = None   # strata._fast (hot calls without ctypes) when found
_lib = None


def __getattr__(name):
    # `_capi.lib`: the ctypes bindings, made on first use.
    if name == "lib":
        return _ctypes_lib()
    raise AttributeError(name)


def _ctypes_lib():
    global _lib
    if _lib is None:
        import ctypes
        explicit = os.environ.get("STRATA_PY_LIB")
        _lib = _bind(ctypes.CDLL(explicit) if explicit else ctypes.CDLL(None))
    return _lib


def _bind(handle):
    import ctypes
    c = ctypes
    sig = {
        "strata_enabled": (c.c_int, []),
        "strata_region_begin": (None, [c.c_char_p, c.c_char_p]),
        "strata_region_end": (None, []),
        "strata_complete": (None, [c.c_char_p, c.c_char_p, c.c_uint64, c.c_uint64]),
        "strata_complete_io": (None, [c.c_char_p, c.c_char_p, c.c_uint64, c.c_uint64,
                                      c.c_char_p, c.c_int64, c.c_int64]),
        "strata_instant": (None, [c.c_char_p, c.c_char_p]),
        "strata_counter": (None, [c.c_char_p, c.c_int64]),
        "strata_now": (c.c_uint64, []),
        "strata_tag_set_int": (None, [c.c_char_p, c.c_int64]),
        "strata_tag_set_str": (None, [c.c_char_p, c.c_char_p]),
        "strata_tag_unset": (None, [c.c_char_p]),
        "strata_tag_clear": (None, []),
        "strata_tag_save": (c.c_uint32, []),
        "strata_tag_restore": (None, [c.c_uint32]),
        "strata_set_metadata": (None, [c.c_char_p, c.c_char_p]),
        "strata_thread_name": (None, [c.c_char_p]),
        "strata_flush": (None, []),
    }
    for name, (res, args) in sig.items():
        fn = getattr(handle, name)  # AttributeError when the runtime lacks it
        fn.restype = res
        fn.argtypes = args
    return handle


def _load():
    global ENABLED, fast
    if os.environ.get("STRATA_PY_DISABLE") == "1":
        return
    if os.environ.get("STRATA_PY_FAST", "1") != "0" and not os.environ.get("STRATA_PY_LIB"):
        try:
            fast = _load_fast()
            if fast is not None:
                ENABLED = bool(fast.enabled())
        except Exception:  # a stale or foreign build: ctypes serves instead
            fast = None
        if fast is not None:
            if not ENABLED:
                fast = None
            return
    try:
        handle = _ctypes_lib()
    except (OSError, AttributeError):
        return
    try:
        ENABLED = bool(handle.strata_enabled())
    except Exception:  # pragma: no cover - defensive
        ENABLED = False


def _machinery():
    """What importlib.machinery offers, from the import system's own modules
    (loaded at start-up): importing importlib.machinery in every traced
    process also imported importlib and warnings, ~0.3 ms."""
    try:
        import _frozen_importlib
        import _frozen_importlib_external as ext
        return ext.EXTENSION_SUFFIXES, ext.ExtensionFileLoader, _frozen_importlib.ModuleSpec
    except (ImportError, AttributeError):  # pragma: no cover (not CPython)
        import importlib.machinery as m
        return m.EXTENSION_SUFFIXES, m.ExtensionFileLoader, m.ModuleSpec


def _load_fast():
    """strata._fast from $STRATA_PY_NATIVE (set by `strata run`) or beside
    the package, found without globbing; else from native_dirs()."""
    here = os.path.dirname(os.path.abspath(__file__))
    for d in (os.environ.get("STRATA_PY_NATIVE"), here):
        if not d:
            continue
        # Only a build for this interpreter (its own extension suffixes).
        for suffix in _machinery()[0]:
            so = os.path.join(d, "_fast" + suffix)
            if os.path.exists(so):
                return _exec_extension("strata._fast", so)
    return load_extension("_fast")


def _exec_extension(full, so):
    _, ExtensionFileLoader, ModuleSpec = _machinery()
    loader = ExtensionFileLoader(full, so)
    spec = ModuleSpec(full, loader, origin=so)
    mod = loader.create_module(spec)
    loader.exec_module(mod)
    sys.modules[full] = mod
    return mod


def runtime_lib_dir():
    """Directory of the preloaded libstrata.so, from /proc/self/maps."""
    try:
        with open("/proc/self/maps") as f:
            for line in f:
                if "libstrata" in line and line.rstrip().endswith(".so"):
                    return os.path.dirname(line.split(None, 5)[-1].strip())
    except OSError:
        pass
    return None


def native_dirs():
    """Where the native modules may be: beside the package (installed),
    $STRATA_PY_NATIVE, <libstrata.so dir>/../python/strata (the build tree of
    the runtime in use), then <repo>/build*/python/strata (newest first)."""
    here = os.path.dirname(os.path.abspath(__file__))
    out = [here]
    env = os.environ.get("STRATA_PY_NATIVE")
    if env:
        out.append(env)
    libdir = runtime_lib_dir()
    if libdir:
        out.append(os.path.normpath(os.path.join(libdir, os.pardir, "python", "strata")))
    import glob
    repo = os.path.dirname(os.path.dirname(here))
    builds = glob.glob(os.path.join(repo, "build*", "python", "strata"))
    builds.sort(key=os.path.getmtime, reverse=True)
    out.extend(builds)
    return out


def load_extension(name):
    """Imports strata.<name> from the first of native_dirs() holding it."""
    import glob
    full = "strata." + name
    if full in sys.modules:
        return sys.modules[full]
    for d in native_dirs():
        for so in sorted(glob.glob(os.path.join(d, name + ".*.so")) + glob.glob(os.path.join(d, name + ".so"))):
            return _exec_extension(full, so)
    return None


_load()


def thread_name(name):
    """strata_thread_name(bytes), without ctypes when _fast is there (forked
    DataLoader workers would otherwise each import ctypes)."""
    (fast.thread_name if fast is not None else _ctypes_lib().strata_thread_name)(name)


def set_metadata(key, value):
    (fast.set_metadata if fast is not None else _ctypes_lib().strata_set_metadata)(key, value)


def flush():
    (fast.flush if fast is not None else _ctypes_lib().strata_flush)()


def hot_calls():
    """The C API calls made per event, as a namespace: from strata._fast when
    built (no ctypes argument conversion), else the ctypes bindings. Only
    meaningful when ENABLED."""
    import types
    if fast is not None:
        f = fast
        return types.SimpleNamespace(now=f.now, complete=f.complete, complete_io=f.complete_io,
                                     tag_save=f.tag_save, tag_restore=f.tag_restore, tag_set_int=f.tag_set_int,
                                     tag_set_str=f.tag_set_str, tag_unset=f.tag_unset,
                                     io_call=getattr(f, "io_call", None), stand_in=getattr(f, "stand_in", None))
    lib = _ctypes_lib()
    return types.SimpleNamespace(now=lib.strata_now, complete=lib.strata_complete,
                                 complete_io=lib.strata_complete_io, tag_save=lib.strata_tag_save,
                                 tag_restore=lib.strata_tag_restore, tag_set_int=lib.strata_tag_set_int,
                                 tag_set_str=lib.strata_tag_set_str, tag_unset=lib.strata_tag_unset,
                                 io_call=None, stand_in=None)


# --------------------------------------------------------------------------
# Attach: strata.start() in a process `strata run` did not start.

_attach_lib = None   # ctypes handle of libstrata.so used by start()/stop()
_attach_path = None  # its path


def find_runtime_lib():
    """Path of the libstrata.so that start() loads: $STRATA_LIB, then the
    preloaded one, then <native dir>/../../lib/libstrata.so for each of
    native_dirs() (the build tree: build/python/strata -> build/lib)."""
    explicit = os.environ.get("STRATA_LIB") or os.environ.get("STRATA_PY_LIB")
    if explicit:
        return explicit
    libdir = runtime_lib_dir()
    if libdir:
        return os.path.join(libdir, "libstrata.so")
    for d in native_dirs():
        cand = os.path.normpath(os.path.join(d, os.pardir, os.pardir, "lib", "libstrata.so"))
        if os.path.exists(cand):
            return cand
    return None


def attach_lib():
    """libstrata loaded with ctypes (RTLD_GLOBAL, so strata._fast finds its
    symbols) and its attach calls bound; raises RuntimeError if not found."""
    global _attach_lib, _attach_path
    if _attach_lib is not None:
        return _attach_lib
    import ctypes
    path = find_runtime_lib()
    if path is None:
        raise RuntimeError("strata.start: libstrata.so not found; set STRATA_LIB to its path")
    try:
        lib = ctypes.CDLL(path, mode=ctypes.RTLD_GLOBAL, use_errno=True)
        for name in ("strata_start", "strata_stop", "strata_attached"):
            getattr(lib, name).restype = ctypes.c_int
        lib.strata_start.argtypes = [ctypes.c_char_p]
        lib.strata_stop.argtypes = []
    except (OSError, AttributeError) as e:
        raise RuntimeError("strata.start: cannot use %s: %s" % (path, e)) from None
    _attach_lib, _attach_path = lib, path
    return lib


def rebind():
    """After start()/stop(): ENABLED and the call bindings follow the runtime."""
    global ENABLED, fast, _lib
    if _attach_lib is not None and _lib is None and not os.environ.get("STRATA_PY_LIB"):
        _lib = _bind(_attach_lib)
    if fast is None and os.environ.get("STRATA_PY_FAST", "1") != "0":
        try:
            fast = _load_fast()
        except Exception:
            fast = None
    ENABLED = bool(fast.enabled() if fast is not None else _ctypes_lib().strata_enabled())
    return ENABLED
