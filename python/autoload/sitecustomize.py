# strata autoload hook. `strata run` puts this directory first on PYTHONPATH so
# that every Python process it traces loads strata's automatic instrumentation
# at start-up (python/strata/_auto.py), with no change to the user's code.
#
# It first runs the sitecustomize that would have run without us (the next one
# on sys.path, e.g. Debian's /usr/lib/python3.X/sitecustomize.py), then
# installs strata's lazy import hooks. Any failure of ours is reported on
# stderr (when STRATA_PY_DEBUG=1) and never stops the program.
#
# Collections are off while this module runs, and what it leaves in the
# young generation's count, but for the chained module's share, is hidden
# from the program's collection schedule (strata._auto._gc_hide).
import gc as _strata_gc

_strata_gc_enabled = _strata_gc.isenabled()
try:
    _strata_gc_before = _strata_gc.get_count()[0]
except Exception:  # an interpreter without it: nothing is hidden
    _strata_gc_before = None
_strata_gc.disable()
_strata_gc_chained = 0


def _strata_chain_next_sitecustomize():
    """Runs the next sitecustomize; returns the young-generation count it
    added, which the interpreter adds without strata too."""
    # The import system's own modules, loaded at start-up: the importlib
    # package (183 objects) would be an import of strata's.
    try:
        from _frozen_importlib import module_from_spec
        from _frozen_importlib_external import PathFinder
    except ImportError:  # pragma: no cover
        from importlib._bootstrap import module_from_spec
        from importlib.machinery import PathFinder
    import os
    import sys

    here = os.path.dirname(os.path.abspath(__file__))

    def same(p):
        try:
            return os.path.samefile(p or ".", here)
        except OSError:
            return False

    rest = [p for p in sys.path if not same(p)]
    count = (lambda: _strata_gc.get_count()[0]) if _strata_gc_before is not None else (lambda: 0)
    before = count()
    spec = PathFinder.find_spec("sitecustomize", rest)
    if spec is None or spec.loader is None or spec.origin == __file__:
        return count() - before
    module = module_from_spec(spec)
    # The chained module sees itself as "sitecustomize", like it would have.
    sys.modules["sitecustomize"] = module
    try:
        spec.loader.exec_module(module)
    except Exception:
        # site.py prints and ignores errors of sitecustomize; do the same.
        import traceback
        print("Error in sitecustomize (chained by strata); set PYTHONVERBOSE "
              "for traceback:", file=sys.stderr)
        if os.environ.get("PYTHONVERBOSE"):
            traceback.print_exc()
    return count() - before


def _strata_autoload():
    """Installs strata's hooks; returns strata._auto, or None."""
    import os
    import sys
    if os.environ.get("STRATA_PY", "1") == "0":
        return None
    # The package lives beside this directory (python/strata) unless
    # STRATA_PYTHONPATH says where.
    pkg_root = os.environ.get("STRATA_PYTHONPATH") or os.path.dirname(
        os.path.dirname(os.path.abspath(__file__)))
    if pkg_root not in sys.path:
        sys.path.append(pkg_root)
    try:
        from strata import _auto
        _auto.install()
        return _auto
    except Exception:
        if os.environ.get("STRATA_PY_DEBUG") == "1":
            import traceback
            traceback.print_exc()
    return None


try:
    _strata_gc_chained = _strata_chain_next_sitecustomize()  # not hidden
finally:
    _strata_auto = _strata_autoload()
    del _strata_chain_next_sitecustomize, _strata_autoload
    if _strata_auto is not None and _strata_gc_before is not None:
        _strata_auto._gc_hide(_strata_gc_before, _strata_gc_chained)
    if _strata_gc_enabled:
        _strata_gc.enable()
    del _strata_auto, _strata_gc, _strata_gc_enabled, _strata_gc_before, _strata_gc_chained
