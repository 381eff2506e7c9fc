"""The generated stubs of protos/farm/v1, with a clear error when they are
missing or were made from other .proto files than the checkout's."""
from __future__ import annotations

from . import _build_stubs

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
