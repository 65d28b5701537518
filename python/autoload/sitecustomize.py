# strata autoload hook. `strata run` puts this directory first on PYTHONPATH so
# that every Python process it traces loads strata's automatic instrumentation
# at start-up (python/strata/_auto.py), with no change to the user's code.
#
# It first runs the sitecustomize that would have run without us (the next one
# on sys.path, e.g. Debian's /usr/lib/python3.X/sitecustomize.py), then
# installs strata's lazy import hooks. Any failure of ours is reported on
# stderr (when STRATA_PY_DEBUG=1) and never stops the program.
#
# strata's own start-up work runs with collections off, and what it added to
# the young generation's count is then hidden from the program's collection
# schedule (strata._auto._gc_hide; docs/python.md).


def _strata_chain_next_sitecustomize():
    # True when the next sitecustomize ran and now holds the name.
    # The import system's own modules, loaded at start-up: importing the
    # importlib package (183 objects) would be strata's doing.
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
    spec = PathFinder.find_spec("sitecustomize", rest)
    if spec is None or spec.loader is None or spec.origin == __file__:
        return False
    module = module_from_spec(spec)
    # The chained module sees itself as "sitecustomize", like it would have.
    ours = sys.modules.get("sitecustomize")
    sys.modules["sitecustomize"] = module
    try:
        spec.loader.exec_module(module)
    except Exception as err:
        # What site.py prints for a sitecustomize that raised, and then goes
        # on (silently for an ImportError of the name itself); the half-run
        # module is not kept (the import system wants a module under the
        # name until this one's end: this one's).
        sys.modules["sitecustomize"] = ours
        if isinstance(err, ImportError) and err.name == "sitecustomize":
            return False
        if sys.flags.verbose:
            sys.excepthook(*sys.exc_info())
        else:
            sys.stderr.write("Error in sitecustomize; set PYTHONVERBOSE for traceback:\n"
                             "%s: %s\n" % (err.__class__.__name__, err))
        return False
    return True


def _strata_autoload():
    import os
    import sys
    if os.environ.get("STRATA_PY", "1") == "0":
        return
    import gc
    try:
        if not gc.isenabled():  # turned off by the chained module: left alone
            before = None
        else:
            before = gc.get_count()[0]
            gc.disable()
    except Exception:  # an interpreter without these calls: nothing is hidden
        before = None
    auto = None
    try:
        # The package lives beside this directory (python/strata) unless
        # STRATA_PYTHONPATH says where.
        pkg_root = os.environ.get("STRATA_PYTHONPATH") or os.path.dirname(
            os.path.dirname(os.path.abspath(__file__)))
        if pkg_root not in sys.path:
            sys.path.append(pkg_root)
        from strata import _auto as auto
        if auto.install() and before is not None:
            auto._gc_make_spares()
    except Exception:
        if os.environ.get("STRATA_PY_DEBUG") == "1":
            import traceback
            traceback.print_exc()
    finally:
        if before is not None:
            try:
                if auto is not None:
                    auto._gc_hide(before)
            finally:
                gc.enable()


def _strata_leave_sys_path():
    # The program sees the sys.path it would have without strata: the entries
    # `strata run` put first on PYTHONPATH (children still get them from the
    # environment) go, once they have served. They also cost every top-level
    # import a look into both directories: ~8 M instructions when PyTorch and
    # NumPy load. An entry stays when the user's own PYTHONPATH names it too
    # (site keeps one of the two) or when it is a site-packages directory,
    # and the package's directory stays unless `strata run` named it
    # (STRATA_PYTHONPATH) and the package is loaded (not with STRATA_PY=0 or
    # a failed install), for a later `import strata`. Nothing here may fail
    # the program's start.
    try:
        import os
        import site
        import sys
        here = os.path.dirname(os.path.abspath(__file__))
        ours = [here]
        root = os.environ.get("STRATA_PYTHONPATH")
        if root and "strata" in sys.modules:
            ours.append(os.path.abspath(root))
        named = [os.path.abspath(p) for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
        keep = set(site.getsitepackages())
        keep.add(site.getusersitepackages())
        keep = {os.path.abspath(d) for d in keep}
        for d in ours:
            if named.count(d) > 1 or d in keep:
                continue
            for i, p in enumerate(sys.path):
                if p and os.path.abspath(p) == d:
                    del sys.path[i]
                    break
    except Exception:
        pass


_strata_chained = False
try:
    _strata_chained = _strata_chain_next_sitecustomize()  # as it would run without strata
finally:
    try:
        _strata_autoload()
    finally:
        _strata_leave_sys_path()
    del _strata_chain_next_sitecustomize, _strata_autoload, _strata_leave_sys_path

# Without a sitecustomize of its own (none further on sys.path, or one that
# failed) the program has none in sys.modules: an ImportError of this name is
# what site.py passes over in silence, and the import system then takes this
# module out of sys.modules again. The layer's work above is done and kept.
if not _strata_chained:
    del _strata_chained
    raise ImportError("no sitecustomize but strata's", name="sitecustomize")
del _strata_chained
