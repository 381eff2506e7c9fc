"""The CPU compiler (host-sdk/compile-cpu.ts): the local C compiler
(`cc -O2 -shared -fPIC`) turns C source into a shared object, packed into a
module bundle with a function table declaring each function's parameters.

It runs the compiler as the TypeScript one does (same arguments, same
working directory layout, same meta and target details), so the same source
and declarations give the same bundle bytes and upload name from either SDK;
python/tests/test_compile_cpu.py checks that against the TypeScript compiler.
Flags that put the build directory into the binary (`-g`) make every build
differ, from either SDK.
"""
from __future__ import annotations

import os
import re
import subprocess
import tempfile
from collections.abc import Mapping, Sequence
from typing import Any, Optional, Union

from ._compile_js import js_json
from .bundle import (
    BUNDLE_FORMAT,
    BUNDLE_VERSION,
    DTYPES,
    CompiledModule,
    bundle_digest,
    bundle_name,
    binary_cpu_target,
    encode_bundle,
    host_cpu_target,
    param_problem,
)
from .elf_exports import elf_exports
from .errors import FarmError

#: A parameter: "float32*" / "float32* a" (a buffer), "int32 n" (a scalar), or a
#: ParamSpec dict {"name", "kind": "buffer" | "scalar", "dtype", "shape"?}.
ParamDecl = Union[str, Mapping[str, Any]]

DEFAULT_CPU_FILE_NAME = "kernel.c"
#: What every CPU build is compiled with, before the caller's flags.
CPU_BASE_FLAGS = ("-O2", "-shared", "-fPIC")

_PARAM = re.compile(r"\s*([a-z0-9]+)\s*(\*?)\s*([A-Za-z_][A-Za-z0-9_]*)?\s*")
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# A file name the compiler gets as its input argument: no directory, and no
# leading "-" (it would read as a flag) or "." (a hidden or parent entry).
_PLAIN_FILE_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.+-]*")
_FUNCTIONS_EXAMPLE = '{"vadd": ["float32* a", "float32* b", "float32* c", "int32 n"]}'


def invalid(where: str, message: str, **details: Any) -> FarmError:
    """INVALID_ARGUMENT from compiler `where` ("compile_cpu", "compile_cuda")."""
    return FarmError("INVALID_ARGUMENT", f"{where}: {message}", details)


def parse_param(decl: ParamDecl, index: int, fn: str) -> dict[str, Any]:
    """One parameter declaration as a ParamSpec (parseParam): a string is
    parsed, a ParamSpec dict is checked and kept as given (its key order is
    part of the bundle's bytes). INVALID_ARGUMENT naming the function, the
    position and the text when it is neither."""
    if isinstance(decl, Mapping):
        problem = param_problem(decl)
        if problem:
            raise FarmError(
                "INVALID_ARGUMENT",
                f"function {fn}, parameter {index}: ParamSpec{problem[0]} {problem[1]}",
                {"function": fn, "parameter": index},
            )
        return dict(decl)
    m = _PARAM.fullmatch(decl) if isinstance(decl, str) else None
    if not m or m.group(1) not in DTYPES:
        raise FarmError(
            "INVALID_ARGUMENT",
            f'function {fn}, parameter {index}: {js_json(decl)} is not "DTYPE* name" or "DTYPE name" (dtypes: int8 … float64)',
            {"function": fn, "parameter": index},
        )
    return {"name": m.group(3) or f"arg{index}", "kind": "buffer" if m.group(2) else "scalar", "dtype": m.group(1)}


def function_table(functions: Mapping[str, Sequence[ParamDecl]], where: str = "compile_cpu") -> list[dict[str, Any]]:
    """The bundle's function table from `{name: [param, …]}` (functionTable),
    in the dict's order. The shape is checked first, so a list of
    `{name, params}` or a bare string of parameters is refused saying what is
    expected, not failing somewhere inside."""
    if not isinstance(functions, Mapping):
        raise invalid(
            where,
            f"functions must be a dict of function name → parameter list, e.g. {_FUNCTIONS_EXAMPLE}; got {type(functions).__name__}",
            field="functions",
        )
    table = []
    for name, params in functions.items():
        if not isinstance(name, str) or not _IDENTIFIER.fullmatch(name):
            raise invalid(where, f"function name {js_json(name)} is not a C identifier", function=name, field="name")
        if isinstance(params, (str, bytes)) or not isinstance(params, Sequence):
            raise invalid(
                where,
                f'function {name}: parameters must be a list such as ["float32* a", "int32 n"], got {js_json(params)}',
                function=name,
                field="params",
            )
        table.append({"name": name, "params": [parse_param(p, i, name) for i, p in enumerate(params)]})
    if not table:
        raise FarmError("INVALID_ARGUMENT", "compile: declare at least one function in `functions`")
    return table


def check_flags(flags: Optional[Sequence[str]], where: str) -> list[str]:
    """Extra compiler flags as a list of strings (None: none)."""
    if flags is None:
        return []
    if isinstance(flags, str) or not isinstance(flags, Sequence) or not all(isinstance(f, str) for f in flags):
        raise invalid(where, f'flags must be a list of strings such as ["-O3", "-DN=4"], got {js_json(flags)}', field="flags")
    return list(flags)


def compile_cpu(
    source: str,
    functions: Mapping[str, Sequence[ParamDecl]],
    *,
    flags: Optional[Sequence[str]] = None,
    cc: Optional[str] = None,
    file_name: str = DEFAULT_CPU_FILE_NAME,
) -> CompiledModule:
    """Compiles C `source` into a module bundle (target "cpu").

    functions: exported functions and their parameters, e.g.
      {"vadd": ["float32* a", "float32* b", "float32* c", "int32 n"]}.
    flags: extra compiler flags (after -O2 -shared -fPIC).
    cc: the compiler; default $CC or `cc`.
    file_name: the source's name, shown in diagnostics.

    Errors: INVALID_ARGUMENT (options, checked before the compiler runs),
    COMPILE_ERROR (the compiler's diagnostics; a function of `functions` the
    shared object does not export; parameters its C function does not take,
    as the compiler checks a call of each as a board makes it).
    """
    table = function_table(functions)
    extra = check_flags(flags, "compile_cpu")
    if not isinstance(source, str):
        raise invalid("compile_cpu", f"source must be a string of C code, got {type(source).__name__}", field="source")
    compiler = cc if cc is not None else os.environ.get("CC", "cc")
    if not isinstance(compiler, str) or not compiler:
        raise invalid("compile_cpu", f"cc must be a compiler's name or path, got {js_json(compiler)}", field="cc")
    if not isinstance(file_name, str) or not _PLAIN_FILE_NAME.fullmatch(file_name):
        raise invalid("compile_cpu", f'file_name {js_json(file_name)} is not a plain file name such as "kernel.c"', field="fileName")
    all_flags = [*CPU_BASE_FLAGS, *extra]
    with tempfile.TemporaryDirectory(prefix="kfarm-cc-") as tmp:
        out = os.path.join(tmp, "module.so")
        with open(os.path.join(tmp, file_name), "wb") as f:
            f.write(source_bytes(source, "compile_cpu"))
        # The parameter check runs beside the build (a second compiler process), and ends before the directory goes.
        checking = _start_params_check(tmp, table, compiler, extra, file_name)
        try:
            binary = _build(tmp, compiler, all_flags, out, file_name)
            _check_exports(binary, table, compiler, file_name)
            mismatch = _params_mismatch(checking, tmp, compiler, file_name)
            if mismatch:
                raise mismatch
        finally:
            if checking and checking.poll() is None:
                checking.kill()
                checking.communicate()
    data = encode_bundle(
        {
            "format": BUNDLE_FORMAT,
            "version": BUNDLE_VERSION,
            "target": "cpu",
            # What the compiler built for (a cross compiler's target), read from the binary; the host's where it cannot be read.
            "targetDetails": binary_cpu_target(binary) or host_cpu_target(),
            "binary": binary,
            "functions": table,
            "meta": {"compiler": compiler, "flags": " ".join(all_flags)},
        }
    )
    digest = bundle_digest(data)
    return CompiledModule(data, bundle_name(digest), digest, "cpu", table)


#: Names a message lists before it says how many more there are.
_LISTED = 20

#: The C type of each dtype's scalars, in DTYPES' order (protos/dtype.ts).
_C_TYPES = {
    "int8": "int8_t",
    "uint8": "uint8_t",
    "int16": "int16_t",
    "uint16": "uint16_t",
    "int32": "int32_t",
    "uint32": "uint32_t",
    "int64": "int64_t",
    "uint64": "uint64_t",
    "float32": "float",
    "float64": "double",
}


def _listed(names: Sequence[str]) -> str:
    if not names:
        return "none"
    more = len(names) - _LISTED
    return ", ".join(names[:_LISTED]) + (f", … ({more} more)" if more > 0 else "")


def _check_exports(binary: bytes, table: Sequence[Mapping[str, Any]], compiler: str, file_name: str) -> None:
    """COMPILE_ERROR when a function of `functions` is not among those the shared
    object exports (checkExports): the board would find no such function at
    load. Nothing is checked where the binary is not ELF."""
    exports = elf_exports(binary)
    if exports is None:
        return
    if not exports.shared:
        raise FarmError(
            "COMPILE_ERROR", f"{compiler} built no shared object from {file_name}: do the flags stop before linking (-c, -E, -S)?"
        )
    found = {*exports.functions, *exports.untyped}
    missing = [f["name"] for f in table if f["name"] not in found]
    if not missing:
        return
    names = ", ".join(f'"{n}"' for n in missing)
    lines = [f"{file_name} exports no function {names} of `functions`; the shared object exports: {_listed(exports.functions)}"]
    for name in missing:
        mangled = next((e for e in exports.functions if e.startswith("_Z") and f"{len(name)}{name}" in e), None)
        if mangled:
            lines.append(f'"{mangled}" is {name} with a C++ mangled name: declare it extern "C" so that its name stays "{name}"')
    lines.append(
        "define each function of `functions` in the source under that name, with external linkage "
        "(not static, not hidden by -fvisibility=hidden), or take it out of `functions`"
    )
    raise FarmError("COMPILE_ERROR", "\n".join(lines), {"missing": missing, "exports": exports.functions})


def _params_check_name(file_name: str) -> str:
    """The name of the file that checks the parameters; another where the source has that name."""
    ext = os.path.splitext(file_name)[1] or ".c"
    return f"kfarm-functions-check{ext}" if f"kfarm-functions{ext}" == file_name else f"kfarm-functions{ext}"


def params_check_source(file_name: str, table: Sequence[Mapping[str, Any]]) -> str:
    """A translation unit that calls each function of `functions` as a board
    calls it, after the source itself, so that the compiler holds each call to
    the function's prototype (paramsCheckSource, which writes the same bytes):
    a different number of parameters, or a pointer where the C function takes
    a number (or the reverse), is its error. Pointee types are not checked,
    nor which number type a scalar is."""
    scalars = ", ".join(f"{c} kfarm_{dtype}" for dtype, c in _C_TYPES.items())
    calls = []
    for f in table:
        args = ", ".join("kfarm_buffer_arg" if p["kind"] == "buffer" else f"kfarm_{p['dtype']}" for p in f["params"])
        decls = ", ".join(f"{p['dtype']}{'*' if p['kind'] == 'buffer' else ''}" for p in f["params"])
        calls.append(f"  {f['name']}({args}); /* functions.{f['name']}: {decls or 'no parameters'} */")
    return "\n".join(
        [
            "/* kernelfarm: each function of `functions`, called as a board calls it (a pointer per buffer, a value per scalar). */",
            f'#include "{file_name}"',
            "#include <stdint.h>",
            "#ifdef __cplusplus",
            "struct kfarm_buffer { template <class T> operator T *() const { return 0; } };",
            "#else",
            "typedef void *kfarm_buffer;",
            '#pragma GCC diagnostic error "-Wint-conversion"',
            "#endif",
            f"__attribute__((unused)) static void kfarm_functions(kfarm_buffer kfarm_buffer_arg, {scalars}) {{",
            *calls,
            "}",
            "",
        ]
    )


def _start_params_check(
    tmp: str, table: Sequence[Mapping[str, Any]], compiler: str, extra: Sequence[str], file_name: str
) -> Optional["subprocess.Popen[bytes]"]:
    """Starts the compiler on params_check_source; None where it cannot start (the build then says why)."""
    check = _params_check_name(file_name)
    with open(os.path.join(tmp, check), "wb") as f:
        f.write(params_check_source(file_name, table).encode("utf-8"))
    try:
        return subprocess.Popen(
            [compiler, *CPU_BASE_FLAGS, *extra, "-fsyntax-only", check], cwd=tmp, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
        )
    except OSError:
        return None


def _params_mismatch(checking: Optional["subprocess.Popen[bytes]"], tmp: str, compiler: str, file_name: str) -> Optional[FarmError]:
    """COMPILE_ERROR when `functions` declares parameters that its C functions do not take, where the compiler can tell."""
    if checking is None:
        return None
    _, stderr = checking.communicate()
    if checking.returncode == 0:
        return None
    diagnostics = stderr.decode("utf-8", "replace").replace(tmp + "/", "").strip()
    return FarmError(
        "COMPILE_ERROR",
        f"{file_name}: its functions do not take the parameters that `functions` declares "
        f"({compiler} checked {_params_check_name(file_name)}, which calls each function of `functions` as a board calls it):\n"
        f"{diagnostics}\n"
        "list each function's parameters in `functions` in the order its C definition takes them: "
        '"DTYPE* name" for a pointer, "DTYPE name" for a number',
        {"diagnostics": diagnostics},
    )


def _build(tmp: str, compiler: str, all_flags: Sequence[str], out: str, file_name: str) -> bytes:
    """Runs the compiler in `tmp`; the shared object's bytes, or TOOLCHAIN_MISSING / COMPILE_ERROR."""
    try:
        result = subprocess.run([compiler, *all_flags, "-o", out, file_name], cwd=tmp, capture_output=True)
    except FileNotFoundError:
        raise FarmError(
            "TOOLCHAIN_MISSING", f'no C compiler "{compiler}" on this host: install one (Debian: apt-get install gcc) or set CC'
        ) from None
    except OSError as err:
        raise FarmError("COMPILE_ERROR", f"{compiler} failed to compile {file_name}:\n{err}", {"diagnostics": str(err)}) from err
    if result.returncode != 0:
        # Paths in the compiler's text are made relative to the build directory: the user sees kernel.c:4:5.
        diagnostics = result.stderr.decode("utf-8", "replace").replace(tmp + "/", "").strip()
        raise FarmError("COMPILE_ERROR", f"{compiler} failed to compile {file_name}:\n{diagnostics}", {"diagnostics": diagnostics})
    try:
        with open(out, "rb") as f:
            return f.read()
    except FileNotFoundError:
        raise FarmError(
            "COMPILE_ERROR", f"{compiler} wrote no shared object for {file_name}: do the flags stop before linking (-c, -E, -S)?"
        ) from None


def source_bytes(source: str, where: str) -> bytes:
    """The source as the TypeScript compilers write it (UTF-8)."""
    try:
        return source.encode("utf-8")
    except UnicodeEncodeError as err:
        raise invalid(where, f"source is not valid Unicode text ({err.reason} at character {err.start})", field="source") from None
