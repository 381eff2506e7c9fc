"""The generated stubs of protos/farm/v1, with a clear error when they are
missing or were made from other .proto files than the checkout's."""
from __future__ import annotations

import importlib
import sys

from . import _build_stubs

#: What the SDK imports beyond the standard library: (module, Debian's package, pip's package).
REQUIRED = (("google.protobuf", "python3-protobuf", "protobuf"), ("grpc", "python3-grpcio", "grpcio"), ("numpy", "python3-numpy", "numpy"))


def _missing_packages() -> list[tuple[str, str, str]]:
    missing = []
    for module, debian, pip in REQUIRED:
        try:
            importlib.import_module(module)
        except ImportError:
            missing.append((module, debian, pip))
    return missing


# Checked before the stubs, which import google.protobuf: without it, their import failed as "stubs are not generated".
_missing = _missing_packages()
if _missing:
    _pip = " ".join(pip for _, _, pip in _missing)
    _debian = " ".join(debian for _, debian, _ in _missing)
    raise ModuleNotFoundError(
        f"kernelfarm needs {', '.join(pip for _, _, pip in _missing)}, which {sys.executable} "
        f"(Python {sys.version_info[0]}.{sys.version_info[1]}) cannot import: `apt-get install {_debian}` installs "
        f"{'it' if len(_missing) == 1 else 'them'} for Debian's /usr/bin/python3, `{sys.executable} -m pip install {_pip}` "
        "for this Python (`pip install ./python` installs kernelfarm with them)",
        name=_missing[0][0],
    )

try:
    from ._proto import PROTO_DIGEST
    from ._proto.farm.v1 import bundle_pb2, common_pb2, host_pb2, host_pb2_grpc, session_pb2
except ImportError as err:  # pragma: no cover - what a user without stubs sees
    raise ImportError(
        "kernelfarm's protobuf stubs are not generated: run `python3 python/kernelfarm/_build_stubs.py` "
        "(it needs Debian's protobuf-compiler and protobuf-compiler-grpc, or pip's grpcio-tools), "
        "or install the package with `pip install ./python`"
    ) from err

# In a source checkout, stubs made from older .proto files would speak an old contract: refuse them.
# (An installed package has no protos/ two levels up: nothing to compare with.)
if _build_stubs.CHECKOUT_PROTOS.is_dir() and _build_stubs.proto_digest(_build_stubs.CHECKOUT_PROTOS) != PROTO_DIGEST:
    raise ImportError(
        "kernelfarm's protobuf stubs are stale (protos/farm/v1 changed since they were made): "
        "run `python3 python/kernelfarm/_build_stubs.py` again"
    )

__all__ = ["bundle_pb2", "common_pb2", "host_pb2", "host_pb2_grpc", "session_pb2"]
