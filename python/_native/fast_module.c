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
  return PyModule_Create(&module);
}
