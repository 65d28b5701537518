# strata autoload hook. `strata run` puts this directory first on PYTHONPATH so
# that every Python process it traces loads strata's automatic instrumentation
# at start-up (python/strata/_auto.py), with no change to the user's code.
#
# It first runs the sitecustomize that would have run without us (the next one
# on sys.path, e.g. Debian's /usr/lib/python3.X/sitecustomize.py), then
# installs strata's lazy import hooks. Any failure of ours is reported on
# stderr (when STRATA_PY_DEBUG=1) and never stops the program.


def _strata_chain_next_sitecustomize():
    import importlib.machinery
    import os
    import sys

    here = os.path.dirname(os.path.abspath(__file__))

    def same(p):
        try:
            return os.path.samefile(p or ".", here)
        except OSError:
            return False

    rest = [p for p in sys.path if not same(p)]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", rest)
    if spec is None or spec.loader is None or spec.origin == __file__:
        return
    try:  # importlib.util would import contextlib, collections... at every start
        from importlib._bootstrap import module_from_spec
    except ImportError:  # pragma: no cover
        from importlib.util import module_from_spec
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


def _strata_autoload():
    import os
    import sys
    if os.environ.get("STRATA_PY", "1") == "0":
        return
    # The package lives beside this directory (python/strata) unless
    # STRATA_PYTHONPATH says where.
    pkg_root = os.environ.get("STRATA_PYTHONPATH") or os.path.dirname(
        os.path.dirname(os.path.abspath(__file__)))
    if pkg_root not in sys.path:
        sys.path.append(pkg_root)
    try:
        from strata import _auto
        _auto.install()
    except Exception:
        if os.environ.get("STRATA_PY_DEBUG") == "1":
            import traceback
            traceback.print_exc()


try:
    _strata_chain_next_sitecustomize()
finally:
    _strata_autoload()
    del _strata_chain_next_sitecustomize, _strata_autoload
