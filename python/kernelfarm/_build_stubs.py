"""Generates kernelfarm's protobuf and gRPC stubs from protos/farm/v1/*.proto.

The stubs are build output, never edited by hand and not committed: this
script makes them (`python3 python/kernelfarm/_build_stubs.py`), and so does
`pip install ./python` (setup.py runs it), with whichever compiler is here:

* `python -m grpc_tools.protoc`, where pip installed grpcio-tools;
* else Debian's `protoc` with `grpc_python_plugin` (apt-get install
  protobuf-compiler protobuf-compiler-grpc).

protoc names a generated module's dependencies by their .proto path
(`from farm.v1 import common_pb2`), which would need a top-level package
`farm`. The stubs live inside this package instead, in kernelfarm/_proto/,
and each such import line is rewritten to `from kernelfarm._proto.farm.v1
import …`: the one change made to protoc's output, and checked (a form of
import this script does not know stops the build).

Standard library only, and runnable as a plain script: it runs before the
package it builds for can be imported.
"""
from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
#: Where a source checkout keeps the .proto files: the repository's protos/.
CHECKOUT_PROTOS = HERE.parent.parent / "protos"
#: Where setup.py copies them, so that an sdist (which has no ../protos) carries them.
PACKAGED_PROTOS = HERE / "_protos"
OUT = HERE / "_proto"
PACKAGE = "kernelfarm._proto"
#: Changing how stubs are made changes the digest too, so old stubs count as stale.
GENERATOR_VERSION = "1"

_IMPORT = re.compile(r"^from farm\.v1 import ", re.MULTILINE)
_OTHER_IMPORT = re.compile(r"^\s*(from|import) farm\b", re.MULTILINE)


def proto_files(proto_dir: Path) -> list[Path]:
    files = sorted((proto_dir / "farm" / "v1").glob("*.proto"))
    if not files:
        raise SystemExit(
            f"kernelfarm stubs: no .proto files under {proto_dir / 'farm' / 'v1'}; build from a kernelfarm checkout or its sdist"
        )
    return files


def proto_digest(proto_dir: Path) -> str:
    """What the stubs were made from: every .proto file's name and bytes."""
    h = hashlib.sha256(GENERATOR_VERSION.encode())
    for f in proto_files(proto_dir):
        h.update(f.relative_to(proto_dir).as_posix().encode() + b"\0" + f.read_bytes() + b"\0")
    return h.hexdigest()


def stamp_of(out: Path) -> str | None:
    """The digest the stubs in `out` were made from, or None when there are none."""
    try:
        text = (out / "__init__.py").read_text()
    except OSError:
        return None
    m = re.search(r'^PROTO_DIGEST = "([0-9a-f]+)"$', text, re.MULTILINE)
    return m.group(1) if m else None


def _compiler() -> list[str]:
    """The protoc command line that writes *_pb2.py and *_pb2_grpc.py."""
    try:
        import grpc_tools  # noqa: F401  (pip's grpcio-tools: protoc and the gRPC plugin in one)

        return [sys.executable, "-m", "grpc_tools.protoc", "--python_out", "{out}", "--grpc_python_out", "{out}"]
    except ImportError:
        pass
    protoc = shutil.which("protoc")
    plugin = shutil.which("grpc_python_plugin")
    if not protoc or not plugin:
        missing = " and ".join(n for n, p in (("protoc", protoc), ("grpc_python_plugin", plugin)) if not p)
        raise SystemExit(
            f"kernelfarm stubs: {missing} not found. Install Debian's protobuf-compiler and protobuf-compiler-grpc "
            "(apt-get install protobuf-compiler protobuf-compiler-grpc), or pip's grpcio-tools"
        )
    return [protoc, f"--plugin=protoc-gen-grpc_python={plugin}", "--python_out", "{out}", "--grpc_python_out", "{out}"]


def _rewrite_imports(path: Path) -> None:
    text = path.read_text()
    text = _IMPORT.sub(f"from {PACKAGE}.farm.v1 import ", text)
    stray = _OTHER_IMPORT.search(text)
    if stray:
        raise SystemExit(f"kernelfarm stubs: {path.name} imports farm in a form this generator does not rewrite: {stray.group(0)!r}")
    path.write_text(text)


def generate(proto_dir: Path = CHECKOUT_PROTOS, out: Path = OUT, force: bool = False) -> bool:
    """Makes the stubs in `out` unless they are already made from these protos; True when it made them."""
    proto_dir = proto_dir.resolve()
    digest = proto_digest(proto_dir)
    if not force and stamp_of(out) == digest:
        return False
    files = [f.relative_to(proto_dir).as_posix() for f in proto_files(proto_dir)]
    # Made beside the old stubs and swapped in whole, so a reader never sees half of them.
    tmp = Path(tempfile.mkdtemp(prefix=".proto-", dir=out.parent))
    try:
        cmd = [a.format(out=tmp) for a in _compiler()] + ["-I", str(proto_dir), *files]
        run = subprocess.run(cmd, capture_output=True, text=True)
        if run.returncode != 0:
            raise SystemExit(f"kernelfarm stubs: {' '.join(cmd)} failed:\n{run.stderr}")
        for py in (tmp / "farm" / "v1").glob("*.py"):
            _rewrite_imports(py)
        header = '"""Generated by python/kernelfarm/_build_stubs.py from protos/farm/v1/*.proto: do not edit."""\n'
        (tmp / "farm" / "__init__.py").write_text(header)
        (tmp / "farm" / "v1" / "__init__.py").write_text(header)
        (tmp / "__init__.py").write_text(header + f'PROTO_DIGEST = "{digest}"\n')
        old = out.parent / f".old-proto-{os.getpid()}"
        if out.exists():
            out.rename(old)
        tmp.rename(out)
        shutil.rmtree(old, ignore_errors=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return True


def main(argv: list[str]) -> int:
    force = "--force" in argv
    made = generate(force=force)
    print(f"kernelfarm stubs {'generated in' if made else 'up to date in'} {OUT}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
