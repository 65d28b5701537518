"""Shared helpers of strata's Python tests (run with /usr/bin/python3 -m pytest).

STRATA_BUILD_DIR names the build tree holding bin/strata, lib/libstrata.so and
python/strata/_reader*.so (CTest sets it); default: <repo>/build.
"""
import json
import os
import subprocess
import sys

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PYDIR = os.path.join(REPO, "python")
AUTOLOAD = os.path.join(PYDIR, "autoload")
EXAMPLE = os.path.join(REPO, "examples", "pytorch", "train.py")
SCRIPTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "scripts")
PYTHON = "/usr/bin/python3"

if PYDIR not in sys.path:
    sys.path.insert(0, PYDIR)


def build_dir():
    return os.environ.get("STRATA_BUILD_DIR") or os.path.join(REPO, "build")


def strata_bin():
    return os.path.join(build_dir(), "bin", "strata")


def runtime_lib():
    return os.path.join(build_dir(), "lib", "libstrata.so")


def native_dir():
    return os.path.join(build_dir(), "python", "strata")


# The package must use the native module of the build under test.
os.environ.setdefault("STRATA_PY_NATIVE", native_dir())


def clean_env(extra=None):
    env = dict(os.environ)
    for k in list(env):
        if k.startswith("STRATA_") and k not in ("STRATA_PY_NATIVE", "STRATA_BUILD_DIR"):
            del env[k]
    env.pop("LD_PRELOAD", None)
    env["PYTHONPATH"] = PYDIR
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    if extra:
        env.update(extra)
    return env


def run_traced(out_dir, cmd, env=None, check=True, timeout=600):
    """Runs cmd under `strata run -o out_dir` (or, while the CLI is missing, with
    the same environment set by hand) and returns the CompletedProcess."""
    env = clean_env(env)
    if os.path.exists(strata_bin()):
        full = [strata_bin(), "run", "-o", str(out_dir), "--"] + list(cmd)
        # strata run puts the autoload hook first on PYTHONPATH itself; keep
        # ours too in case it does not yet.
        env["PYTHONPATH"] = os.pathsep.join([AUTOLOAD, PYDIR])
    else:
        assert os.path.exists(runtime_lib()), "build the runtime first: " + runtime_lib()
        full = list(cmd)
        env.update({"LD_PRELOAD": runtime_lib(), "STRATA_DIR": str(out_dir),
                    "PYTHONPATH": os.pathsep.join([AUTOLOAD, PYDIR]),
                    "STRATA_PYTHONPATH": PYDIR})
    p = subprocess.run(full, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       text=True, timeout=timeout)
    if check and p.returncode != 0:
        raise AssertionError("traced command failed (%d):\n%s\n%s" % (p.returncode, p.stdout, p.stderr))
    return p


def strata_cli(*args):
    p = subprocess.run([strata_bin()] + list(args), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       text=True, timeout=600, env=clean_env())
    assert p.returncode == 0, p.stderr
    return p.stdout


def strata_info_json(trace):
    return json.loads(strata_cli("info", "--json", str(trace)))


@pytest.fixture(scope="session")
def tiny_data(tmp_path_factory):
    """The example's tiny data set, made once (untraced)."""
    d = tmp_path_factory.mktemp("tiny-data")
    subprocess.run([PYTHON, EXAMPLE, "--data", str(d), "--tiny", "--generate-only"], check=True,
                   env=clean_env(), timeout=300)
    return d
