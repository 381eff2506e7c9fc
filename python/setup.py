"""Builds the kernelfarm package: its protobuf and gRPC stubs are generated
first (kernelfarm/_build_stubs.py), so a wheel always holds stubs of the
contract it was built with.

The .proto files come from the checkout's ../protos, copied into
kernelfarm/_protos/ on every build there so that an sdist carries them
(MANIFEST.in); an sdist, which has no ../protos, builds from that copy."""
import importlib.util
import shutil
from pathlib import Path

from setuptools import setup

HERE = Path(__file__).resolve().parent
_spec = importlib.util.spec_from_file_location("kernelfarm_build_stubs", HERE / "kernelfarm" / "_build_stubs.py")
_stubs = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_stubs)

if _stubs.CHECKOUT_PROTOS.is_dir():
    # Replaced whole, so a .proto file removed from the checkout does not linger in the copy.
    shutil.rmtree(_stubs.PACKAGED_PROTOS, ignore_errors=True)
    for proto in _stubs.proto_files(_stubs.CHECKOUT_PROTOS):
        copy = _stubs.PACKAGED_PROTOS / proto.relative_to(_stubs.CHECKOUT_PROTOS)
        copy.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(proto, copy)
_stubs.generate(_stubs.PACKAGED_PROTOS)

protobuf = "protobuf>=4.21"  # what Debian 12's protoc 3.21 writes code for
try:
    import google.protobuf
    import grpc_tools  # noqa: F401

    # grpcio-tools' protoc writes code for its own protobuf release, which refuses older runtimes.
    protobuf = f"protobuf>={google.protobuf.__version__}"
except ImportError:
    pass

setup(install_requires=["grpcio>=1.51", protobuf, "numpy>=1.24"])
