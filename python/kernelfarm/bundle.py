"""The module bundle (protos/bundle.ts): one file per compiled module, built by
the host compilers, shipped with `upload` and checked by the agent before
loading.

A bundle is the protobuf message farm.v1.ModuleBundle of
protos/farm/v1/bundle.proto, the schema both SDKs are generated from, written
by google.protobuf in the canonical encoding that file's comment sets out:
fields in number order, defaults left out, string maps as entry lists sorted
by the key's UTF-8 bytes. protobufjs writes the same bytes from the
TypeScript side, so a module compiled by either SDK has the same digest and
content-addressed upload name (python/tests/test_bundle.py,
test_compile_cpu.py and test_compile_cuda.py compare the bytes with the
TypeScript compilers'); an agent's file store and the CUDA compile cache then
hold one copy for both.
"""
from __future__ import annotations

import hashlib
import platform
import builtins
import re
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Optional

from google.protobuf.message import DecodeError

from ._compile_js import MISSING, is_integer, is_number, js_json
from .errors import FarmError
from .protos import bundle_pb2

BUNDLE_FORMAT = "kernelfarm.bundle"
#: 2: the protobuf encoding of bundle.proto; 1 was the msgpack encoding before it (refused, with a message to recompile).
BUNDLE_VERSION = 2
BUNDLE_TARGETS = ("cpu", "cuda", "vta")
#: Element types of arrays and scalar parameters (protos/dtype.ts DTYPES, same order).
DTYPES = ("int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64", "float32", "float64")

_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_CUDA_ARCH = re.compile(r"sm_[0-9]+[a-z]?")
_INT32_MAX = 0x7FFFFFFF
#: Number.MAX_SAFE_INTEGER: bundle.proto's uint64 fields must read back as the same JavaScript number.
_SAFE_INTEGER_MAX = 2**53 - 1


# ---- the bundle


def encode_bundle(bundle: Mapping[str, Any]) -> bytes:
    """The bundle's bytes, as `encodeBundle` gives them; BAD_BUNDLE naming the
    first bad field."""
    validate_bundle(bundle)
    try:
        return _to_message(bundle).SerializeToString()
    except (TypeError, ValueError) as err:  # a string that is not Unicode text (a lone surrogate) cannot be UTF-8
        raise FarmError("BAD_BUNDLE", f"invalid module bundle: cannot be encoded ({err})") from err


def _entries(target: Any, record: Mapping[str, str]) -> None:
    """A string map appended to the repeated BundleEntry `target`, sorted by the keys' UTF-8 bytes (bundle.proto, rule 4)."""
    for key in sorted(record, key=lambda k: k.encode("utf-8")):
        target.add(key=key, value=record[key])


def _to_message(bundle: Mapping[str, Any]) -> bundle_pb2.ModuleBundle:
    """A validated bundle as its message. Numbers go through int(): a
    validated one is integral (2.0 is the integer 2, as in JavaScript), and a
    protobuf integer field takes no float. google.protobuf leaves out fields
    that hold their default by itself (bundle.proto, rule 2)."""
    m = bundle_pb2.ModuleBundle(
        format=bundle["format"], version=int(bundle["version"]), target=bundle["target"], binary=bytes(bundle["binary"])
    )
    _entries(m.target_details, bundle["targetDetails"])
    for fn in bundle["functions"]:
        f = m.functions.add(name=fn["name"])
        for p in fn["params"]:
            param = f.params.add(name=p["name"], kind=p["kind"], dtype=p["dtype"])
            if "shape" in p:
                param.shape.SetInParent()  # present even when empty: [] (0-d) is not "any shape"
                param.shape.dims.extend(int(d) for d in p["shape"])
        if "launch" in fn:
            launch = fn["launch"]
            f.launch.SetInParent()
            f.launch.grid.extend(int(d) for d in launch["grid"])
            f.launch.block.extend(int(d) for d in launch["block"])
            f.launch.shared_mem_bytes = int(launch["sharedMemBytes"])
    _entries(m.meta, bundle.get("meta") or {})
    return m


def _from_message(m: bundle_pb2.ModuleBundle) -> dict[str, Any]:
    """The record a decoded message holds, with protos/bundle.ts's keys; fields it lacks read as their defaults."""
    functions: list[dict[str, Any]] = []
    for f in m.functions:
        params: list[dict[str, Any]] = []
        for p in f.params:
            param: dict[str, Any] = {"name": p.name, "kind": p.kind, "dtype": p.dtype}
            if p.HasField("shape"):
                param["shape"] = list(p.shape.dims)
            params.append(param)
        fn: dict[str, Any] = {"name": f.name, "params": params}
        if f.HasField("launch"):
            fn["launch"] = {"grid": list(f.launch.grid), "block": list(f.launch.block), "sharedMemBytes": f.launch.shared_mem_bytes}
        functions.append(fn)
    bundle: dict[str, Any] = {
        "format": m.format,
        "version": m.version,
        "target": m.target,
        "targetDetails": {e.key: e.value for e in m.target_details},
        "binary": m.binary,
        "functions": functions,
    }
    if len(m.meta):
        bundle["meta"] = {e.key: e.value for e in m.meta}
    return bundle


#: What to do with a bundle this SDK does not read (protos/bundle.ts RECOMPILE).
_RECOMPILE = (
    "recompile the module with this version of the SDK (compileCpu, compileCuda or compileVta; "
    "kernelfarm.compile_cpu or compile_cuda in Python) and upload what it returns"
)


#: How a version-1 bundle starts: msgpackr's map16 record, whose first key "format" holds "kernelfarm.bundle".
_MSGPACK_BUNDLE_AT_3 = b"\xa6format\xb1" + BUNDLE_FORMAT.encode()


def decode_bundle(data: bytes) -> dict[str, Any]:
    """A bundle file read back and validated (binary as bytes); BAD_BUNDLE
    when it is not a bundle, not valid, not canonically encoded, or of the
    old msgpack encoding (version 1), with decodeBundle's messages."""
    data = bytes(data)
    if data[:1] == b"\xde" and data.startswith(_MSGPACK_BUNDLE_AT_3, 3):
        raise FarmError(
            "BAD_BUNDLE",
            "invalid module bundle: version is 1, the msgpack encoding of older kernelfarm SDKs; "
            f"this build reads version {BUNDLE_VERSION} (protobuf): {_RECOMPILE}",
            {"field": "version", "version": 1},
        )
    message = bundle_pb2.ModuleBundle()
    try:
        message.ParseFromString(data)
    except DecodeError as err:
        raise FarmError(
            "BAD_BUNDLE",
            f"not a kernelfarm module bundle: protobuf decoding failed ({err}); build modules with compileCpu, compileCuda or compileVta",
        ) from err
    value = _from_message(message)
    validate_bundle(value)
    # One module, one content address: bytes that decode but are not the canonical encoding are refused, as in TypeScript.
    if _to_message(value).SerializeToString() != data:
        raise FarmError(
            "BAD_BUNDLE",
            f"invalid module bundle: (encoding) is not the canonical encoding of the bundle it holds (farm/v1/bundle.proto); {_RECOMPILE}",
            {"field": "(encoding)"},
        )
    return value


def bundle_digest(data: bytes) -> str:
    """sha256 of the encoded bundle, hex: its content address."""
    return hashlib.sha256(data).hexdigest()


def bundle_name(digest: str) -> str:
    """The upload name of a bundle: `<first 16 hex digits of its sha256>.kfm`."""
    return f"{digest[:16]}.kfm"


def _bad(field_name: str, problem: str) -> FarmError:
    return FarmError("BAD_BUNDLE", f"invalid module bundle: {field_name} {problem}", {"field": field_name})


def validate_bundle(value: Any) -> None:
    """Raises BAD_BUNDLE naming the first bad field, with validateBundle's
    message, or returns None for a valid bundle."""
    if not isinstance(value, Mapping):
        raise _bad("(root)", "is not a record")
    b = value
    if b.get("format", MISSING) != BUNDLE_FORMAT:
        raise _bad("format", f'is {js_json(b.get("format", MISSING))}, expected "{BUNDLE_FORMAT}"')
    version = b.get("version", MISSING)
    if not (is_number(version) and version == BUNDLE_VERSION):
        raise _bad("version", f"is {js_json(version)}; this build reads version {BUNDLE_VERSION}")
    target = b.get("target", MISSING)
    if not (isinstance(target, str) and target in BUNDLE_TARGETS):
        raise _bad("target", f"is {js_json(target)}, expected one of {', '.join(BUNDLE_TARGETS)}")
    details = b.get("targetDetails", MISSING)
    if not isinstance(details, Mapping):
        raise _bad("targetDetails", "is not a record")
    for k, v in details.items():
        if not isinstance(v, str):
            raise _bad(f"targetDetails.{k}", "is not a string")
    binary = b.get("binary", MISSING)
    if not isinstance(binary, (bytes, bytearray, memoryview)) or len(binary) == 0:
        raise _bad("binary", "is missing or empty")
    functions = b.get("functions", MISSING)
    if not isinstance(functions, (list, tuple)) or len(functions) == 0:
        raise _bad("functions", "is missing or empty")
    names: set[str] = set()
    for i, fn in enumerate(functions):
        at = f"functions[{i}]"
        if not isinstance(fn, Mapping):
            raise _bad(at, "is not a record")
        name = fn.get("name", MISSING)
        if not (isinstance(name, str) and _IDENTIFIER.fullmatch(name)):
            raise _bad(f"{at}.name", f"is not a C identifier: {js_json(name)}")
        if name in names:
            raise _bad(f"{at}.name", f'repeats "{name}"')
        names.add(name)
        params = fn.get("params", MISSING)
        if not isinstance(params, (list, tuple)):
            raise _bad(f"{at}.params", "is not a list")
        for j, p in enumerate(params):
            problem = param_problem(p)
            if problem:
                raise _bad(f"{at}.params[{j}]{problem[0]}", problem[1])
        if "launch" in fn:
            if target != "cuda":
                raise _bad(f"{at}.launch", f"is only meaningful for target cuda, not {target}")
            launch = launch_problem(fn["launch"])
            if launch:
                raise _bad(f"{at}.launch", launch)
    if target == "cuda":
        arch = details.get("arch", MISSING)
        if not (isinstance(arch, str) and _CUDA_ARCH.fullmatch(arch)):
            raise _bad("targetDetails.arch", f'is {js_json(arch)}, expected a GPU architecture such as "sm_90"')
        fmt = details.get("format", MISSING)
        if fmt not in ("cubin", "fatbin"):
            raise _bad("targetDetails.format", f'is {js_json(fmt)}, expected "cubin" or "fatbin"')


def param_problem(p: Any) -> Optional[tuple[str, str]]:
    """Why `p` is not a ParamSpec, as (the field under it, e.g. ".dtype", the
    problem), or None when it is one. The compilers check their users' own
    ParamSpecs with it before running a compiler."""
    if not isinstance(p, Mapping):
        return ("", "is not a record")
    if not isinstance(p.get("name", MISSING), str):
        return (".name", "is not a string")
    kind = p.get("kind", MISSING)
    if kind not in ("buffer", "scalar"):
        return (".kind", f'is {js_json(kind)}, expected "buffer" or "scalar"')
    dtype = p.get("dtype", MISSING)
    if not (isinstance(dtype, str) and dtype in DTYPES):
        return (".dtype", f"is not a known dtype: {js_json(dtype)}")
    if "shape" in p:
        if kind != "buffer":
            return (".shape", "is only allowed on buffers")
        shape = p["shape"]
        if not isinstance(shape, (list, tuple)) or not all(is_integer(d) and 0 < d <= _SAFE_INTEGER_MAX for d in shape):
            return (".shape", "is not a list of positive integers")
    return None


def launch_problem(value: Any) -> Optional[str]:
    """Why `value` is not a LaunchConfig ({grid: [x, y, z], block: [x, y, z],
    sharedMemBytes}), or None when it is one (protos' launchProblem)."""
    if not isinstance(value, Mapping):
        return "is not a record"
    for dim in ("grid", "block"):
        v = value.get(dim, MISSING)
        if not (isinstance(v, (list, tuple)) and len(v) == 3 and all(is_integer(d) and 1 <= d <= _INT32_MAX for d in v)):
            return f"{dim} is {js_json(v)}, expected [x, y, z] of positive integers"
    smem = value.get("sharedMemBytes", MISSING)
    if not (is_integer(smem) and 0 <= smem <= _SAFE_INTEGER_MAX):
        return f"sharedMemBytes is {js_json(smem)}, expected a non-negative integer"
    return None


def to_launch_config(decl: Mapping[str, Any], where: str) -> dict[str, Any]:
    """The LaunchConfig for a declaration `{grid, block, sharedMemBytes?}`
    whose sizes are a number or a list of 1 to 3 (missing dimensions are 1);
    INVALID_ARGUMENT naming `where` if it is not one (protos' toLaunchConfig).
    Integral floats come back as ints: the bytes are the same, Python's
    reading of them is plainer."""

    def dim(d: Any) -> list[Any]:
        v = [d] if is_number(d) else list(d) if isinstance(d, (list, tuple)) else [d]
        return v + [1] * (3 - len(v))

    smem = decl.get("sharedMemBytes")
    config = {"grid": dim(decl.get("grid")), "block": dim(decl.get("block")), "sharedMemBytes": 0 if smem is None else smem}
    problem = launch_problem(config)
    if problem:
        raise FarmError("INVALID_ARGUMENT", f"{where}: launch {problem}")
    return {
        "grid": [int(d) for d in config["grid"]],
        "block": [int(d) for d in config["block"]],
        "sharedMemBytes": int(config["sharedMemBytes"]),
    }


# Python's name of the machine (platform.machine()) -> the compilers' name,
# as domain/cpu-target.ts names Node's process.arch.
_MACHINE_ARCH = {
    "x86_64": "x86_64",
    "amd64": "x86_64",
    "x64": "x86_64",
    "aarch64": "aarch64",
    "arm64": "aarch64",
    "armv8l": "arm",
    "armv7l": "arm",
    "armv6l": "arm",
    "i386": "i386",
    "i686": "i386",
    "x86": "i386",
    "ppc64le": "ppc64le",
    "s390x": "s390x",
    "riscv64": "riscv64",
    "loongarch64": "loongarch64",
}


def host_cpu_target() -> dict[str, str]:
    """The target of this machine: arch as compilers name it (`uname -m`), os
    as Node names it (sys.platform without a version: "linux", "darwin",
    "win32", "freebsd"), so both SDKs write the same (domain/cpu-target.ts)."""
    machine = platform.machine().lower()
    return {"arch": _MACHINE_ARCH.get(machine, machine), "os": re.sub(r"[0-9]+$", "", sys.platform)}


# ELF e_machine -> arch, EI_OSABI -> os, Mach-O cputype -> arch (domain/cpu-target.ts).
_ELF_MACHINE = {3: "i386", 40: "arm", 62: "x86_64", 183: "aarch64", 243: "riscv64", 22: "s390x", 258: "loongarch64"}
_EM_PPC64 = 21
_ELF_OSABI = {0: "linux", 3: "linux", 9: "freebsd"}
_MACHO_CPU = {0x01000007: "x86_64", 0x0100000C: "aarch64"}


def binary_cpu_target(binary: bytes) -> Optional[dict[str, str]]:
    """The target a shared object was built for, read from its ELF or Mach-O
    header (a cross compiler's output is labelled by what it built); None for
    a format or machine not known here."""
    if len(binary) >= 20 and binary[:4] == b"\x7fELF":
        little = binary[5] == 1
        machine = int.from_bytes(binary[18:20], "little" if little else "big")
        os_name = _ELF_OSABI.get(binary[7])
        arch = ("ppc64le" if little else "ppc64") if machine == _EM_PPC64 else _ELF_MACHINE.get(machine)
        return {"arch": arch, "os": os_name} if arch and os_name else None
    if len(binary) >= 8 and int.from_bytes(binary[:4], "little") == 0xFEEDFACF:
        arch = _MACHO_CPU.get(int.from_bytes(binary[4:8], "little"))
        return {"arch": arch, "os": "darwin"} if arch else None
    return None


@dataclass(frozen=True)
class CompiledModule:
    """What a host compiler returns (host-sdk/compiled-module.ts): the encoded
    bundle, ready to upload, and what it holds."""

    #: The encoded bundle.
    bytes: bytes = field(repr=False)
    #: Upload name: content-addressed, `<sha256 prefix>.kfm`.
    name: str
    #: sha256 of `bytes`, hex.
    digest: str
    target: str
    #: The function table as the bundle holds it: [{"name", "params": [{"name", "kind", "dtype", "shape"?}], "launch"?}].
    functions: list[dict[str, Any]]

    @classmethod
    def from_bytes(cls, data: builtins.bytes) -> "CompiledModule":
        """A bundle file (from either SDK) read back; BAD_BUNDLE if it is not one."""
        bundle = decode_bundle(data)
        digest = bundle_digest(data)
        return cls(bytes(data), bundle_name(digest), digest, bundle["target"], bundle["functions"])
