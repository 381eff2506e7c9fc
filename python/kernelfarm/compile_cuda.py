"""The CUDA compiler (host-sdk/cuda/compile-cuda.ts): nvcc turns CUDA C++
source into a fatbin (SASS for one architecture plus its PTX) or a cubin,
packed into a module bundle with the kernels' parameters, optional fixed
launch configurations and what ptxas reported about their resources.

Same nvcc command line, same function table, same meta (compiler version,
flags, source hash, the ptxas report as JSON) as the TypeScript compiler, so
the same input gives the same bundle bytes and upload name from either SDK
(python/tests/test_compile_cuda.py checks it), and both share the on-disk
compile cache. Flags that put the build directory into the binary
(`-lineinfo`, `-G`) make every build differ, from either SDK.
"""
from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import tempfile
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Literal, Optional, Union

from ._compile_js import MISSING, is_number, js_json
from .bundle import (
    BUNDLE_FORMAT,
    BUNDLE_VERSION,
    CompiledModule,
    bundle_digest,
    bundle_name,
    decode_bundle,
    encode_bundle,
    to_launch_config,
)
from .compile_cpu import ParamDecl, check_flags, function_table, invalid, source_bytes
from .cuda_cache import cache_key, default_cache_dir, read_cache_entry, write_cache_entry
from .cuda_nvcc import clean_diagnostics, locate_nvcc, nvcc_version, parallelism, run_nvcc
from .cuda_ptxas import KernelResources, parse_ptxas_info
from .errors import FarmError

#: A kernel's parameters, alone or with a launch configuration fixed at compile time:
#: ["float32* x", "int32 n"] or {"params": [...], "launch": {"grid": 4096, "block": 256, "shared_mem_bytes": 0}}.
CudaFunctionDecl = Union[Sequence[ParamDecl], Mapping[str, Any]]

DEFAULT_CUDA_ARCH = "sm_90"
DEFAULT_CUDA_FILE_NAME = "kernel.cu"
_ARCH = re.compile(r"sm_[0-9]+[a-z]?")
_FILE_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.+-]*\.cu")
_WHERE = "compile_cuda"
_DECL_KEYS = ("params", "launch")
# The launch's dynamic shared memory: Python's spelling, or the bundle's own (a table read back from a bundle).
_SHARED_MEM_KEYS = ("shared_mem_bytes", "sharedMemBytes")

_log = logging.getLogger("kernelfarm.cuda")


@dataclass(frozen=True)
class CudaCompiledModule(CompiledModule):
    """A CUDA bundle and what nvcc said about it."""

    arch: str
    #: Per kernel, what ptxas reported: registers, spills, static shared memory, stack frame, constant memory.
    resources: dict[str, KernelResources]
    #: True when the bundle came from the compile cache (no nvcc run).
    cached: bool


@dataclass(frozen=True)
class _Options:
    arch: str
    functions: list[dict[str, Any]]
    flags: list[str]
    ptx: bool
    nvcc: Optional[str]
    file_name: str
    #: A directory, or False: no cache.
    cache: Union[str, Literal[False]]


def _resolve(functions: Any, arch: Any, flags: Any, ptx: Any, nvcc: Any, file_name: Any, cache: Any) -> _Options:
    if not isinstance(arch, str) or not _ARCH.fullmatch(arch):
        raise invalid(_WHERE, f'arch {js_json(arch)} is not a GPU architecture such as "sm_90" (or "sm_90a", "sm_80")', field="arch")
    if not isinstance(file_name, str) or not _FILE_NAME.fullmatch(file_name):
        raise invalid(
            _WHERE, f'file_name {js_json(file_name)} is not a plain file name ending in .cu, such as "kernel.cu"', field="fileName"
        )
    checked_flags = check_flags(flags, _WHERE)
    if not isinstance(ptx, bool):
        raise invalid(_WHERE, f"ptx must be True (a fatbin with PTX) or False (a cubin), got {js_json(ptx)}", field="ptx")
    if nvcc is not None and not isinstance(nvcc, str):
        raise invalid(_WHERE, f"nvcc must be a path, got {js_json(nvcc)}", field="nvcc")
    if cache is None:
        cache = default_cache_dir()
    elif isinstance(cache, os.PathLike):
        cache = os.fspath(cache)
    elif cache is not False and not (isinstance(cache, str) and cache):
        raise invalid(_WHERE, f"cache must be a directory or False (no cache), got {js_json(cache)}", field="cache")
    return _Options(arch, cuda_function_table(functions), checked_flags, ptx, nvcc, file_name, cache)


def cuda_function_table(functions: Mapping[str, CudaFunctionDecl]) -> list[dict[str, Any]]:
    """The bundle's function table: parameters parsed as compile_cpu does,
    launches normalised to [x, y, z] and checked (cudaFunctionTable)."""
    if not isinstance(functions, Mapping):
        raise invalid(
            _WHERE,
            "functions must be a dict of kernel name → parameters, e.g. "
            '{"saxpy": {"params": ["float32 a", "float32* x", "float32* y", "int32 n"], '
            f'"launch": {{"grid": 4096, "block": 256}}}}, or {{"saxpy": ["float32 a", …]}}; got {type(functions).__name__}',
            field="functions",
        )
    params: dict[str, Any] = {}
    launches: dict[str, dict[str, Any]] = {}
    for name, decl in functions.items():
        if not isinstance(name, str) or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
            raise invalid(_WHERE, f"kernel name {js_json(name)} is not a C identifier", function=name, field="name")
        if isinstance(decl, (list, tuple)):
            params[name] = decl
            continue
        if not isinstance(decl, Mapping) or not isinstance(decl.get("params"), (list, tuple)):
            raise invalid(
                _WHERE,
                f'function {name}: expected a list of parameters or {{"params": [...], "launch": {{...}}}}',
                function=name,
                field="params",
            )
        unknown = [k for k in decl if k not in _DECL_KEYS]
        if unknown:
            raise invalid(
                _WHERE,
                f'function {name}: unknown key {js_json(unknown[0])}; a kernel is {{"params": [...], "launch": {{...}}}}',
                function=name,
                field=str(unknown[0]),
            )
        params[name] = decl["params"]
        if decl.get("launch") is not None:
            launches[name] = _launch_config(name, decl["launch"])
    return [{**f, "launch": launches[f["name"]]} if f["name"] in launches else f for f in function_table(params, _WHERE)]


def _launch_config(name: str, launch: Any) -> dict[str, Any]:
    where = f"{_WHERE}: function {name}"

    def refuse(message: str, field: str) -> FarmError:
        return FarmError("INVALID_ARGUMENT", f"{where}: {message}", {"function": name, "field": field})

    if not isinstance(launch, Mapping):
        raise refuse('launch is not a record {"grid": ..., "block": ..., "shared_mem_bytes": ...}', "launch")
    unknown = [k for k in launch if k not in ("grid", "block", *_SHARED_MEM_KEYS)]
    if unknown:
        raise refuse(f'launch has an unknown key {js_json(unknown[0])}; expected "grid", "block" and "shared_mem_bytes"', "launch")
    if all(k in launch for k in _SHARED_MEM_KEYS):
        raise refuse('launch gives both "shared_mem_bytes" and "sharedMemBytes": give one', "launch.sharedMemBytes")
    for dim in ("grid", "block"):
        v = launch.get(dim, MISSING)
        if not is_number(v) and not (isinstance(v, (list, tuple)) and 1 <= len(v) <= 3):
            raise refuse(f"launch {dim} is {js_json(v)}, expected a number or [x], [x, y], [x, y, z]", f"launch.{dim}")
    smem = next((launch[k] for k in _SHARED_MEM_KEYS if k in launch), None)
    return to_launch_config({"grid": launch["grid"], "block": launch["block"], "sharedMemBytes": smem}, where)


def _nvcc_args(o: _Options) -> tuple[list[str], str, str, str]:
    """The nvcc command line (without the program), its output file, the binary's format and its PTX."""
    sm = o.arch.removeprefix("sm_")
    if o.ptx:
        output = "module.fatbin"
        args = [
            "-fatbin",
            "-O3",
            "-gencode",
            f"arch=compute_{sm},code=[sm_{sm},compute_{sm}]",
            "-Xptxas",
            "-v",
            *o.flags,
            "-o",
            output,
            o.file_name,
        ]
        return args, output, "fatbin", f"compute_{sm}"
    output = "module.cubin"
    return ["-cubin", "-O3", f"-arch=sm_{sm}", "-Xptxas", "-v", *o.flags, "-o", output, o.file_name], output, "cubin", "none"


def compile_cuda(
    source: str,
    functions: Mapping[str, CudaFunctionDecl],
    *,
    arch: str = DEFAULT_CUDA_ARCH,
    flags: Optional[Sequence[str]] = None,
    ptx: bool = True,
    nvcc: Optional[str] = None,
    file_name: str = DEFAULT_CUDA_FILE_NAME,
    cache: Union[str, "os.PathLike[str]", bool, None] = None,
) -> CudaCompiledModule:
    """Compiles CUDA C++ `source` with nvcc into a module bundle (target "cuda").

    functions: kernels and their parameters, e.g. {"saxpy": {"params":
      ["float32 a", "float32* x", "float32* y", "int32 n"], "launch": {"grid":
      4096, "block": 256}}}. A kernel without "launch" takes its launch
      configuration at call time. Kernels must be `extern "C" __global__`.
    arch: GPU architecture, "sm_90" (a suffix such as "sm_90a" is kept).
    flags: extra nvcc flags (after the defaults), e.g. ["-DTILE=16"].
    ptx: also embed PTX (compute_XX) for forward compatibility: the binary
      is then a fatbin. False: a plain cubin for `arch` only.
    nvcc: the nvcc to run; default $KFARM_NVCC, else $CUDA_HOME/bin/nvcc if
      it is there, else `nvcc` on PATH.
    file_name: the source's name, shown in diagnostics.
    cache: compile cache directory, False for none; default $KFARM_CACHE_DIR,
      else $XDG_CACHE_HOME/kernelfarm/cuda, else ~/.cache/kernelfarm/cuda
      (shared with the TypeScript SDK).

    Errors: INVALID_ARGUMENT (options, before nvcc runs), TOOLCHAIN_MISSING
    (no nvcc), COMPILE_ERROR (nvcc's diagnostics, or a declared kernel that is
    not an entry function of the module).
    """
    if not isinstance(source, str):
        raise invalid(_WHERE, "source must be a string", field="source")
    o = _resolve(functions, arch, flags, ptx, nvcc, file_name, cache)
    encoded_source = source_bytes(source, _WHERE)
    where = locate_nvcc(o.nvcc)
    version = nvcc_version(where)
    key = cache_key(
        {
            "nvcc": version.text,
            "arch": o.arch,
            "ptx": o.ptx,
            "flags": o.flags,
            "fileName": o.file_name,
            "functions": o.functions,
            "source": source,
        }
    )
    if o.cache is not False:
        hit = _from_cache(read_cache_entry(o.cache, key), o)
        if hit:
            return hit

    args, output, fmt, ptx_arch = _nvcc_args(o)
    with tempfile.TemporaryDirectory(prefix="kfarm-nvcc-") as tmp:
        with open(os.path.join(tmp, o.file_name), "wb") as f:
            f.write(encoded_source)
        result = run_nvcc(where, args, tmp)
        if not result.ok:
            diagnostics = clean_diagnostics(result.stderr, [tmp, os.path.realpath(tmp)]) or result.reason
            raise FarmError("COMPILE_ERROR", f"nvcc failed to compile {o.file_name}:\n{diagnostics}", {"diagnostics": diagnostics})
        with open(os.path.join(tmp, output), "rb") as f:
            binary = f.read()

    resources = _kernel_resources(result.stderr, o)
    data = encode_bundle(
        {
            "format": BUNDLE_FORMAT,
            "version": BUNDLE_VERSION,
            "target": "cuda",
            "targetDetails": {"arch": o.arch, "format": fmt, "ptx": ptx_arch},
            "binary": binary,
            "functions": o.functions,
            "meta": {
                "compiler": f"nvcc {version.version}",
                "flags": " ".join(args[:-3]),
                "source_sha256": hashlib.sha256(encoded_source).hexdigest(),
                "ptxas": json.dumps({name: r.to_json() for name, r in resources.items()}, separators=(",", ":"), ensure_ascii=False),
            },
        }
    )
    if o.cache is not False:
        try:
            write_cache_entry(o.cache, key, data)
        except OSError as err:
            _log.warning("could not write the compile cache in %s (%s); continuing without it", o.cache, err)
    return _module(data, o.functions, o.arch, resources, cached=False)


def compile_cuda_many(jobs: Sequence[Mapping[str, Any]]) -> list[CudaCompiledModule]:
    """Compiles every job ({"source", "functions", and compile_cuda's other
    options}) in threads, results in the jobs' order; nvcc runs at most one
    per CPU at a time (as any concurrent compile_cuda calls do). The first
    failure is raised once all have finished."""
    with ThreadPoolExecutor(max_workers=min(len(jobs), parallelism()) or 1) as pool:
        futures = [pool.submit(compile_cuda, **job) for job in jobs]
        return [f.result() for f in futures]


def _module(
    data: bytes, functions: list[dict[str, Any]], arch: str, resources: dict[str, KernelResources], cached: bool
) -> CudaCompiledModule:
    digest = bundle_digest(data)
    return CudaCompiledModule(data, bundle_name(digest), digest, "cuda", functions, arch=arch, resources=resources, cached=cached)


def _kernel_resources(stderr: str, o: _Options) -> dict[str, KernelResources]:
    """The declared kernels' resources on the arch; COMPILE_ERROR when one is not an entry function of the module."""
    report = parse_ptxas_info(stderr)
    entries = report.get(o.arch, {})
    found = list(entries)
    missing = [f["name"] for f in o.functions if f["name"] not in entries]
    if missing:
        listed = ", ".join(f'"{n}"' for n in missing)
        lines = [f"{o.file_name} has no kernel {listed} for {o.arch}; entry functions compiled: {', '.join(found) if found else 'none'}"]
        other_archs = [a for a in report if a != o.arch]
        if o.arch not in report and other_archs:
            lines.append(f"(ptxas compiled for {', '.join(other_archs)} only: do the flags override the architecture?)")
        for name in missing:
            mangled = next((e for e in found if e.startswith("_Z") and f"{len(name)}{name}" in e), None)
            lines.append(
                f'"{mangled}" is {name} with a C++ mangled name: declare the kernel extern "C" __global__ so that its name stays "{name}"'
                if mangled
                else f'declare each kernel as extern "C" __global__ and list it in `functions` under its name in the source '
                f'("{name}" is not one)'
            )
        raise FarmError("COMPILE_ERROR", "\n".join(lines), {"missing": missing, "entries": found})
    return {f["name"]: entries[f["name"]] for f in o.functions}


def _from_cache(data: Optional[bytes], o: _Options) -> Optional[CudaCompiledModule]:
    """The module of a cache entry, or None when there is none or it is
    unusable (it is then rebuilt and overwritten, so any failure to read it
    is a miss)."""
    if data is None:
        return None
    try:
        bundle = decode_bundle(data)
        if bundle["target"] != "cuda" or bundle["targetDetails"].get("arch") != o.arch:
            return None
        report = json.loads(bundle.get("meta", {}).get("ptxas", ""))
        read = {name: KernelResources.from_json(r) for name, r in report.items()}
    except (FarmError, ValueError, AttributeError, TypeError):
        return None
    # An entry whose report lacks a kernel it compiled, or holds a malformed one, is a miss.
    resources = {name: r for name, r in read.items() if r is not None}
    if len(resources) != len(read) or not all(f["name"] in resources for f in o.functions):
        return None
    return _module(data, bundle["functions"], o.arch, resources, cached=True)
