"""Automatic instrumentation of Python programs under `strata run`.

Loaded by python/autoload/sitecustomize.py at interpreter start-up. Nothing is
imported eagerly: an import hook patches a library right after the program (or
a library) imports it. See docs/python.md for every patch and its cost.

Environment switches (all read once at start-up):
  STRATA_PY=0          no automatic instrumentation at all
  STRATA_PY_TORCH=0    leave torch alone        STRATA_PY_NUMPY=0  leave numpy alone
  STRATA_PY_PIL=0      leave Pillow alone       STRATA_PY_H5PY=0   leave h5py alone
  STRATA_PY_DEEP=1     expensive instrumentation: one event per dataset sample
                       (Dataset.__getitem__, with a `sample` tag) and per
                       nn.Module call at every depth, not only the top level
  STRATA_PY_DEBUG=1    print patching errors on stderr
"""
import gc as _gc
import os
import sys
from _thread import _local as _thread_local
from _weakref import ref as _weakref

from . import _capi


_installed = False
_DEEP = os.environ.get("STRATA_PY_DEEP", "0") == "1"
_DEBUG = os.environ.get("STRATA_PY_DEBUG", "0") == "1"

# Bound in install() when the runtime is recording.
_now = _complete = _complete_io = _io_call = _stand_in_fast = None
_tag_set_int = _tag_set_str = _tag_unset = _tag_save = _tag_restore = None

# Categories written by the automatic instrumentation.
CAT_LOADER = b"dataloader"
CAT_COMPUTE = b"compute"
CAT_CKPT = b"checkpoint"
CAT_NUMPY = b"numpy"
CAT_PIL = b"PIL"
CAT_H5PY = b"h5py"

K_EPOCH, K_STEP, K_WORKER, K_SAMPLE = b"epoch", b"step", b"worker", b"sample"
K_LOADER = b"loader"


def _debug(msg):
    if _DEBUG:
        import traceback
        print("strata: " + msg, file=sys.stderr)
        traceback.print_exc()


def _pathb(f):
    """Path of a file argument (str, bytes, PathLike or an open file object)."""
    try:
        p = os.fspath(f)
    except TypeError:
        try:
            p = getattr(f, "name", None)
        except Exception:  # the object's own code raised: the program did not ask
            return None
        if not isinstance(p, (str, bytes)):
            return None
    if isinstance(p, str):
        return p.encode("utf-8", "surrogateescape")
    return p


def _is_pathlike(f):
    return isinstance(f, (str, bytes, os.PathLike))


# --------------------------------------------------------------------------
# The program's garbage-collection schedule.
#
# CPython starts a young-generation collection when the young generation's
# count (allocations minus deallocations of tracked objects) passes
# threshold 0, and the older generations when enough younger collections ran.
# strata's own objects (its modules, the patches' wrappers) would add to that
# count and move every later collection earlier by a fraction of a period: in
# a DataLoader job, enough to put a full collection, which copies the whole
# inherited heap of a forked worker, into every worker (docs/python.md).
# So strata's own work runs with collections off and then takes back what it
# added to the count: by freeing as many spare objects made at start-up
# (exact), or, at start-up and once they are gone, by raising threshold 0 as
# much until the next young collection (exact while the program does not free
# more than it allocated since its last collection: the count stops at zero).

_gc_state = {"program": None, "raised": None, "sentinel": None, "depth": 0}
# Spare objects, made at start-up and hidden with the rest of it: each later
# piece of the layer's work frees as many as it allocated. Instances of a
# class of their own: CPython keeps freed empty lists (and tuples, dicts) for
# reuse without taking them off the count.
_gc_reserve = []
_GC_RESERVE = 512


class _GcSpare:
    __slots__ = ()


class _GcSentinel:
    __slots__ = ("cycle", "__weakref__")


def _gc_make_spares():
    """Called by sitecustomize inside its hidden start-up work."""
    _gc_reserve.extend(_GcSpare() for _ in range(_GC_RESERVE))


def _gc_restore(_ref):
    # Called by the collector when it frees the sentinel cycle: the first
    # young collection since the threshold was raised.
    st = _gc_state
    t = _gc.get_threshold()
    if st["raised"] is not None and t[0] == st["raised"]:  # else the program set its own
        _gc.set_threshold(st["program"], t[1], t[2])
    st["program"] = st["raised"] = st["sentinel"] = None


def _gc_hide(before, excluded=0):
    """Hides from the program's schedule the young-generation count added
    since it was `before` (collections off all along), less `excluded`."""
    st = _gc_state
    try:
        added = _gc.get_count()[0] - before - excluded
        if 0 < added <= len(_gc_reserve):
            # Freeing as many spare objects takes the count back to where the
            # program left it.
            del _gc_reserve[-added:]
            return
        t0, t1, t2 = _gc.get_threshold()
        if t0 <= 0 or added == 0:
            return
        if st["sentinel"] is None:
            cycle = _GcSentinel()
            cycle.cycle = cycle  # only a collection frees it
            st["sentinel"] = _weakref(cycle, _gc_restore)
            del cycle
            added += 2  # the sentinel and its weak reference
        if st["raised"] is None or t0 != st["raised"]:
            st["program"] = t0
        st["raised"] = max(1, t0 + added)
        _gc.set_threshold(st["raised"], t1, t2)
    except Exception:  # never the program's problem
        _debug("hiding strata's allocations from the collector failed")


def _gc_neutral(fn, *args):
    """Runs fn(*args) as if what it allocated were not counted."""
    st = _gc_state
    if st["depth"]:  # inside the layer's work already: counted there
        return fn(*args)
    try:
        if not _gc.isenabled():
            # The program turned collections off: its schedule is its own
            # calls of gc.collect(), and a raised threshold would only be seen.
            _gc_restore(None)
            return fn(*args)
        before = _gc.get_count()[0]
    except Exception:  # an interpreter without these calls: nothing to hide
        return fn(*args)
    st["depth"] = 1
    _gc.disable()
    try:
        return fn(*args)
    finally:
        try:
            _gc_hide(before)
        finally:
            st["depth"] = 0
            _gc.enable()


def _gc_after_fork_in_child():
    # A fork from another thread while this one was inside _gc_neutral: the
    # child has no thread to turn collections back on.
    if _gc_state["depth"]:
        _gc_state["depth"] = 0
        _gc.enable()


# --------------------------------------------------------------------------
# Import hook: run a patcher right after a watched module finished executing.

_PATCHERS = {}     # module name -> function(module)
_patched = set()


try:
    import _frozen_importlib as _bootstrap  # importlib._bootstrap, loaded at start-up
except ImportError:  # pragma: no cover
    from importlib import _bootstrap


class _PostImportFinder:
    """A meta path finder that only wraps the loader of watched modules so that
    their patcher runs after the module body; it finds nothing itself."""

    def __init__(self):
        self._busy = set()

    def find_spec(self, name, path=None, target=None):
        if name not in _PATCHERS or name in self._busy or name in _patched:
            return None
        # Not hidden from the collector: the program's import would have
        # found the same spec (importlib.util, 2,300 objects, stays unloaded).
        self._busy.add(name)
        try:
            spec = _bootstrap._find_spec(name, path, target)
        except Exception:
            return None
        finally:
            self._busy.discard(name)
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        loader = spec.loader
        orig_exec = loader.exec_module

        def exec_module(module, _orig=orig_exec, _name=name):
            _orig(module)
            _gc_neutral(_after_exec, loader, _name, module)

        loader.exec_module = exec_module
        return spec

    def invalidate_caches(self):
        pass


def _after_exec(loader, name, module):
    try:
        del loader.exec_module  # back to the class method
    except AttributeError:
        pass
    _run_patcher(name, module)


def _run_patcher(name, module):
    if name in _patched:
        return
    _patched.add(name)
    try:
        _PATCHERS[name](module)
    except Exception:
        _debug("patching %s failed" % name)


def _watch(name, patcher):
    _PATCHERS[name] = patcher
    mod = sys.modules.get(name)
    if mod is not None:  # imported before install(): patch now
        _run_patcher(name, mod)


# --------------------------------------------------------------------------
# torch

_tl = _thread_local()       # per-thread depth of traced calls
_epochs = {}                  # loader key -> epochs started (main process)
_loaders = []                 # loader key of each loader in order of first iteration
_current_epoch = [0]          # epoch of the pass being started (main process)
_dataset_keys = {}            # id(dataset) -> (weak reference to it, its loader key)
_loader_keys_given = [0]
_pass = _thread_local()       # .current: (epoch, loader, step) of this thread's last batch
_cls_names = {}               # (id(class), suffix) -> event name, while the class lives
_cls_refs = {}                # (id(class), suffix) -> weak reference that forgets the name
_iterable_end = None          # torch's _IterableDatasetStopIteration, once patched


def _loader_key(dataset):
    """The loader a dataset stands for: the same object keeps its key; a new
    dataset that a dead one's address was given to gets a key of its own."""
    k = id(dataset)
    known = _dataset_keys.get(k)
    if known is not None and known[0]() is dataset:
        return known[1]
    try:
        ref = _weakref(dataset)
    except TypeError:  # cannot be weakly referenced: its address names it
        return ("address", k)
    key = _loader_keys_given[0]
    _loader_keys_given[0] += 1
    _dataset_keys[k] = (ref, key)
    return key


class _EpochInit:
    """worker_init_fn carrying the epoch number to DataLoader workers (forked,
    spawned or forkserver). Calls the user's worker_init_fn unchanged. Pickles
    as long as the user's function does, exactly as before."""

    def __init__(self, fn, epoch, loader=0):
        self.fn = fn
        self.epoch = epoch
        self.loader = loader  # index of the DataLoader (0: the training loader)

    def __call__(self, worker_id):
        if self.fn is not None:
            return self.fn(worker_id)

    def __reduce__(self):
        # A spawned or forkserver worker unpickles this with strata imported by
        # its autoload hook, found through PYTHONPATH. A program that set its
        # own PYTHONPATH starts workers without strata: they get the user's
        # function (or None) as without strata, and no Python layer.
        if _layer_reaches_children():
            return (_EpochInit, (self.fn, self.epoch, self.loader))
        if self.fn is None:
            return (type(None), ())
        import operator
        return (operator.itemgetter(0), ([self.fn],))


def _layer_reaches_children():
    root = os.environ.get("STRATA_PYTHONPATH")
    paths = os.environ.get("PYTHONPATH", "").split(os.pathsep)
    return bool(root) and os.path.join(root, "autoload") in paths


class _WorkerState:
    __slots__ = ("epoch", "step", "t0")

    def __init__(self, epoch):
        self.epoch = epoch
        self.step = None
        self.t0 = None


class _IndexQueue:
    """Worker side of the index queue: sets the `step` tag to the batch index of
    each task the worker receives and counts epochs of persistent workers."""

    def __init__(self, q, st, resume_cls):
        self._q = q
        self._st = st
        self._resume = resume_cls

    def get(self, *args, **kwargs):
        r = self._q.get(*args, **kwargs)
        st = self._st
        if type(r) is tuple and len(r) == 2 and type(r[0]) is int:
            st.step = r[0]
            _tag_set_int(K_STEP, r[0])
            st.t0 = _now()
        elif self._resume is not None and isinstance(r, self._resume):
            # The main process stamps the epoch of the new pass on the message.
            st.epoch = getattr(r, "_strata_epoch", st.epoch + 1)
            _tag_set_int(K_EPOCH, st.epoch)
        return r

    def __getattr__(self, attr):
        return getattr(self._q, attr)


class _DataQueue:
    """Worker side of the result queue: a batch leaving the worker closes its
    `dataloader.batch` event (sampling + __getitem__ + collate)."""

    def __init__(self, q, st):
        self._q = q
        self._st = st

    def put(self, obj, *args, **kwargs):
        st = self._st
        if st.t0 is not None and type(obj) is tuple and len(obj) == 2 and obj[0] == st.step:
            # An IterableDataset's worker that ran out answers with a marker.
            if _iterable_end is None or not isinstance(obj[1], _iterable_end):
                _complete(b"dataloader.batch", CAT_LOADER, st.t0, _now() - st.t0)
            st.t0 = None
            try:
                return self._q.put(obj, *args, **kwargs)
            finally:
                _tag_unset(K_STEP)
        return self._q.put(obj, *args, **kwargs)

    def __getattr__(self, attr):
        return getattr(self._q, attr)


def _timed(fn, name, cat):
    nb = name
    if fn is None:
        return None

    def wrapper(*args, **kwargs):
        t0 = _now()
        try:
            return fn(*args, **kwargs)
        finally:
            _complete(nb, cat, t0, _now() - t0)
    return _stand_in(fn, wrapper)


def _getitem(ds, i):
    if type(i) is int:
        _tag_set_int(K_SAMPLE, i)
    else:
        _tag_set_str(K_SAMPLE, str(i).encode("utf-8", "surrogateescape"))
    t0 = _now()
    try:
        return ds[i]
    finally:
        _complete(b"dataset.getitem", CAT_LOADER, t0, _now() - t0)
        _tag_unset(K_SAMPLE)


def _stamp_iterator(it, epoch, t0, loader, outer):
    try:
        it._strata_epoch = epoch
        it._strata_t0 = t0
        it._strata_loader = loader
        it._strata_outer = outer
    except Exception:
        pass


def _leave_pass(outer):
    """After a pass: the loop it was nested in (a validation pass inside a
    training step) gets its tags back; at top level the loader tag goes (what
    follows, a checkpoint, belongs to the training loop) and the epoch stays."""
    _pass.current = outer
    if outer is None:
        _tag_unset(K_LOADER)
        return
    epoch, loader, step = outer
    _tag_set_int(K_EPOCH, epoch)
    _tag_set_int(K_LOADER, loader)
    _tag_set_int(K_STEP, step)


def _patch_dataloader(torch):
    import inspect
    from torch.utils.data import dataloader as dl
    from torch.utils.data._utils import fetch as ft
    from torch.utils.data._utils import worker as wk

    # -- main process: epochs, iterator creation, batch waits ---------------
    DataLoader = dl.DataLoader
    orig_iter = DataLoader.__iter__

    @_stands_for(orig_iter)
    def __iter__(self):
        # The first loader iterated (the training loader, in the usual loop)
        # counts epochs; passes over the others (validation, a final
        # evaluation) carry the epoch in progress, told apart by `loader`.
        key = _loader_key(self.dataset)
        if key not in _loaders:
            _loaders.append(key)
        index = _loaders.index(key)
        if index == 0:
            epoch = _epochs.get(key, -1) + 1
            _epochs[key] = epoch
        else:
            epoch = max(_epochs.get(_loaders[0], 0), 0)
        _current_epoch[0] = epoch
        outer = getattr(_pass, "current", None)
        _tag_set_int(K_EPOCH, epoch)
        _tag_set_int(K_LOADER, index)
        _tag_unset(K_STEP)
        t0 = _now()
        init_fn = self.worker_init_fn
        swap = self.num_workers > 0 and not isinstance(init_fn, _EpochInit)
        if swap:
            self.worker_init_fn = _gc_neutral(_EpochInit, init_fn, epoch, index)
        try:
            it = orig_iter(self)
        finally:
            if swap:
                self.worker_init_fn = init_fn
        _complete(b"dataloader.iter", CAT_LOADER, t0, _now() - t0)
        _gc_neutral(_stamp_iterator, it, epoch, t0, index, outer)
        return it

    DataLoader.__iter__ = __iter__

    Base = dl._BaseDataLoaderIter
    orig_next = Base.__next__

    @_stands_for(orig_next)
    def __next__(self):
        d = self.__dict__
        loader = d.get("_strata_loader")
        if loader is not None:
            # Another loader's pass (validation inside a training step, zip
            # of two loaders) may have set its own tags since the last batch.
            epoch = d["_strata_epoch"]
            _tag_set_int(K_EPOCH, epoch)
            _tag_set_int(K_LOADER, loader)
            _pass.current = (epoch, loader, self._num_yielded)
        _tag_set_int(K_STEP, self._num_yielded)
        t0 = _now()
        try:
            data = orig_next(self)
        except StopIteration:
            _tag_unset(K_STEP)
            ep_t0 = d.pop("_strata_t0", None)
            if ep_t0 is not None:
                t1 = _now()
                # The call that ended the pass: the loop waited on the loader
                # (its workers shutting down) without getting a batch.
                _complete(b"dataloader.stop", CAT_LOADER, t0, t1 - t0)
                _complete(b"dataloader.epoch", CAT_LOADER, ep_t0, t1 - ep_t0)
                _leave_pass(d.get("_strata_outer"))
            raise
        except BaseException:
            _complete(b"dataloader.next", CAT_LOADER, t0, _now() - t0)
            raise
        _complete(b"dataloader.next", CAT_LOADER, t0, _now() - t0)
        return data

    Base.__next__ = __next__

    # -- worker processes: worker/epoch/step tags, one event per batch -------
    global _iterable_end
    _iterable_end = getattr(wk, "_IterableDatasetStopIteration", None)
    orig_loop = wk._worker_loop
    sig = inspect.signature(orig_loop)
    resume_cls = getattr(wk, "_ResumeIteration", None)
    if resume_cls is not None:
        # Persistent workers start each pass on a resume message: it carries
        # the pass's epoch to the worker (an extra attribute; it pickles along).
        orig_resume_init = resume_cls.__init__

        @_stands_for(orig_resume_init)
        def _resume_init(self, *a, **k):
            orig_resume_init(self, *a, **k)
            try:  # a frozen dataclass in torch: set it the way dataclasses do
                object.__setattr__(self, "_strata_epoch", _current_epoch[0])
            except Exception:
                pass

        resume_cls.__init__ = _resume_init

    @_stands_for(orig_loop)
    def _worker_loop(*args, **kwargs):
        args, kwargs = _gc_neutral(_worker_setup, args, kwargs)
        t0 = _now()
        try:
            return orig_loop(*args, **kwargs)
        finally:
            _tag_unset(K_STEP)
            _complete(b"dataloader.worker", CAT_LOADER, t0, _now() - t0)
            _capi.flush()  # workers leave through os._exit

    def _worker_setup(args, kwargs):
        try:
            ba = sig.bind(*args, **kwargs)
            a = ba.arguments
            worker_id = a["worker_id"]
            init_fn = a.get("init_fn")
            epoch = init_fn.epoch if isinstance(init_fn, _EpochInit) else 0
            st = _WorkerState(epoch)
            _tag_set_int(K_WORKER, worker_id)
            _tag_set_int(K_EPOCH, epoch)
            if isinstance(init_fn, _EpochInit):  # spawned workers inherit no tags
                _tag_set_int(K_LOADER, getattr(init_fn, "loader", 0))
            _tag_unset(K_STEP)
            _capi.thread_name(b"DataLoader worker %d" % worker_id)
            _capi.set_metadata(b"dataloader_worker", b"%d" % worker_id)
            a["index_queue"] = _IndexQueue(a["index_queue"], st, resume_cls)
            a["data_queue"] = _DataQueue(a["data_queue"], st)
            return ba.args, ba.kwargs
        except Exception:
            _debug("DataLoader worker instrumentation failed")
        return args, kwargs

    wk._worker_loop = _worker_loop

    # -- fetchers (main process with num_workers=0, and workers) ----------------
    Fetcher = ft._BaseDatasetFetcher
    orig_finit = Fetcher.__init__

    @_stands_for(orig_finit)
    def fetcher_init(self, dataset, auto_collation, collate_fn, drop_last, *args, **kwargs):
        # Not twice: a stand-in answers for its original's attributes, so a
        # mark set on the first wrapper would land on the program's function.
        if collate_fn is not None and type(collate_fn) not in _STAND_IN_TYPES:
            collate_fn = _gc_neutral(_timed, collate_fn, b"dataloader.collate", CAT_LOADER)
        orig_finit(self, dataset, auto_collation, collate_fn, drop_last, *args, **kwargs)

    Fetcher.__init__ = fetcher_init

    if _DEEP:
        MapFetcher = ft._MapDatasetFetcher
        orig_fetch = MapFetcher.fetch

        @_stands_for(orig_fetch)
        def fetch(self, possibly_batched_index):
            ds = self.dataset
            if self.auto_collation:
                if getattr(ds, "__getitems__", None):
                    return orig_fetch(self, possibly_batched_index)
                data = [_getitem(ds, i) for i in possibly_batched_index]
            else:
                data = _getitem(ds, possibly_batched_index)
            return self.collate_fn(data)

        MapFetcher.fetch = fetch


def _cls_name(cls, suffix):
    b = _cls_names.get((id(cls), suffix))
    if b is None:
        b = _gc_neutral(_new_cls_name, cls, suffix)
    return b


def _new_cls_name(cls, suffix):
    # Keyed by address, forgotten when the class dies (before its address can
    # be reused): classes made at run time (torch.fx, a class per layer) are
    # freed as without strata.
    b = ("%s.%s" % (cls.__name__, suffix)).encode()
    key = (id(cls), suffix)

    def forget(_, key=key):
        _cls_names.pop(key, None)
        _cls_refs.pop(key, None)

    try:
        _cls_refs[key] = _weakref(cls, forget)
    except TypeError:
        return b
    _cls_names[key] = b
    return b


def _patch_compute(torch):
    Module = torch.nn.Module
    orig_call = Module.__call__

    if _DEEP:
        @_stands_for(orig_call)
        def __call__(self, *args, **kwargs):
            t0 = _now()
            try:
                return orig_call(self, *args, **kwargs)
            finally:
                _complete(_cls_name(type(self), "forward"), CAT_COMPUTE, t0, _now() - t0)
    else:
        @_stands_for(orig_call)
        def __call__(self, *args, **kwargs):
            tl = _tl
            if getattr(tl, "module_depth", 0):
                return orig_call(self, *args, **kwargs)
            t0 = _now()
            try:
                tl.module_depth = 1  # set inside the try, so the finally always clears it
                return orig_call(self, *args, **kwargs)
            finally:
                tl.module_depth = 0
                _complete(_cls_name(type(self), "forward"), CAT_COMPUTE, t0, _now() - t0)

    Module.__call__ = __call__
    # torch binds one function under two names (__call__ = _call_impl), and
    # pickle and `is` reach it by its __qualname__: both names give the
    # stand-in, as both gave the original.
    impl = getattr(orig_call, "__qualname__", "").rpartition(".")[2]
    if impl and Module.__dict__.get(impl) is orig_call:
        setattr(Module, impl, __call__)

    Tensor = torch.Tensor
    orig_backward = Tensor.backward

    @_stands_for(orig_backward)
    def backward(self, *args, **kwargs):
        t0 = _now()
        try:
            return orig_backward(self, *args, **kwargs)
        finally:
            _complete(b"backward", CAT_COMPUTE, t0, _now() - t0)

    Tensor.backward = backward

    Optimizer = torch.optim.Optimizer
    orig_oinit = Optimizer.__init__

    def wrap_step(cls):
        if cls.__dict__.get("_strata_step_wrapped"):
            return
        step = cls.step
        name = _cls_name(cls, "step")

        @_stands_for(step)
        def step_wrapper(self, *args, **kwargs):
            tl = _tl
            if getattr(tl, "in_step", 0):
                return step(self, *args, **kwargs)
            t0 = _now()
            try:
                tl.in_step = 1  # set inside the try, so the finally always clears it
                return step(self, *args, **kwargs)
            finally:
                tl.in_step = 0
                _complete(name, CAT_COMPUTE, t0, _now() - t0)

        cls.step = step_wrapper
        cls._strata_step_wrapped = True

    @_stands_for(orig_oinit)
    def opt_init(self, *args, **kwargs):
        orig_oinit(self, *args, **kwargs)
        try:
            _gc_neutral(wrap_step, type(self))
        except Exception:
            _debug("Optimizer.step instrumentation failed")

    Optimizer.__init__ = opt_init


def _stream_bytes_left(f):
    """Bytes from a stream's position to its end, without moving it: what a
    load from it reads (a zip checkpoint is read by seeking about, so the
    position after the load says nothing). -1 if it cannot be told."""
    pos = f.tell()
    try:
        return max(os.fstat(f.fileno()).st_size - pos, 0)
    except Exception:
        pass
    getbuffer = getattr(f, "getbuffer", None)  # io.BytesIO
    if getbuffer is not None:
        with getbuffer() as view:
            return max(view.nbytes - pos, 0)
    return -1


def _patch_serialization(torch):
    ser = torch.serialization
    orig_save, orig_load = ser.save, ser.load

    def save(obj, f, *args, **kwargs):
        pos0 = None
        if not _is_pathlike(f):
            try:
                pos0 = f.tell()
            except Exception:
                pos0 = None
        t0 = _now()
        ok = False
        try:
            r = orig_save(obj, f, *args, **kwargs)
            ok = True
            return r
        finally:
            t1 = _now()
            n = -1
            if ok:
                try:
                    n = os.stat(f).st_size if _is_pathlike(f) else (f.tell() - pos0 if pos0 is not None else -1)
                except Exception:
                    n = -1
            _complete_io(b"torch.save", CAT_CKPT, t0, t1 - t0, _pathb(f), n, n if ok else -1)

    def load(f, *args, **kwargs):
        n = -1
        pos0 = None
        try:
            n = os.stat(f).st_size if _is_pathlike(f) else _stream_bytes_left(f)
        except Exception:
            pass
        t0 = _now()
        ok = False
        try:
            r = orig_load(f, *args, **kwargs)
            ok = True
            return r
        finally:
            t1 = _now()
            _complete_io(b"torch.load", CAT_CKPT, t0, t1 - t0, _pathb(f), n, n if ok else -1)

    # Stand-ins, as for np.load: the program introspects the originals.
    save, load = _stand_in(orig_save, save), _stand_in(orig_load, load)
    ser.save = save
    ser.load = load
    torch.save = save
    torch.load = load


def _patch_torch(torch):
    for part in (_patch_dataloader, _patch_compute, _patch_serialization):
        try:
            part(torch)
        except Exception:
            _debug("%s failed" % part.__name__)


# --------------------------------------------------------------------------
# numpy, Pillow, h5py: application-level I/O events naming the file.

def _io_wrapper(orig, name, cat, param, array_type=None, not_type=None):
    """orig, recording one `name` event per call naming the file of its first
    argument (or of the keyword `param`), with the result's nbytes when it is
    an array_type (and not a not_type) as size and ret. A call made inside
    another such call on the same thread (np.load's numpy.fromfile) is part
    of it and records nothing. strata._fast.io_call does it in C; this Python
    version is for builds without it."""
    if _io_call is not None:
        return _io_call(orig, name, cat, array_type, not_type, param)
    return _StandIn(orig, _io_wrapper_py(orig, name, cat, param, array_type, not_type))


class _StandIn:
    """What a patch puts in place of a library function orig: calls go to
    `call` (which records, then calls orig), every other attribute is orig's,
    read and written. So np.load's __code__, __defaults__, __kwdefaults__,
    __dict__ and __doc__ are the original's, and __class__ too: isinstance(
    np.load, types.FunctionType), inspect.signature, getsource and help()
    answer as without strata (functools.wraps copied a few attributes, gave
    others of the wrapper and added a __wrapped__ np.load does not have).
    Pickled and copied by name, as a function is; stored in a class it binds
    as a method only if orig does (np.load, not the builtin np.fromfile).
    strata._fast.IoCall (the I/O functions) and strata._fast.StandIn (the
    other patches, see _stand_in) are the same in C."""
    __slots__ = ("_strata_orig", "_strata_call", "__weakref__")

    def __init__(self, orig, call):
        _stand_in_orig.__set__(self, orig)
        _stand_in_call.__set__(self, call)

    def __call__(self, *args, **kwargs):
        return _stand_in_call.__get__(self)(*args, **kwargs)

    def __get__(self, obj, objtype=None):
        if obj is None or not hasattr(type(_stand_in_orig.__get__(self)), "__get__"):
            return self
        return _MethodType(self, obj)

    def __getattribute__(self, name):
        orig = _stand_in_orig.__get__(self)
        if name in _STAND_IN_OWN or (name == "__get__" and hasattr(type(orig), "__get__")):
            return object.__getattribute__(self, name)
        return getattr(orig, name)

    def __setattr__(self, name, value):
        setattr(_stand_in_orig.__get__(self), name, value)

    def __delattr__(self, name):
        delattr(_stand_in_orig.__get__(self), name)

    def __reduce__(self):
        return _stand_in_orig.__get__(self).__qualname__

    def __repr__(self):
        return repr(_stand_in_orig.__get__(self))


def _stand_in(orig, call):
    """The patch `call` in place of orig, with orig's attributes: a program
    that introspects a patched method (inspect.signature(Module.__call__),
    its __code__, inspect.unwrap) sees the original, as with np.load."""
    if _stand_in_fast is not None:
        return _stand_in_fast(orig, call)
    return _StandIn(orig, call)


def _stands_for(orig):  # _stand_in as a decorator of the patch
    return lambda call: _stand_in(orig, call)


_stand_in_orig, _stand_in_call = _StandIn._strata_orig, _StandIn._strata_call
_STAND_IN_TYPES = (_StandIn,)
_STAND_IN_OWN = frozenset(("__call__", "__reduce__", "__reduce_ex__"))
_MethodType = type(_debug.__get__(0))  # types.MethodType, without importing types


def _io_wrapper_py(orig, name, cat, param, array_type, not_type):

    def wrapper(*args, **kwargs):
        tl = _tl
        if getattr(tl, "in_io_call", 0):
            return orig(*args, **kwargs)
        t0 = _now()
        ok = False
        try:
            # Set inside the try, so the finally always clears it: set before
            # _now(), an exception a signal handler raised there (Ctrl-C,
            # an alarm) left the thread's later calls all unrecorded.
            tl.in_io_call = 1
            r = orig(*args, **kwargs)
            ok = True
            return r
        finally:
            tl.in_io_call = 0
            t1 = _now()
            n = -1
            if ok and array_type is not None and isinstance(r, array_type) and \
                    (not_type is None or not isinstance(r, not_type)):
                n = r.nbytes
            file = args[0] if args else kwargs.get(param)
            _complete_io(name, cat, t0, t1 - t0, _pathb(file) if file is not None else None, n, n)
    return wrapper


def _patch_numpy(np):
    np.load = _io_wrapper(np.load, b"numpy.load", CAT_NUMPY, "file", np.ndarray, np.memmap)
    np.fromfile = _io_wrapper(np.fromfile, b"numpy.fromfile", CAT_NUMPY, "file", np.ndarray, np.memmap)


def _patch_pil_image(Image):
    Image.open = _io_wrapper(Image.open, b"PIL.Image.open", CAT_PIL, "fp")


_bands = {}


def _patch_pil_imagefile(ImageFile):
    IF = ImageFile.ImageFile
    orig_load = IF.load

    @_stands_for(orig_load)
    def load(self):
        if not getattr(self, "tile", None):  # already decoded: no I/O
            return orig_load(self)
        # Opened from a file object, the image has no filename: the object's
        # name, read before the load closes it.
        fn = getattr(self, "filename", None) or getattr(self, "fp", None)
        t0 = _now()
        ok = False
        try:
            r = orig_load(self)
            ok = True
            return r
        finally:
            t1 = _now()
            n = -1
            if ok:
                try:
                    w, h = self.size
                    bands = _bands.get(self.mode)
                    if bands is None:
                        bands = _bands[self.mode] = len(self.getbands())
                    n = w * h * bands
                except Exception:
                    n = -1
            _complete_io(b"PIL.Image.load", CAT_PIL, t0, t1 - t0,
                         _pathb(fn) if fn else None, n, n)

    IF.load = load


def _patch_h5py(h5py):
    File = h5py.File
    orig_init = File.__init__

    @_stands_for(orig_init)
    def file_init(self, name, *args, **kwargs):
        t0 = _now()
        try:
            return orig_init(self, name, *args, **kwargs)
        finally:
            _complete_io(b"h5py.File", CAT_H5PY, t0, _now() - t0,
                         _pathb(name) if _is_pathlike(name) else None, -1, -1)

    File.__init__ = file_init

    Dataset = h5py.Dataset
    orig_getitem = Dataset.__getitem__

    @_stands_for(orig_getitem)
    def getitem(self, args, *rest, **kwargs):
        t0 = _now()
        r = orig_getitem(self, args, *rest, **kwargs)
        t1 = _now()
        try:
            path = _pathb(self.file.filename)
        except Exception:
            path = None
        n = getattr(r, "nbytes", -1)
        _complete_io(b"h5py.Dataset.read", CAT_H5PY, t0, t1 - t0, path, n, n)
        return r

    Dataset.__getitem__ = getitem


# --------------------------------------------------------------------------
# os.fork on CPython 3.12 and later: the interpreter counts the process's
# threads as the fork returns and warns "This process (pid=N) is
# multi-threaded, use of fork() may lead to deadlocks in the child" when it
# finds more than one. strata's writer thread is not the program's: os.fork
# and os.forkpty become calls of strata_fork_call, which stops the writer
# for the call, so a program warns under
# strata exactly when it warns without. The stand-in runs no Python code of
# its own: a warning still names the program's file, line and module (its
# filters match as without strata).

def _patch_fork(os_module):
    import ctypes
    process = ctypes.PyDLL(None)  # the GIL held, an exception raised after the call
    process.PyObject_CallObject  # noqa: B018 - AttributeError: not CPython's C API
    fork_call = process.strata_fork_call
    fork_call.restype = ctypes.py_object
    fork_call.argtypes = [ctypes.py_object]
    for name in ("fork", "forkpty"):
        orig = getattr(os_module, name, None)
        if orig is not None:
            setattr(os_module, name, _frameless_stand_in(orig, _MethodType(fork_call, orig)))


def _frameless_stand_in(orig, call):
    """A _StandIn whose call is `call`, a C callable, with no Python frame
    between the caller and orig (a subclass per patch: a class attribute
    __call__ that is no descriptor is called with the arguments alone)."""
    cls = type(_StandIn)("_StandIn", (_StandIn,), {"__slots__": (), "__call__": call})
    obj = object.__new__(cls)
    _stand_in_orig.__set__(obj, orig)
    _stand_in_call.__set__(obj, call)
    return obj


# --------------------------------------------------------------------------

def install():
    """Installs the lazy patches when the runtime is recording this process.
    Returns True when installed."""
    global _installed, _now, _complete, _complete_io, _io_call, _stand_in_fast, _STAND_IN_TYPES
    global _tag_set_int, _tag_set_str, _tag_unset, _tag_save, _tag_restore
    if _installed:
        return True
    if not _capi.ENABLED:
        return False
    h = _capi.hot_calls()  # strata._fast when built: no ctypes argument conversion
    _now, _complete, _complete_io, _io_call = h.now, h.complete, h.complete_io, h.io_call
    _stand_in_fast = h.stand_in
    if _stand_in_fast is not None:
        _STAND_IN_TYPES = (_StandIn, type(_stand_in_fast(len, len)), type(_stand_in_fast(install, install)))
    _tag_set_int, _tag_set_str, _tag_unset = h.tag_set_int, h.tag_set_str, h.tag_unset
    _tag_save, _tag_restore = h.tag_save, h.tag_restore
    _installed = True
    # The thread-local's dictionary of the main thread (and of forked
    # children), made now with the rest of the layer's objects.
    _tl.module_depth = _tl.in_step = _tl.in_io_call = 0
    try:
        os.register_at_fork(after_in_child=_gc_after_fork_in_child)
    except Exception:  # pragma: no cover - a platform without fork
        pass

    sys.meta_path.insert(0, _PostImportFinder())
    if sys.version_info >= (3, 12):
        try:
            _patch_fork(os)
        except Exception:
            _debug("os.fork instrumentation failed")
    on = lambda var: os.environ.get(var, "1") != "0"  # noqa: E731
    if on("STRATA_PY_TORCH"):
        _watch("torch", _patch_torch)
    if on("STRATA_PY_NUMPY"):
        _watch("numpy", _patch_numpy)
    if on("STRATA_PY_PIL"):
        _watch("PIL.Image", _patch_pil_image)
        _watch("PIL.ImageFile", _patch_pil_imagefile)
    if on("STRATA_PY_H5PY"):
        _watch("h5py", _patch_h5py)
    return True
