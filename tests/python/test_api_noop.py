"""strata's API without the tracer: every call is a no-op, annotated code runs
unchanged. This pytest process runs without LD_PRELOAD, so it is the no-op case."""
import os
import subprocess
import textwrap

import conftest
import strata


def test_not_enabled_without_runtime():
    assert "libstrata" not in os.environ.get("LD_PRELOAD", "")
    assert strata.enabled() is False


def test_trace_returns_function_unchanged():
    def f(x):
        """doc"""
        return x + 1

    assert strata.trace(f) is f
    assert strata.trace(name="n", cat="c")(f) is f
    assert f(1) == 2


def test_decorator_forms_behave():
    class C:
        @strata.trace
        def m(self, x):
            return x * 2

        @strata.trace
        @staticmethod
        def s(x):
            return x + 3

        @strata.trace
        @classmethod
        def c(cls):
            return cls.__name__

    @strata.trace
    def gen(n):
        for i in range(n):
            yield i

    assert C().m(4) == 8 and C.s(1) == 4 and C.c() == "C"
    assert list(gen(3)) == [0, 1, 2]


def test_iterate_returns_iterable_unchanged():
    data = [1, 2, 3]
    assert strata.iterate(data, name="x") is data


def test_region_tag_and_calls_are_noops():
    with strata.region("r", cat="c", epoch=1) as r:
        assert r is not None
    with strata.tag(epoch=3, stage="x"):
        pass
    strata.tag(step=1).restore()
    strata.instant("i")
    strata.counter("c", 1)
    strata.complete("x", "c", strata.now(), 1, path="/p", size=1, ret=1)
    strata.set_metadata("k", "v")
    strata.thread_name("t")
    strata.flush()
    t0 = strata.now()
    assert isinstance(t0, int) and strata.now() >= t0


def test_region_propagates_exceptions():
    try:
        with strata.region("r"):
            raise KeyError("k")
    except KeyError as e:
        assert e.args == ("k",)
    else:
        raise AssertionError("exception swallowed")


def test_autoload_is_inert_without_runtime(tmp_path):
    # With the hook on PYTHONPATH but no runtime, nothing is patched.
    code = textwrap.dedent("""
        import sys, numpy
        orig = numpy.load
        import strata
        print(strata.enabled(), numpy.load.__module__, "strata._auto" in sys.modules,
              any(type(f).__name__ == "_PostImportFinder" for f in sys.meta_path))
    """)
    env = conftest.clean_env({"PYTHONPATH": os.pathsep.join([conftest.AUTOLOAD, conftest.PYDIR])})
    out = subprocess.run([conftest.PYTHON, "-c", code], env=env, stdout=subprocess.PIPE, text=True,
                         check=True).stdout.split()
    assert out[0] == "False"
    assert out[1] == "numpy"
    assert out[3] == "False"


def test_autoload_chains_existing_sitecustomize(tmp_path):
    # A pre-existing sitecustomize later on sys.path still runs, exactly once.
    other = tmp_path / "other"
    other.mkdir()
    (other / "sitecustomize.py").write_text(
        "import os\nos.environ['CHAINED'] = str(int(os.environ.get('CHAINED', '0')) + 1)\n")
    env = conftest.clean_env({"PYTHONPATH": os.pathsep.join([conftest.AUTOLOAD, str(other), conftest.PYDIR])})
    code = "import os, sitecustomize; print(os.environ.get('CHAINED'), sitecustomize.__file__)"
    out = subprocess.run([conftest.PYTHON, "-c", code], env=env, stdout=subprocess.PIPE, text=True,
                         check=True).stdout.split()
    assert out[0] == "1"
    assert out[1] == str(other / "sitecustomize.py")


def test_a_failing_chained_sitecustomize_is_reported_as_python_does(tmp_path):
    # site.py prints the exception's type and message and goes on: so does
    # the chain, with the same words.
    other = tmp_path / "other"
    other.mkdir()
    (other / "sitecustomize.py").write_text("raise NameError('user sitecustomize broke')\n")
    code = "import sys; print('ran', sys.modules.get('sitecustomize'))"
    plain = subprocess.run([conftest.PYTHON, "-c", code], env=conftest.clean_env({"PYTHONPATH": str(other)}),
                           capture_output=True, text=True)
    env = conftest.clean_env({"PYTHONPATH": os.pathsep.join([conftest.AUTOLOAD, str(other), conftest.PYDIR])})
    chained = subprocess.run([conftest.PYTHON, "-c", code], env=env, capture_output=True, text=True)
    assert plain.stderr == ("Error in sitecustomize; set PYTHONVERBOSE for traceback:\n"
                            "NameError: user sitecustomize broke\n")
    assert (chained.returncode, chained.stdout, chained.stderr) == (plain.returncode, plain.stdout, plain.stderr)


def test_a_chained_sitecustomize_raising_its_own_importerror_is_silent(tmp_path):
    # site.py passes over an ImportError naming sitecustomize in silence, and
    # the program then has no sitecustomize module: neither has it traced.
    other = tmp_path / "other"
    other.mkdir()
    (other / "sitecustomize.py").write_text("raise ImportError('gone', name='sitecustomize')\n")
    code = "import sys; print('ran', sys.modules.get('sitecustomize'))"
    plain = subprocess.run([conftest.PYTHON, "-c", code], env=conftest.clean_env({"PYTHONPATH": str(other)}),
                           capture_output=True, text=True)
    env = conftest.clean_env({"PYTHONPATH": os.pathsep.join([conftest.AUTOLOAD, str(other), conftest.PYDIR])})
    chained = subprocess.run([conftest.PYTHON, "-c", code], env=env, capture_output=True, text=True)
    assert (plain.returncode, plain.stdout, plain.stderr) == (0, "ran None\n", "")
    assert (chained.returncode, chained.stdout, chained.stderr) == (plain.returncode, plain.stdout, plain.stderr)


def test_autoload_chains_debian_sitecustomize():
    # Without another one on PYTHONPATH, the system's (Debian's) still runs.
    env = conftest.clean_env({"PYTHONPATH": os.pathsep.join([conftest.AUTOLOAD, conftest.PYDIR])})
    code = "import sitecustomize; print(sitecustomize.__file__)"
    out = subprocess.run([conftest.PYTHON, "-c", code], env=env, stdout=subprocess.PIPE, text=True,
                         check=True).stdout.strip()
    expect = subprocess.run([conftest.PYTHON, "-c", code], env=conftest.clean_env(),
                            stdout=subprocess.PIPE, text=True).stdout.strip()
    assert out == expect


def test_wraps_metadata_kept_when_enabled_api_is_used():
    # functools.wraps metadata of the enabled-path wrappers (built directly).
    def f(a, b=2):
        """doc of f"""
        return a + b

    w = strata._wrap_function(f, b"f", b"app", None)
    assert w.__name__ == "f" and w.__doc__ == "doc of f" and w.__wrapped__ is f
    assert w.__qualname__ == f.__qualname__ and w.__module__ == f.__module__


def test_traced_program_sees_its_own_sys_path(tmp_path):
    # strata run puts its two directories first on PYTHONPATH; once the layer
    # is loaded the program's sys.path is the one it has without strata, and
    # `import strata` still works. A directory the user's PYTHONPATH names too
    # (PYDIR, by clean_env) stays.
    code = "import sys, strata; print(repr(sys.path)); print(strata.enabled())"
    env = conftest.clean_env()
    plain = subprocess.run([conftest.PYTHON, "-c", code], env=env, stdout=subprocess.PIPE, text=True,
                           check=True).stdout.splitlines()
    traced = subprocess.run([conftest.strata_bin(), "run", "-q", "-o", str(tmp_path / "t"), "--",
                             conftest.PYTHON, "-c", code], env=env, stdout=subprocess.PIPE, text=True,
                            check=True).stdout.splitlines()
    assert traced[0] == plain[0]
    assert conftest.AUTOLOAD not in traced[0]
    assert (plain[1], traced[1]) == ("False", "True")
    # Without a PYTHONPATH of the user's, neither of strata's directories stays.
    env.pop("PYTHONPATH")
    bare = subprocess.run([conftest.PYTHON, "-c", "import sys; print(repr(sys.path))"], env=env,
                          stdout=subprocess.PIPE, text=True, check=True).stdout.strip()
    traced = subprocess.run([conftest.strata_bin(), "run", "-q", "-o", str(tmp_path / "t2"), "--",
                             conftest.PYTHON, "-c", code], env=env, stdout=subprocess.PIPE, text=True,
                            check=True).stdout.splitlines()
    assert traced == [bare, "True"]
