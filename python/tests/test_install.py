"""`pip install ./python` makes a working package: from a copy of the checkout
without generated stubs, into a fresh virtual environment, the build
generates them, and the installed package — not the checkout — runs a
session. (Offline: pip uses this machine's setuptools and protoc, as
`pip install --no-build-isolation` does; with network, pip fetches
grpcio-tools instead.)"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap

import pytest

from farm import REPO


def test_pip_install_builds_the_stubs_and_the_installed_package_runs_a_session(farm, tracker, vadd_module, tmp_path):
    if subprocess.run([sys.executable, "-c", "import ensurepip, venv, setuptools, wheel"], capture_output=True).returncode != 0:
        pytest.skip(
            f"{sys.executable} cannot build a package offline into a venv "
            "(Debian: apt-get install python3-venv python3-setuptools python3-wheel)"
        )
    src = tmp_path / "checkout"
    shutil.copytree(
        REPO / "python",
        src / "python",
        ignore=shutil.ignore_patterns("_proto", "__pycache__", "build", "*.egg-info", ".pytest_cache", "tests"),
    )
    shutil.copytree(REPO / "protos" / "farm", src / "protos" / "farm")
    assert not (src / "python" / "kernelfarm" / "_proto").exists()
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", str(venv)], check=True, capture_output=True)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    pip = subprocess.run(
        [str(venv / "bin" / "pip"), "install", "--no-build-isolation", "--no-index", str(src / "python")],
        capture_output=True,
        text=True,
        env=env,
    )
    assert pip.returncode == 0, pip.stdout + pip.stderr
    module = tmp_path / "vadd.kfm"
    module.write_bytes(vadd_module.bytes)
    script = textwrap.dedent(
        f"""
        import numpy as np, kernelfarm
        print(kernelfarm.__file__)
        with kernelfarm.connect_tracker({farm.address!r}) as tracker, tracker.request("cpu") as remote:
            name = remote.upload({str(module)!r})
            vadd = remote.load_module(name)["vadd"]
            a = remote.array(np.arange(4, dtype=np.float32))
            c = remote.empty(4, "float32")
            vadd(a, a, c, 4)
            print(c.numpy().tolist())
        """
    )
    run = subprocess.run([str(venv / "bin" / "python"), "-c", script], capture_output=True, text=True, cwd=tmp_path, env=env, timeout=120)
    assert run.returncode == 0, run.stderr
    where, result = run.stdout.splitlines()
    assert where.startswith(str(venv)), where
    assert result == "[0.0, 2.0, 4.0, 6.0]"
