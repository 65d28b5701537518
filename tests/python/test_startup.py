"""What strata's Python layer costs every traced interpreter at start-up:
which of its modules it imports, and that they come from bytecode the build
wrote (strata_py_bytecode), also when the interpreter may not write
__pycache__ itself (PYTHONDONTWRITEBYTECODE, a read-only checkout)."""
import os
import re
import subprocess
import sys

from conftest import AUTOLOAD, PYDIR, PYTHON, strata_bin

STRATA_PKG = os.path.join(PYDIR, "strata")
# `python3 -v`: "# code object from '<file>'", the .pyc when the cache was used.
CODE_FROM = re.compile(r"^# code object from '?([^']+?)'?$")


def ours(path):
    return path.startswith(STRATA_PKG + os.sep) or path.startswith(AUTOLOAD + os.sep)


def startup_code_objects(tmp_path, *options):
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
    r = subprocess.run([strata_bin(), "run", "-q", "-o", str(tmp_path / "t"), *options, "--",
                        PYTHON, "-v", "-c", "pass"],
                       env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]
    found = [CODE_FROM.match(line) for line in r.stderr.splitlines()]
    return sorted(os.path.relpath(m.group(1), PYDIR) for m in found if m and ours(m.group(1)))


def test_layer_starts_from_bytecode_with_four_modules(tmp_path):
    # the test runs on the interpreter it traces (conftest.PYTHON)
    tag = sys.implementation.cache_tag
    assert startup_code_objects(tmp_path) == [
        f"autoload/__pycache__/sitecustomize.{tag}.pyc",
        f"strata/__pycache__/__init__.{tag}.pyc",
        f"strata/__pycache__/_auto.{tag}.pyc",
        f"strata/__pycache__/_capi.{tag}.pyc",
    ]


def test_no_python_option_loads_none_of_the_layer(tmp_path):
    assert startup_code_objects(tmp_path, "--no-python") == []
