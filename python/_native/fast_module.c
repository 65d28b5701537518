/* strata._fast: the hot calls of the strata C API for Python, without ctypes.
 *
 * ctypes spends ~0.5-1 us converting arguments per call; these METH_FASTCALL
 * functions take bytes and ints directly (~0.05-0.1 us). The C API symbols
 * are looked up in the process (dlsym(RTLD_DEFAULT)): the runtime is already
 * preloaded by `strata run`; without it the import fails and strata falls
 * back to ctypes (where every call is a no-op anyway).
 *
 * Strings are passed as bytes (NUL-terminated by CPython); None for no path.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <dlfcn.h>
#include <stddef.h>
#include <stdint.h>

static int (*p_enabled)(void);
static void (*p_thread_name)(const char*);
static void (*p_set_metadata)(const char*, const char*);
static void (*p_flush)(void);
static uint64_t (*p_now)(void);
static void (*p_complete)(const char*, const char*, uint64_t, uint64_t);
static void (*p_complete_io)(const char*, const char*, uint64_t, uint64_t, const char*, int64_t, int64_t);
static void (*p_tag_set_int)(const char*, int64_t);
static void (*p_tag_set_str)(const char*, const char*);
static void (*p_tag_unset)(const char*);
static uint32_t (*p_tag_save)(void);
static void (*p_tag_restore)(uint32_t);

static int need_args(const char* fn, Py_ssize_t got, Py_ssize_t want) {
  if (got == want) return 0;
  PyErr_Format(PyExc_TypeError, "%s() takes %zd arguments (%zd given)", fn, want, got);
  return -1;
}

static const char* as_str(PyObject* o) {  /* bytes -> char*, None -> NULL */
  if (o == Py_None) return NULL;
  if (PyBytes_Check(o)) return PyBytes_AS_STRING(o);
  PyErr_SetString(PyExc_TypeError, "expected bytes or None");
  return NULL;
}

static PyObject* f_enabled(PyObject* self, PyObject* const* args, Py_ssize_t n) {
  (void)self; (void)args;
  if (need_args("enabled", n, 0)) return NULL;
  return PyBool_FromLong(p_enabled());
}

static PyObject* f_thread_name(PyObject* self, PyObject* const* a, Py_ssize_t n) {
  (void)self;
  if (need_args("thread_name", n, 1)) return NULL;
  const char* name = as_str(a[0]);
  if (!name) return NULL;
  p_thread_name(name);
  Py_RETURN_NONE;
}

static PyObject* f_set_metadata(PyObject* self, PyObject* const* a, Py_ssize_t n) {
  (void)self;
  if (need_args("set_metadata", n, 2)) return NULL;
  const char* key = as_str(a[0]);
  const char* value = key ? as_str(a[1]) : NULL;
  if (!key || !value) return NULL;
  p_set_metadata(key, value);
  Py_RETURN_NONE;
}

static PyObject* f_flush(PyObject* self, PyObject* const* a, Py_ssize_t n) {
  (void)self; (void)a;
  if (need_args("flush", n, 0)) return NULL;
  Py_BEGIN_ALLOW_THREADS
  p_flush();
  Py_END_ALLOW_THREADS
  Py_RETURN_NONE;
}

static PyObject* f_now(PyObject* self, PyObject* const* args, Py_ssize_t n) {
  (void)self; (void)args;
  if (need_args("now", n, 0)) return NULL;
  return PyLong_FromUnsignedLongLong(p_now());
}

static PyObject* f_complete(PyObject* self, PyObject* const* a, Py_ssize_t n) {
  (void)self;
  if (need_args("complete", n, 4)) return NULL;
  const char* name = as_str(a[0]);
  const char* cat = as_str(a[1]);
  uint64_t t0 = PyLong_AsUnsignedLongLongMask(a[2]);
  uint64_t dur = PyLong_AsUnsignedLongLongMask(a[3]);
  if (PyErr_Occurred() || !name || !cat) {
    if (!PyErr_Occurred()) PyErr_SetString(PyExc_TypeError, "name and category must be bytes");
    return NULL;
  }
  p_complete(name, cat, t0, dur);
  Py_RETURN_NONE;
}

static PyObject* f_complete_io(PyObject* self, PyObject* const* a, Py_ssize_t n) {
  (void)self;
  if (need_args("complete_io", n, 7)) return NULL;
  const char* name = as_str(a[0]);
  const char* cat = as_str(a[1]);
  uint64_t t0 = PyLong_AsUnsignedLongLongMask(a[2]);
  uint64_t dur = PyLong_AsUnsignedLongLongMask(a[3]);
  const char* path = as_str(a[4]);
  long long size = PyLong_AsLongLong(a[5]);
  long long ret = PyLong_AsLongLong(a[6]);
  if (PyErr_Occurred() || !name || !cat) {
    if (!PyErr_Occurred()) PyErr_SetString(PyExc_TypeError, "name and category must be bytes");
    return NULL;
  }
  p_complete_io(name, cat, t0, dur, path, size, ret);
  Py_RETURN_NONE;
}

static PyObject* f_tag_set_int(PyObject* self, PyObject* const* a, Py_ssize_t n) {
  (void)self;
  if (need_args("tag_set_int", n, 2)) return NULL;
  const char* key = as_str(a[0]);
  long long v = PyLong_AsLongLong(a[1]);
  if (PyErr_Occurred() || !key) {
    if (!PyErr_Occurred()) PyErr_SetString(PyExc_TypeError, "key must be bytes");
    return NULL;
  }
  p_tag_set_int(key, v);
  Py_RETURN_NONE;
}

static PyObject* f_tag_set_str(PyObject* self, PyObject* const* a, Py_ssize_t n) {
  (void)self;
  if (need_args("tag_set_str", n, 2)) return NULL;
  const char* key = as_str(a[0]);
  const char* v = as_str(a[1]);
  if (PyErr_Occurred() || !key || !v) {
    if (!PyErr_Occurred()) PyErr_SetString(PyExc_TypeError, "key and value must be bytes");
    return NULL;
  }
  p_tag_set_str(key, v);
  Py_RETURN_NONE;
}

static PyObject* f_tag_unset(PyObject* self, PyObject* const* a, Py_ssize_t n) {
  (void)self;
  if (need_args("tag_unset", n, 1)) return NULL;
  const char* key = as_str(a[0]);
  if (!key) {
    if (!PyErr_Occurred()) PyErr_SetString(PyExc_TypeError, "key must be bytes");
    return NULL;
  }
  p_tag_unset(key);
  Py_RETURN_NONE;
}

static PyObject* f_tag_save(PyObject* self, PyObject* const* a, Py_ssize_t n) {
  (void)self; (void)a;
  if (need_args("tag_save", n, 0)) return NULL;
  return PyLong_FromUnsignedLong(p_tag_save());
}

static PyObject* f_tag_restore(PyObject* self, PyObject* const* a, Py_ssize_t n) {
  (void)self;
  if (need_args("tag_restore", n, 1)) return NULL;
  unsigned long v = PyLong_AsUnsignedLongMask(a[0]);
  if (PyErr_Occurred()) return NULL;
  p_tag_restore((uint32_t)v);
  Py_RETURN_NONE;
}

/* ---- IoCall: a library function that records one I/O event per call ----------
 *
 * io_call(orig, name, cat, array_type, not_type, param) returns a callable
 * that calls orig(*args, **kwargs) and records complete_io(name, cat, t0,
 * dur, path of the first argument (or of the keyword `param`), bytes,
 * bytes): the numpy.load/fromfile and PIL.Image.open patches of _auto.py.
 * The same wrapper in Python cost ~0.6 us a call, ~1.5 us when the argument
 * is a file object (os.fspath raises); here it is the two clock reads and
 * the runtime's recording. bytes = result.nbytes when the result is an
 * array_type and not a not_type (a memory map), else -1; -1 also when orig
 * raised, whose exception passes through unchanged. A call made inside
 * another of these wrappers' calls on the same thread records nothing. */
typedef struct {
  PyObject_HEAD
  PyObject* orig;
  PyObject* name;        /* bytes */
  PyObject* cat;         /* bytes */
  PyObject* array_type;  /* type or None */
  PyObject* not_type;    /* type or None */
  PyObject* param;       /* str: the name of the file parameter, when passed by keyword */
  int exact_is_array;    /* an object of exactly array_type is an array, never a not_type */
  PyObject* weakrefs;    /* weakref.ref(np.load) works on the function it replaced */
  vectorcallfunc vectorcall;
} IoCall;

static PyObject *s_fspath, *s_name, *s_nbytes; /* interned attribute names */

/* Whether f's type defines __fspath__: asking os.fspath of an open file
 * would raise and format a TypeError per call. */
static int has_fspath(PyObject* f) { return _PyType_Lookup(Py_TYPE(f), s_fspath) != NULL; }

/* Whether the str p is ASCII (then its data is its own UTF-8); no error set. */
static int is_ascii_str(PyObject* p) {
#if PY_VERSION_HEX < 0x030C0000
  if (PyUnicode_READY(p) != 0) {
    PyErr_Clear();
    return 0;
  }
#endif
  return PyUnicode_IS_ASCII(p);
}

/* The path a file argument names, as a C string that `*hold` (a new
 * reference) keeps alive, or NULL with no error set: str (UTF-8,
 * surrogateescape), bytes, os.PathLike, or an object with a str/bytes `name`
 * (an open file; io.BytesIO has none, and is not asked through an
 * AttributeError). Errors of the object's own code (a `name` property that
 * raises) are dropped: the program did not ask. An ASCII str is its own
 * UTF-8, read in place: encoding it made a bytes object per call. */
static const char* path_chars(PyObject* f, PyObject** hold) {
  PyObject* p = NULL;
  if (PyUnicode_Check(f) || PyBytes_Check(f)) {
    p = f;
    Py_INCREF(p);
  } else {
    if (has_fspath(f)) p = PyOS_FSPath(f);
    else if (_PyObject_LookupAttr(f, s_name, &p) < 0) p = NULL;
    if (!p) {
      PyErr_Clear();
      return NULL;
    }
  }
  if (PyUnicode_Check(p) && is_ascii_str(p)) {
    *hold = p;
    return (const char*)PyUnicode_DATA(p);
  }
  if (PyBytes_Check(p)) {
    *hold = p;
    return PyBytes_AS_STRING(p);
  }
  PyObject* b = PyUnicode_Check(p) ? PyUnicode_AsEncodedString(p, "utf-8", "surrogateescape") : NULL;
  Py_DECREF(p);
  if (!b) {
    PyErr_Clear();
    return NULL;
  }
  *hold = b;
  return PyBytes_AS_STRING(b);
}

/* isinstance without an error left set (an object whose __class__ raises). */
static int is_instance(PyObject* r, PyObject* type) {
  const int k = PyObject_IsInstance(r, type);
  if (k < 0) PyErr_Clear();
  return k == 1;
}

static long long result_nbytes(IoCall* w, PyObject* r) {
  if (w->array_type == Py_None) return -1;
  /* numpy.load returns exactly an ndarray: the two isinstance calls (the
   * memmap one goes through type.__instancecheck__) cost ~180 instructions. */
  if (!(w->exact_is_array && (PyObject*)Py_TYPE(r) == w->array_type)) {
    if (!is_instance(r, w->array_type)) return -1;
    if (w->not_type != Py_None && is_instance(r, w->not_type)) return -1;
  }
  PyObject* n = PyObject_GetAttr(r, s_nbytes);
  long long v = n ? PyLong_AsLongLong(n) : -1;
  Py_XDECREF(n);
  if (PyErr_Occurred()) {
    PyErr_Clear();
    return -1;
  }
  return v;
}

/* The file argument: the first positional one, else the keyword `param`. */
static PyObject* file_argument(IoCall* w, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames) {
  if (nargs > 0) return args[0];
  const Py_ssize_t nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
  for (Py_ssize_t i = 0; i < nkw; ++i) {
    const int eq = PyUnicode_Compare(PyTuple_GET_ITEM(kwnames, i), w->param);
    if (eq == 0) return args[i];
    if (eq == -1 && PyErr_Occurred()) PyErr_Clear();
  }
  return NULL;
}

/* Calls of these wrappers on this thread that are running now. One made
 * inside another (np.load reads an .npy's array with numpy.fromfile on the
 * file it opened) is part of the outer call: recording it too would count
 * the same bytes twice at the application layer, and cost the work of an
 * event per sample of a DataLoader. */
static _Thread_local int iocall_depth;

static PyObject* iocall_vectorcall(PyObject* self, PyObject* const* args, size_t nargsf, PyObject* kwnames) {
  IoCall* w = (IoCall*)self;
  if (iocall_depth > 0) return PyObject_Vectorcall(w->orig, args, nargsf, kwnames);
  const Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
  PyObject* const file = file_argument(w, args, nargs, kwnames);
  PyObject* hold = NULL;
  const char* path = file ? path_chars(file, &hold) : NULL;
  const uint64_t t0 = p_now();
  ++iocall_depth;
  PyObject* r = PyObject_Vectorcall(w->orig, args, nargsf, kwnames);
  --iocall_depth;
  const uint64_t t1 = p_now();
  long long n = -1;
  if (r) n = result_nbytes(w, r);
  p_complete_io(PyBytes_AS_STRING(w->name), PyBytes_AS_STRING(w->cat), t0, t1 - t0, path, n, n);
  Py_XDECREF(hold);
  return r;
}

static PyObject* iocall_call(PyObject* self, PyObject* args, PyObject* kwargs) {
  return PyVectorcall_Call(self, args, kwargs);
}

static int iocall_traverse(IoCall* w, visitproc visit, void* arg) {
  Py_VISIT(w->orig);
  Py_VISIT(w->array_type);
  Py_VISIT(w->not_type);
  return 0;
}

static int iocall_clear(IoCall* w) {
  Py_CLEAR(w->orig);
  Py_CLEAR(w->name);
  Py_CLEAR(w->cat);
  Py_CLEAR(w->array_type);
  Py_CLEAR(w->not_type);
  Py_CLEAR(w->param);
  return 0;
}

static void iocall_dealloc(IoCall* w) {
  PyObject_GC_UnTrack(w);
  if (w->weakrefs) PyObject_ClearWeakRefs((PyObject*)w);
  iocall_clear(w);
  Py_TYPE(w)->tp_free((PyObject*)w);
}

/* Pickled, copied and bound like the Python function it stands for: by its
 * module and name (the global the patch replaced, found again on loading),
 * and as a method when stored in a class. */
static PyObject* iocall_reduce(PyObject* self, PyObject* unused) {
  (void)unused;
  return PyObject_GetAttrString(((IoCall*)self)->orig, "__qualname__");
}

/* Every other attribute is orig's, read and written: __code__,
 * __defaults__, __kwdefaults__, __doc__, __dict__ (vars(np.load)), and
 * __class__, so that isinstance(np.load, types.FunctionType) and with it
 * inspect.signature, inspect.getsource and help() answer as without strata.
 * functools.wraps copied a few of them and added a __wrapped__ that np.load
 * does not have. The stand-in keeps its own __call__, __reduce__ and
 * __reduce_ex__ (pickle and copy by name), and __get__ when orig binds: a
 * bound or called-by-hand one still records. */
static PyObject *s_call, *s_get, *s_reduce, *s_reduce_ex;

static int is_name(PyObject* name, PyObject* interned) {
  return name == interned || PyUnicode_Compare(name, interned) == 0;
}

static PyObject* iocall_getattro(PyObject* self, PyObject* name) {
  IoCall* w = (IoCall*)self;
  if (PyUnicode_Check(name) &&
      (is_name(name, s_call) || is_name(name, s_reduce) || is_name(name, s_reduce_ex) ||
       (is_name(name, s_get) && Py_TYPE(w->orig)->tp_descr_get != NULL)))
    return PyObject_GenericGetAttr(self, name);
  return PyObject_GetAttr(w->orig, name);
}

static int iocall_setattro(PyObject* self, PyObject* name, PyObject* value) {
  return PyObject_SetAttr(((IoCall*)self)->orig, name, value);
}

/* Stored in a class, a Python function (numpy.load) binds as a method and
 * a builtin (numpy.fromfile) does not: the stand-in does what orig does. */
static PyObject* iocall_descr_get(PyObject* self, PyObject* obj, PyObject* type) {
  (void)type;
  if (obj == NULL || obj == Py_None || Py_TYPE(((IoCall*)self)->orig)->tp_descr_get == NULL) {
    Py_INCREF(self);
    return self;
  }
  return PyMethod_New(self, obj);
}

/* Printed as the function it stands for (a logged configuration naming
 * np.load prints the same words). */
static PyObject* iocall_repr(PyObject* self) { return PyObject_Repr(((IoCall*)self)->orig); }

static PyMethodDef iocall_methods[] = {
    {"__reduce__", iocall_reduce, METH_NOARGS, NULL},
    {NULL, NULL, 0, NULL}};

static PyTypeObject IoCallType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "strata._fast.IoCall",
    .tp_basicsize = sizeof(IoCall),
    .tp_dealloc = (destructor)iocall_dealloc,
    .tp_vectorcall_offset = offsetof(IoCall, vectorcall),
    .tp_call = iocall_call,
    .tp_repr = iocall_repr,
    .tp_getattro = iocall_getattro,
    .tp_setattro = iocall_setattro,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_doc = "A library function that records one strata I/O event per call.",
    .tp_traverse = (traverseproc)iocall_traverse,
    .tp_clear = (inquiry)iocall_clear,
    .tp_methods = iocall_methods,
    .tp_descr_get = iocall_descr_get,
    .tp_weaklistoffset = offsetof(IoCall, weakrefs),
};

static int type_or_none(PyObject* o) { return o == Py_None || PyType_Check(o); }

static PyObject* f_io_call(PyObject* self, PyObject* const* a, Py_ssize_t n) {
  (void)self;
  if (need_args("io_call", n, 6)) return NULL;
  if (!PyCallable_Check(a[0]) || !PyBytes_Check(a[1]) || !PyBytes_Check(a[2]) || !type_or_none(a[3]) ||
      !type_or_none(a[4]) || !PyUnicode_Check(a[5])) {
    PyErr_SetString(PyExc_TypeError,
                    "io_call(orig: callable, name: bytes, cat: bytes, array_type: type|None, "
                    "not_type: type|None, param: str)");
    return NULL;
  }
  IoCall* w = PyObject_GC_New(IoCall, &IoCallType);
  if (!w) return NULL;
  for (int i = 0; i < 6; ++i) Py_INCREF(a[i]);
  w->orig = a[0];
  w->name = a[1];
  w->cat = a[2];
  w->array_type = a[3];
  w->not_type = a[4];
  w->param = a[5];
  /* An exact instance of array_type is never an instance of not_type when
   * not_type is a proper subclass with a plain metaclass (another one may
   * say anything in __instancecheck__), and array_type does not fake its
   * __class__ (numpy.ndarray does not). */
  w->exact_is_array = a[3] != Py_None && (a[4] == Py_None || (a[4] != a[3] && Py_TYPE(a[4]) == &PyType_Type &&
                                                              PyType_IsSubtype((PyTypeObject*)a[4], (PyTypeObject*)a[3])));
  w->weakrefs = NULL;
  w->vectorcall = iocall_vectorcall;
  PyObject_GC_Track(w);
  return (PyObject*)w;
}

/* ---- StandIn: any other patched callable ------------------------------------
 *
 * stand_in(orig, call) returns what _auto.py puts in place of orig (a torch
 * method such as nn.Module.__call__, a worker loop, a collate_fn): calls go
 * to call (the patch, which calls orig), every other attribute is orig's, as
 * for IoCall above (whose attribute, binding, pickling and repr functions it
 * shares: both structs begin with orig). _auto._StandIn is the same in Python,
 * for builds without this module; stored in a class it cost a Python __get__,
 * a bound method and a Python __call__ per call (~0.4 us on Module.__call__).
 * Here a call is one more vectorcall. When orig binds (a Python function),
 * the stand-in's type says so with Py_TPFLAGS_METHOD_DESCRIPTOR: a method
 * call model(x) or it.__next__() then calls it with self as first argument,
 * no bound method made, as for the function it replaced. */
typedef struct {
  PyObject_HEAD
  PyObject* orig;
  PyObject* call;
  PyObject* weakrefs;
  vectorcallfunc vectorcall;
} StandIn;

static PyObject* standin_vectorcall(PyObject* self, PyObject* const* args, size_t nargsf, PyObject* kwnames) {
  return PyObject_Vectorcall(((StandIn*)self)->call, args, nargsf, kwnames);
}

static int standin_traverse(StandIn* w, visitproc visit, void* arg) {
  Py_VISIT(w->orig);
  Py_VISIT(w->call);
  return 0;
}

static int standin_clear(StandIn* w) {
  Py_CLEAR(w->orig);
  Py_CLEAR(w->call);
  return 0;
}

static void standin_dealloc(StandIn* w) {
  PyObject_GC_UnTrack(w);
  if (w->weakrefs) PyObject_ClearWeakRefs((PyObject*)w);
  standin_clear(w);
  Py_TYPE(w)->tp_free((PyObject*)w);
}

#define STANDIN_TYPE(tpname, extra_flags)                                                      \
  {                                                                                            \
    PyVarObject_HEAD_INIT(NULL, 0)                                                             \
    .tp_name = tpname,                                                                         \
    .tp_basicsize = sizeof(StandIn),                                                           \
    .tp_dealloc = (destructor)standin_dealloc,                                                 \
    .tp_vectorcall_offset = offsetof(StandIn, vectorcall),                                     \
    .tp_call = iocall_call,                                                                    \
    .tp_repr = iocall_repr,                                                                    \
    .tp_getattro = iocall_getattro,                                                            \
    .tp_setattro = iocall_setattro,                                                            \
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL | extra_flags, \
    .tp_doc = "A patched callable standing for the original.",                                \
    .tp_traverse = (traverseproc)standin_traverse,                                             \
    .tp_clear = (inquiry)standin_clear,                                                        \
    .tp_methods = iocall_methods,                                                              \
    .tp_descr_get = iocall_descr_get,                                                          \
    .tp_weaklistoffset = offsetof(StandIn, weakrefs),                                          \
  }

static PyTypeObject StandInType = STANDIN_TYPE("strata._fast.StandIn", 0);
static PyTypeObject StandInMethodType = STANDIN_TYPE("strata._fast.StandInMethod", Py_TPFLAGS_METHOD_DESCRIPTOR);

static PyObject* f_stand_in(PyObject* self, PyObject* const* a, Py_ssize_t n) {
  (void)self;
  if (need_args("stand_in", n, 2)) return NULL;
  if (!PyCallable_Check(a[0]) || !PyCallable_Check(a[1])) {
    PyErr_SetString(PyExc_TypeError, "stand_in(orig: callable, call: callable)");
    return NULL;
  }
  PyTypeObject* type = Py_TYPE(a[0])->tp_descr_get != NULL ? &StandInMethodType : &StandInType;
  StandIn* w = PyObject_GC_New(StandIn, type);
  if (!w) return NULL;
  Py_INCREF(a[0]);
  Py_INCREF(a[1]);
  w->orig = a[0];
  w->call = a[1];
  w->weakrefs = NULL;
  w->vectorcall = standin_vectorcall;
  PyObject_GC_Track(w);
  return (PyObject*)w;
}

static PyMethodDef methods[] = {
    {"enabled", (PyCFunction)(void (*)(void))f_enabled, METH_FASTCALL, "strata_enabled() -> bool"},
    {"thread_name", (PyCFunction)(void (*)(void))f_thread_name, METH_FASTCALL, "thread_name(name: bytes)"},
    {"set_metadata", (PyCFunction)(void (*)(void))f_set_metadata, METH_FASTCALL,
     "set_metadata(key: bytes, value: bytes)"},
    {"flush", (PyCFunction)(void (*)(void))f_flush, METH_FASTCALL, "flush()"},
    {"now", (PyCFunction)(void (*)(void))f_now, METH_FASTCALL, "strata_now()"},
    {"complete", (PyCFunction)(void (*)(void))f_complete, METH_FASTCALL,
     "complete(name: bytes, cat: bytes, start_ns, dur_ns)"},
    {"complete_io", (PyCFunction)(void (*)(void))f_complete_io, METH_FASTCALL,
     "complete_io(name: bytes, cat: bytes, start_ns, dur_ns, path: bytes|None, size, ret)"},
    {"tag_set_int", (PyCFunction)(void (*)(void))f_tag_set_int, METH_FASTCALL, "tag_set_int(key: bytes, value)"},
    {"tag_set_str", (PyCFunction)(void (*)(void))f_tag_set_str, METH_FASTCALL,
     "tag_set_str(key: bytes, value: bytes)"},
    {"tag_unset", (PyCFunction)(void (*)(void))f_tag_unset, METH_FASTCALL, "tag_unset(key: bytes)"},
    {"tag_save", (PyCFunction)(void (*)(void))f_tag_save, METH_FASTCALL, "tag_save() -> int"},
    {"tag_restore", (PyCFunction)(void (*)(void))f_tag_restore, METH_FASTCALL, "tag_restore(saved)"},
    {"io_call", (PyCFunction)(void (*)(void))f_io_call, METH_FASTCALL,
     "io_call(orig, name: bytes, cat: bytes, array_type, not_type, param: str) -> callable recording one event per call"},
    {"stand_in", (PyCFunction)(void (*)(void))f_stand_in, METH_FASTCALL,
     "stand_in(orig, call) -> callable calling call, with orig's attributes"},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_fast",
                                    "Hot strata C API calls without ctypes.", -1, methods,
                                    NULL, NULL, NULL, NULL};

#define LOOKUP(var, sym)                                                          \
  do {                                                                            \
    *(void**)(&var) = dlsym(RTLD_DEFAULT, sym);                                   \
    if (!var) {                                                                   \
      PyErr_SetString(PyExc_ImportError, "strata runtime not loaded (" sym ")"); \
      return NULL;                                                                \
    }                                                                             \
  } while (0)

PyMODINIT_FUNC PyInit__fast(void) {
  LOOKUP(p_enabled, "strata_enabled");
  LOOKUP(p_thread_name, "strata_thread_name");
  LOOKUP(p_set_metadata, "strata_set_metadata");
  LOOKUP(p_flush, "strata_flush");
  LOOKUP(p_now, "strata_now");
  LOOKUP(p_complete, "strata_complete");
  LOOKUP(p_complete_io, "strata_complete_io");
  LOOKUP(p_tag_set_int, "strata_tag_set_int");
  LOOKUP(p_tag_set_str, "strata_tag_set_str");
  LOOKUP(p_tag_unset, "strata_tag_unset");
  LOOKUP(p_tag_save, "strata_tag_save");
  LOOKUP(p_tag_restore, "strata_tag_restore");
  s_fspath = PyUnicode_InternFromString("__fspath__");
  s_name = PyUnicode_InternFromString("name");
  s_nbytes = PyUnicode_InternFromString("nbytes");
  s_call = PyUnicode_InternFromString("__call__");
  s_get = PyUnicode_InternFromString("__get__");
  s_reduce = PyUnicode_InternFromString("__reduce__");
  s_reduce_ex = PyUnicode_InternFromString("__reduce_ex__");
  if (!s_fspath || !s_name || !s_nbytes || !s_call || !s_get || !s_reduce || !s_reduce_ex || PyType_Ready(&IoCallType) < 0 ||
      PyType_Ready(&StandInType) < 0 || PyType_Ready(&StandInMethodType) < 0)
    return NULL;
  return PyModule_Create(&module);
}
