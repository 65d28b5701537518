"""Prints what a program can learn about the functions strata's Python layer
patches (numpy.load, numpy.fromfile, PIL.Image.open, torch.save, torch.load,
and the methods and callables of the DataLoader, compute, Pillow and h5py
patches) by introspection, in a form that is the same from run to run (no addresses):
tests/python/test_semantics.py compares it plain and under strata run."""
import copy
import inspect
import pickle
import sys
import types

import numpy as np
import PIL.Image
import PIL.ImageFile
import torch
from torch.utils.data import dataloader
from torch.utils.data._utils import fetch, worker


def collate(batch, scale=2):
    """A collate_fn of the program's."""
    return batch


collate.set_by_program = 1
torch.optim.SGD([torch.zeros(1, requires_grad=True)], lr=0.1)  # patches SGD.step

FUNCTIONS = {"np.load": np.load, "np.fromfile": np.fromfile, "PIL.Image.open": PIL.Image.open,
             "torch.save": torch.save, "torch.load": torch.load,
             "DataLoader.__iter__": torch.utils.data.DataLoader.__iter__,
             "_BaseDataLoaderIter.__next__": dataloader._BaseDataLoaderIter.__next__,
             "_worker_loop": worker._worker_loop, "_ResumeIteration.__init__": worker._ResumeIteration.__init__,
             "_BaseDatasetFetcher.__init__": fetch._BaseDatasetFetcher.__init__,
             "collate_fn": fetch._MapDatasetFetcher([0], True, collate, False).collate_fn,
             "Module.__call__": torch.nn.Module.__call__, "Tensor.backward": torch.Tensor.backward,
             "SGD.step": torch.optim.SGD.step, "ImageFile.load": PIL.ImageFile.ImageFile.load}
try:
    import h5py
    FUNCTIONS.update({"h5py.File.__init__": h5py.File.__init__, "h5py.Dataset.__getitem__": h5py.Dataset.__getitem__})
except ImportError:
    pass
# Bound, they are methods of the original function.
BOUND = {"model.__call__": torch.nn.Linear(1, 1).__call__, "tensor.backward": torch.zeros(1).backward,
         "loader.__iter__": torch.utils.data.DataLoader([0]).__iter__}
ATTRS = ("__defaults__", "__kwdefaults__", "__name__", "__qualname__", "__module__", "__annotations__",
         "__text_signature__", "__self__", "__wrapped__", "__signature__")


def shown(v):
    if callable(v) or isinstance(v, types.CodeType):
        return type(v).__name__          # its repr names an address
    return repr(v)


for label, f in FUNCTIONS.items():
    print(label)
    print(" ", f.__class__.__name__, isinstance(f, types.FunctionType), isinstance(f, types.BuiltinFunctionType),
          inspect.isfunction(f), inspect.isbuiltin(f), inspect.isroutine(f), callable(f))
    for a in ATTRS:
        print(" ", a, shown(getattr(f, a, "<none>")), hasattr(f, a))
    code = getattr(f, "__code__", None)
    print("  code", None if code is None else (code.co_name, code.co_argcount, code.co_kwonlyargcount,
                                               code.co_varnames[:code.co_argcount + code.co_kwonlyargcount]))
    print("  globals", getattr(f, "__globals__", None) is vars(sys.modules[f.__module__]) if
          hasattr(f, "__globals__") else None, "closure", getattr(f, "__closure__", "<none>") is None)
    try:
        print("  signature", inspect.signature(f))
    except ValueError as e:
        print("  signature ValueError", e)
    print("  unwrap", inspect.unwrap(f) is f, "vars", sorted(vars(f)) if hasattr(f, "__dict__") else None)
    print("  dir", dir(f))
    print("  doc", (f.__doc__ or "").strip().splitlines()[:1])
    try:
        print("  source", inspect.getsourcefile(f).rsplit("/", 1)[-1], inspect.getsourcelines(f)[1] > 0)
    except TypeError:                   # a builtin (its message names the type)
        print("  source TypeError")
    except OSError as e:                # made by exec (a dataclass's __init__)
        print("  source OSError", e)
    print("  module", inspect.getmodule(f).__name__)
    # Pickled by __qualname__, which names the original: the program's collate
    # is its own function, the stand-in lives only in the fetcher.
    if label != "collate_fn":
        try:
            pickled = pickle.loads(pickle.dumps(f)) is f
        except (pickle.PicklingError, AttributeError) as e:  # a local function (SGD.step's decorator)
            pickled = type(e).__name__
        print("  pickle", pickled, copy.copy(f) is f, copy.deepcopy(f) is f)

for label, m in BOUND.items():
    print(label, type(m).__name__, inspect.ismethod(m), inspect.isfunction(m.__func__), inspect.signature(m),
          inspect.unwrap(m.__func__) is m.__func__, hasattr(m, "__wrapped__"), m.__func__.__code__.co_name,
          m.__func__.__defaults__, m.__self__ is not None)

# One function under two names (torch binds __call__ = _call_impl).
M = torch.nn.Module
print("Module.__call__ by its qualname", M.__call__ is getattr(M, M.__call__.__qualname__.rpartition(".")[2]))

# An attribute set on the function is the function's.
np.load.set_by_program = 1
print(np.load.set_by_program, sorted(vars(np.load)))
del np.load.set_by_program
print(hasattr(np.load, "set_by_program"), sorted(vars(np.load)))
try:
    np.fromfile.set_by_program = 1
except AttributeError as e:
    print("AttributeError", e)
# And the functions still work.
np.save(sys.argv[1] + "/a.npy", np.arange(4.0))
print(np.load(sys.argv[1] + "/a.npy").sum())
