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
import tarfile
import textwrap
from pathlib import Path

import pytest

from farm import REPO


def _checkout(tmp_path: Path) -> Path:
    """A copy of the checkout's python/ and protos/farm, without generated stubs or build output."""
    if subprocess.run([sys.executable, "-c", "import ensurepip, venv, setuptools, wheel"], capture_output=True).returncode != 0:
        pytest.skip(
            f"{sys.executable} cannot build a package offline into a venv "
            "(Debian: apt-get install python3-venv python3-setuptools python3-wheel)"
        )
    src = tmp_path / "checkout"
    shutil.copytree(
        REPO / "python",
        src / "python",
        ignore=shutil.ignore_patterns("_proto", "_protos", "__pycache__", "build", "dist", "*.egg-info", ".pytest_cache", "tests"),
    )
    shutil.copytree(REPO / "protos" / "farm", src / "protos" / "farm")
    assert not (src / "python" / "kernelfarm" / "_proto").exists()
    return src


def _pip_install(tmp_path: Path, what: Path) -> tuple[Path, dict[str, str]]:
    """A fresh venv (over this Python's packages, offline) with `what` installed by pip; the venv and the env to run it."""
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", str(venv)], check=True, capture_output=True)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    pip = subprocess.run(
        [str(venv / "bin" / "pip"), "install", "--no-build-isolation", "--no-index", str(what)], capture_output=True, text=True, env=env
    )
    assert pip.returncode == 0, pip.stdout + pip.stderr
    return venv, env


def test_an_sdist_carries_the_protos_and_installs_on_its_own(tmp_path):
    """The sdist holds the .proto files (not stubs made from them), and pip builds it where no checkout is
    (--skip-dependency-check: grpcio-tools is what an isolated build fetches; offline, Debian's protoc makes the stubs)."""
    if subprocess.run([sys.executable, "-c", "import build"], capture_output=True).returncode != 0:
        pytest.skip(f"{sys.executable} has no build module (Debian: apt-get install python3-build)")
    src = _checkout(tmp_path)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    out = tmp_path / "dist"
    made = subprocess.run(
        [sys.executable, "-m", "build", "--sdist", "--no-isolation", "--skip-dependency-check", "--outdir", str(out), str(src / "python")],
        capture_output=True,
        text=True,
        env=env,
    )
    assert made.returncode == 0, made.stdout + made.stderr
    (sdist,) = out.glob("kernelfarm-*.tar.gz")
    with tarfile.open(sdist) as tar:
        names = {n.split("/", 1)[1] for n in tar.getnames() if "/" in n}
    protos = {p.name for p in (REPO / "protos" / "farm" / "v1").glob("*.proto")}
    assert {n.rsplit("/", 1)[-1] for n in names if n.startswith("kernelfarm/_protos/farm/v1/")} == protos
    assert "kernelfarm/py.typed" in names
    assert not [n for n in names if n.startswith("kernelfarm/_proto/")], "stubs are made from the .proto files at install"
    # Built away from the checkout: nothing but the tarball to build from.
    shutil.rmtree(src)
    venv, env = _pip_install(tmp_path, sdist)
    run = subprocess.run(
        [str(venv / "bin" / "python"), "-c", "import kernelfarm, kernelfarm.protos; print(kernelfarm.__file__)"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env,
    )
    assert run.returncode == 0, run.stderr
    where = Path(run.stdout.strip())
    assert where.is_relative_to(venv), where
    assert (where.parent / "py.typed").is_file() and (where.parent / "_proto" / "farm" / "v1" / "host_pb2.py").is_file()


def test_pip_install_builds_the_stubs_and_the_installed_package_runs_a_session(farm, tracker, vadd_module, tmp_path):
    src = _checkout(tmp_path)
    venv, env = _pip_install(tmp_path, src / "python")
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


# Makes `module` (and what is under it) unimportable, as on a Python without its package, then imports kernelfarm.
_WITHOUT = """
import sys
blocked = sys.argv[1:]
class Without:
    def find_spec(self, name, path=None, target=None):
        if any(name == b or name.startswith(b + ".") for b in blocked):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None
for b in blocked:
    for loaded in [m for m in sys.modules if m == b or m.startswith(b + ".")]:
        del sys.modules[loaded]
sys.meta_path.insert(0, Without())
import kernelfarm
"""


@pytest.mark.parametrize(
    "blocked, names",
    [
        (["google.protobuf"], ["kernelfarm needs protobuf,", "apt-get install python3-protobuf` installs it", "-m pip install protobuf`"]),
        (["grpc"], ["kernelfarm needs grpcio,", "apt-get install python3-grpcio` installs it", "-m pip install grpcio`"]),
        (
            ["google.protobuf", "grpc"],
            [
                "kernelfarm needs protobuf, grpcio,",
                "apt-get install python3-protobuf python3-grpcio` installs them",
                "pip install protobuf grpcio`",
            ],
        ),
    ],
    ids=["protobuf", "grpcio", "both"],
)
def test_importing_without_a_dependency_names_the_package_to_install(blocked, names):
    """Without protobuf the stubs' import failed, and the message said "stubs are not generated"."""
    r = subprocess.run([sys.executable, "-c", _WITHOUT, *blocked], cwd=REPO / "python", capture_output=True, text=True)
    assert r.returncode != 0
    last = r.stderr.strip().splitlines()[-1]
    assert last.startswith("ModuleNotFoundError: "), r.stderr
    for name in [*names, sys.executable]:
        assert name in last, f"{name!r} is not in: {last}"
    assert "stubs" not in last
