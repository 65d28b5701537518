"""Prints what a program can learn about the functions strata's Python layer
patches (numpy.load, numpy.fromfile, PIL.Image.open, torch.save, torch.load)
by introspection, in a form that is the same from run to run (no addresses):
tests/python/test_semantics.py compares it plain and under strata run."""
import copy
import inspect
import pickle
import sys
import types

import numpy as np
import PIL.Image
import torch

FUNCTIONS = {"np.load": np.load, "np.fromfile": np.fromfile, "PIL.Image.open": PIL.Image.open,
             "torch.save": torch.save, "torch.load": torch.load}
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
    print("  module", inspect.getmodule(f).__name__)
    print("  pickle", pickle.loads(pickle.dumps(f)) is f, copy.copy(f) is f, copy.deepcopy(f) is f)

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
