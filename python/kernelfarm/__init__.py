"""kernelfarm's Python host SDK: the TypeScript host SDK's verbs in Python's conventions.

    import numpy as np
    import kernelfarm

    tracker = kernelfarm.connect_tracker("127.0.0.1:9190")
    with tracker.request("cpu") as remote:
        remote.upload(module)                      # a compiled module, a path, or bytes with a name
        vadd = remote.load_module(module.name)["vadd"]
        a, b = remote.array(np.arange(4, dtype=np.float32)), remote.array(np.ones(4, np.float32))
        c = remote.empty((4,), "float32")
        vadd(a, b, c, 4)
        print(c.numpy(), vadd.module.time_evaluator("vadd", number=100)(a, b, c, 4))

See python/README.md.
"""
# First: it names the packages this Python lacks (protobuf, grpcio, numpy) before any module fails to import one.
from . import protos  # noqa: F401
from .benchmark_result import BenchmarkResult
from .bundle import DTYPES, CompiledModule, bundle_digest, decode_bundle, encode_bundle, validate_bundle
from .compile_cpu import compile_cpu
from .compile_cuda import CudaCompiledModule, KernelResources, compile_cuda, compile_cuda_many
from . import _error_types
from ._error_types import *  # noqa: F401,F403 - a FarmError subclass per code (NoBoard, ...), generated with the codes
from .errors import CODES, ErrorCode, FarmError
from .measure import (
    MEASURE_OUTCOMES,
    Candidate,
    Input,
    MeasureResult,
    Measurer,
    Output,
    RandomInput,
    measure,
)
from .seeded import RandomFill, random_array
from .session import FileInfo, FpgaProgrammed, RemoteArray, RemoteFunction, RemoteModule, Session, Stats
from .summary import AgentInfo, BoardInfo, CanaryTiming, CudaLaunchLimits, FarmSummary, HealthChange, QueueInfo
from ._contract import ROUTES
from .tracker_client import TrackerClient, connect_tracker

__all__ = [
    "AgentInfo",
    "BoardInfo",
    "CanaryTiming",
    "CudaLaunchLimits",
    "FarmSummary",
    "HealthChange",
    "QueueInfo",
    "BenchmarkResult",
    "CODES",
    "Candidate",
    "CompiledModule",
    "CudaCompiledModule",
    "DTYPES",
    "ErrorCode",
    "FarmError",
    "FileInfo",
    "FpgaProgrammed",
    "Input",
    "KernelResources",
    "MEASURE_OUTCOMES",
    "MeasureResult",
    "Measurer",
    "Output",
    "ROUTES",
    "RandomFill",
    "RandomInput",
    "RemoteArray",
    "RemoteFunction",
    "RemoteModule",
    "Session",
    "Stats",
    "TrackerClient",
    "bundle_digest",
    "compile_cpu",
    "compile_cuda",
    "compile_cuda_many",
    "connect_tracker",
    "decode_bundle",
    "encode_bundle",
    "measure",
    "random_array",
    "validate_bundle",
    *_error_types.__all__,
]
