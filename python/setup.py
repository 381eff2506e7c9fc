"""Builds the kernelfarm package: its protobuf and gRPC stubs are generated from
../protos first (kernelfarm/_build_stubs.py), so a wheel always holds stubs of
the contract it was built with."""
import importlib.util
from pathlib import Path

from setuptools import setup

HERE = Path(__file__).resolve().parent
_spec = importlib.util.spec_from_file_location("kernelfarm_build_stubs", HERE / "kernelfarm" / "_build_stubs.py")
_stubs = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_stubs)
_stubs.generate()

protobuf = "protobuf>=4.21"  # what Debian 12's protoc 3.21 writes code for
try:
    import google.protobuf
    import grpc_tools  # noqa: F401

    # grpcio-tools' protoc writes code for its own protobuf release, which refuses older runtimes.
    protobuf = f"protobuf>={google.protobuf.__version__}"
except ImportError:
    pass

setup(install_requires=["grpcio>=1.51", protobuf, "numpy>=1.24"])
