"""ctypes binding of the strata C API (include/strata/strata.h).

The runtime (libstrata.so) is normally already in the process: `strata run`
preloads it. We look its symbols up in the global namespace (dlopen(NULL)); we
never load it ourselves unless STRATA_PY_LIB names it explicitly. When the
symbols are absent, or the runtime says it is not recording, ENABLED is False
and every wrapper in strata becomes a cheap no-op.
"""
import ctypes
import os

ENABLED = False
lib = None


def _bind(handle):
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
    global ENABLED, lib
    if os.environ.get("STRATA_PY_DISABLE") == "1":
        return
    try:
        explicit = os.environ.get("STRATA_PY_LIB")
        handle = ctypes.CDLL(explicit) if explicit else ctypes.CDLL(None)
        handle = _bind(handle)
    except (OSError, AttributeError):
        return
    lib = handle
    try:
        ENABLED = bool(handle.strata_enabled())
    except Exception:  # pragma: no cover - defensive
        ENABLED = False


_load()
