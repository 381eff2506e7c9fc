"""The module bundle (protos/bundle.ts): one file per compiled module, built by
the host compilers, shipped with `upload` and checked by the agent before
loading.

A bundle is a msgpack record. The encoder here writes exactly what
msgpackr's default `pack` (the TypeScript side) writes for that record, so a
bundle built from Python has the same bytes, digest and content-addressed
upload name as the TypeScript compilers' for the same input; an agent's file
store and the CUDA compile cache then hold one copy for both. What msgpackr
1.12 writes (found by experiment with node, checked by
python/tests/test_bundle.py against msgpackr itself):

* a record: always map16 (``0xde`` and a 2-byte count, even when it is empty:
  msgpackr reserves the count before it knows it), keys in JavaScript
  property order (integer-like keys ascending, then as inserted);
* a list: fixarray / array16 / array32, the smallest that fits;
* a string: UTF-8 in the smallest of fixstr / str8 / str16 / str32;
* a number: an integer in [0, 2**32) as positive fixint (< 128) / uint8 /
  uint16 / uint32, one in [-2**31, 0) as negative fixint / int8 / int16 /
  int32, anything else (fractions, larger integers) as float64. A Python float
  with an integral value is an integer here, as a JavaScript number is;
* bytes: bin8 / bin16 / bin32; True / False / None: 0xc3 / 0xc2 / 0xc0;
* no records (structures) extension: the default `pack` has useRecords false.

python3-msgpack is not used: it writes small records as fixmap and keeps
Python's key order, so it cannot give msgpackr's bytes, and the SDK then
needs nothing beyond Debian's python3-grpcio, -protobuf and -numpy.
"""
from __future__ import annotations

import hashlib
import platform
import re
import struct
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Optional

from ._compile_js import MISSING, is_integer, is_number, js_json, js_key_order
from .errors import FarmError

BUNDLE_FORMAT = "kernelfarm.bundle"
BUNDLE_VERSION = 1
BUNDLE_TARGETS = ("cpu", "cuda", "vta")
#: Element types of arrays and scalar parameters (protos/dtype.ts DTYPES, same order).
DTYPES = ("int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64", "float32", "float64")

_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_CUDA_ARCH = re.compile(r"sm_[0-9]+[a-z]?")
_INT32_MAX = 0x7FFFFFFF


# ---- msgpack: the subset msgpackr's pack writes, and a reader of all of msgpack but extensions


def _pack(value: Any, out: bytearray) -> None:
    if value is None:
        out.append(0xC0)
    elif value is True or value is False:
        out.append(0xC3 if value else 0xC2)
    elif isinstance(value, str):
        data = value.encode("utf-8")
        n = len(data)
        if n < 0x20:
            out.append(0xA0 | n)
        elif n < 0x100:
            out += struct.pack(">BB", 0xD9, n)
        elif n < 0x10000:
            out += struct.pack(">BH", 0xDA, n)
        else:
            out += struct.pack(">BI", 0xDB, n)
        out += data
    elif is_number(value):
        _pack_number(value, out)
    elif isinstance(value, (bytes, bytearray, memoryview)):
        data = bytes(value)
        n = len(data)
        if n < 0x100:
            out += struct.pack(">BB", 0xC4, n)
        elif n < 0x10000:
            out += struct.pack(">BH", 0xC5, n)
        else:
            out += struct.pack(">BI", 0xC6, n)
        out += data
    elif isinstance(value, (list, tuple)):
        n = len(value)
        if n < 0x10:
            out.append(0x90 | n)
        elif n < 0x10000:
            out += struct.pack(">BH", 0xDC, n)
        else:
            out += struct.pack(">BI", 0xDD, n)
        for item in value:
            _pack(item, out)
    elif isinstance(value, Mapping):
        if not all(isinstance(k, str) for k in value):
            raise TypeError("record keys must be strings")
        if len(value) > 0xFFFF:
            raise TypeError("a record of more than 65535 keys (msgpackr's pack refuses it too)")
        out += struct.pack(">BH", 0xDE, len(value))
        for key in js_key_order(value):
            _pack(key, out)
            _pack(value[key], out)
    else:
        raise TypeError(f"cannot encode {type(value).__name__} in a bundle")


def _pack_number(value: Any, out: bytearray) -> None:
    if is_integer(value):
        n = int(value)
        if 0 <= n < 2**32:
            if n < 0x80:
                out.append(n)
            elif n < 0x100:
                out += struct.pack(">BB", 0xCC, n)
            elif n < 0x10000:
                out += struct.pack(">BH", 0xCD, n)
            else:
                out += struct.pack(">BI", 0xCE, n)
            return
        if -(2**31) <= n < 0:
            if n >= -0x20:
                out.append(0x100 + n)
            elif n >= -0x80:
                out += struct.pack(">Bb", 0xD0, n)
            elif n >= -0x8000:
                out += struct.pack(">Bh", 0xD1, n)
            else:
                out += struct.pack(">Bi", 0xD2, n)
            return
    out += struct.pack(">Bd", 0xCB, float(value))


_SIMPLE = {0xC0: None, 0xC2: False, 0xC3: True}
_NUMBERS = {0xCC: ">B", 0xCD: ">H", 0xCE: ">I", 0xCF: ">Q", 0xD0: ">b", 0xD1: ">h", 0xD2: ">i", 0xD3: ">q", 0xCA: ">f", 0xCB: ">d"}
# Header byte -> (what follows, the size field's format).
_SIZED = {
    0xD9: ("str", ">B"), 0xDA: ("str", ">H"), 0xDB: ("str", ">I"),
    0xC4: ("bin", ">B"), 0xC5: ("bin", ">H"), 0xC6: ("bin", ">I"),
    0xDC: ("array", ">H"), 0xDD: ("array", ">I"),
    0xDE: ("map", ">H"), 0xDF: ("map", ">I"),
}
_EXTENSIONS = (0xC7, 0xC8, 0xC9, 0xD4, 0xD5, 0xD6, 0xD7, 0xD8)


class _Reader:
    """Reads one msgpack value; ValueError names what is wrong and where."""

    def __init__(self, data: bytes):
        self.data = data
        self.pos = 0

    def take(self, n: int) -> bytes:
        if self.pos + n > len(self.data):
            raise ValueError("unexpected end of data")
        chunk = self.data[self.pos : self.pos + n]
        self.pos += n
        return chunk

    def unpack(self, fmt: str) -> Any:
        return struct.unpack(fmt, self.take(struct.calcsize(fmt)))[0]

    def value(self) -> Any:
        at = self.pos
        b = self.unpack(">B")
        if b < 0x80:
            return b
        if b >= 0xE0:
            return b - 0x100
        if 0xA0 <= b <= 0xBF:
            return self.text(b & 0x1F)
        if 0x90 <= b <= 0x9F:
            return [self.value() for _ in range(b & 0x0F)]
        if 0x80 <= b <= 0x8F:
            return self.record(b & 0x0F)
        if b in _SIMPLE:
            return _SIMPLE[b]
        if b in _NUMBERS:
            return self.unpack(_NUMBERS[b])
        if b in _SIZED:
            kind, size = _SIZED[b]
            n = self.unpack(size)
            if kind == "str":
                return self.text(n)
            if kind == "bin":
                return self.take(n)
            if kind == "array":
                return [self.value() for _ in range(n)]
            return self.record(n)
        if b in _EXTENSIONS:
            raise ValueError(f"a msgpack extension at byte {at}: bundles hold none")
        raise ValueError(f"byte 0x{b:02x} at {at} starts no msgpack value")

    def text(self, n: int) -> str:
        at = self.pos
        try:
            return self.take(n).decode("utf-8")
        except UnicodeDecodeError:
            raise ValueError(f"the string at byte {at} is not UTF-8") from None

    def record(self, n: int) -> dict:
        out: dict = {}
        for _ in range(n):
            key = self.value()
            if not isinstance(key, str):
                raise ValueError(f"a record key is {js_json(key)}, not a string")
            out[key] = self.value()
        return out


def pack(value: Any) -> bytes:
    """msgpackr's default `pack(value)` for records, lists, strings, numbers,
    bytes, booleans and None (see the module docstring)."""
    out = bytearray()
    _pack(value, out)
    return bytes(out)


def unpack(data: bytes) -> Any:
    """One msgpack value filling all of `data`; ValueError when it does not."""
    reader = _Reader(bytes(data))
    value = reader.value()
    if reader.pos != len(reader.data):
        raise ValueError(f"{len(reader.data) - reader.pos} bytes after the value")
    return value


# ---- the bundle


def encode_bundle(bundle: Mapping[str, Any]) -> bytes:
    """The bundle's bytes, as `encodeBundle` gives them; BAD_BUNDLE naming the
    first bad field. Key order is the record's own: build it as the
    TypeScript does (format, version, target, targetDetails, binary,
    functions, meta) for the same bytes."""
    validate_bundle(bundle)
    try:
        return pack(bundle)
    except (TypeError, OverflowError) as err:
        raise FarmError("BAD_BUNDLE", f"invalid module bundle: cannot be encoded ({err})") from err


def decode_bundle(data: bytes) -> dict[str, Any]:
    """A bundle file read back and validated (binary as bytes); BAD_BUNDLE
    when it is not msgpack or not a valid bundle."""
    try:
        value = unpack(data)
    except RecursionError as err:
        raise FarmError("BAD_BUNDLE", "not a kernelfarm module bundle: msgpack decoding failed (nested too deeply)") from err
    except ValueError as err:
        raise FarmError("BAD_BUNDLE", f"not a kernelfarm module bundle: msgpack decoding failed ({err})") from err
    validate_bundle(value)
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
        if not isinstance(shape, (list, tuple)) or not all(is_integer(d) and d > 0 for d in shape):
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
    if not (is_integer(smem) and smem >= 0):
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
    return {"grid": [int(d) for d in config["grid"]], "block": [int(d) for d in config["block"]], "sharedMemBytes": int(config["sharedMemBytes"])}


# Python's name of the machine (platform.machine()) -> the compilers' name,
# as domain/cpu-target.ts names Node's process.arch.
_MACHINE_ARCH = {
    "x86_64": "x86_64", "amd64": "x86_64", "x64": "x86_64",
    "aarch64": "aarch64", "arm64": "aarch64", "armv8l": "arm", "armv7l": "arm", "armv6l": "arm",
    "i386": "i386", "i686": "i386", "x86": "i386",
    "ppc64le": "ppc64le", "s390x": "s390x", "riscv64": "riscv64", "loongarch64": "loongarch64",
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
    def from_bytes(cls, data: bytes) -> "CompiledModule":
        """A bundle file (from either SDK) read back; BAD_BUNDLE if it is not one."""
        bundle = decode_bundle(data)
        digest = bundle_digest(data)
        return cls(bytes(data), bundle_name(digest), digest, bundle["target"], bundle["functions"])
