"""compile_cpu against the TypeScript compileCpu: the same bundle bytes for
the same input, the same diagnostics, and refusals before the compiler runs."""
from __future__ import annotations

import ctypes
import os
import re
import shutil
import struct
import tempfile

import pytest
from ts_reference import run_ts, ts_value

from kernelfarm.bundle import bundle_digest, decode_bundle, host_cpu_target
from kernelfarm.elf_exports import ElfExports, elf_exports
from kernelfarm.compile_cpu import compile_cpu, function_table, params_check_source, parse_param
from kernelfarm.errors import FarmError

GOOD = """#include <stdint.h>
void saxpy(float* y, const float* x, float a, int32_t n) {
  for (int32_t i = 0; i < n; i++) y[i] += a * x[i];
}
void fill(int32_t* out, int32_t n, int32_t v) { for (int32_t i = 0; i < n; i++) out[i] = v; }
"""

# The error is on line 4: an undeclared identifier.
BROKEN = """#include <stdint.h>
void ok(float* a) { a[0] = 1.0f; }
void bad(float* a) {
  a[0] = not_declared_anywhere;
}
"""

MATMUL = """#include <stdint.h>
#ifndef SCALE
#define SCALE 1
#endif
void matmul(const float* a, const float* b, float* c) {
  for (int i = 0; i < 4; i++) for (int j = 0; j < 4; j++) {
    float s = 0;
    for (int k = 0; k < 4; k++) s += a[i * 4 + k] * b[k * 4 + j];
    c[i * 4 + j] = s * SCALE;
  }
}
double scale(double x, int64_t k) { return x * (double)k; }
"""

MANY = "".join(f"void f{i}(float* a) {{ a[{i}] = {i}.0f; }}\n" for i in range(17))

SAXPY_FILL = {"saxpy": ["float32* y", "float32* x", "float32 a", "int32 n"], "fill": ["int32* out", "int32 n", "int32 v"]}

# (name, source, functions, options as the Python call takes them)
CASES = [
    ("buffers and scalars, default compiler", GOOD, SAXPY_FILL, {}),
    (
        "fixed shapes as ParamSpec dicts, own key order kept",
        MATMUL,
        {
            "matmul": [
                {"name": "a", "kind": "buffer", "dtype": "float32", "shape": [4, 4]},
                {"dtype": "float32", "kind": "buffer", "name": "b", "shape": [4, 4]},
                {"name": "c", "kind": "buffer", "dtype": "float32", "shape": [4, 4]},
            ],
            "scale": ["float64 x", "int64 k"],
        },
        {},
    ),
    (
        "extra flags and a define, unnamed parameters",
        MATMUL,
        {"matmul": ["float32*", "float32*", "float32*"]},
        {"flags": ["-O3", "-DSCALE=2", "-Wall"]},
    ),
    ("an explicit compiler and file name", GOOD, {"fill": ["int32* out", "int32 n", "int32 v"]}, {"cc": "gcc", "file_name": "gemm_tile.c"}),
    ("seventeen functions", MANY, {f"f{i}": ["float32* a"] for i in range(17)}, {}),
]

CHECKED = """#include <stdint.h>
void fill(int32_t* out, int32_t n, int32_t v) { for (int32_t i = 0; i < n; i++) out[i] = v; }
static void helper(float* a) { a[0] = 0; }
void scale(float* a, float s) { helper(a); a[0] *= s; }
"""

# `functions` that the source does not bear out: (name, source, functions, options, what the message says).
MISMATCHES = [
    (
        "a function the object does not export",
        CHECKED,
        {"fill": ["int32* out", "int32 n", "int32 v"], "vfill": ["int32* out"], "helper": ["float32* a"]},
        {},
        r'^kernel\.c exports no function "vfill", "helper" of `functions`; the shared object exports: fill, scale\n',
    ),
    (
        "a C++ function without extern C",
        'extern "C" void ok(float* a) { a[0] = 1; }\nvoid scale(float* a, float s) { a[0] *= s; }\n',
        {"ok": ["float32* a"], "scale": ["float32* a", "float32 s"]},
        {"file_name": "kernel.cc"},
        r'"_Z5scalePff" is scale with a C\+\+ mangled name: declare it extern "C"',
    ),
    (
        "too few parameters",
        CHECKED,
        {"fill": ["int32* out", "int32 n"]},
        {},
        r"(?s)^kernel\.c: its functions do not take the parameters that `functions` declares .*"
        r"kfarm-functions\.c:\d+:\d+: error: too few arguments to function .fill.",
    ),
    (
        "a number where the function takes a pointer",
        CHECKED,
        {"fill": ["int32 n", "int32* out", "int32 v"]},
        {"flags": ["-Wall"]},
        r"error: passing argument 1 of .fill. makes pointer from integer without a cast",
    ),
]

PARAM_DECLS = [
    "float32* a",
    "float32 *a",
    "float32*a",
    "  uint8*  ",
    "int32 n",
    "float64",
    "int64 _len2",
    "float a",
    "float32** a",
    "vec4 a",
    "int32 1a",
    "int32 a b",
    "",
    "Float32* a",
    "float32* a[4]",
    "int32 n\n",
]


def ts_options(options: dict) -> dict:
    """compile_cpu's keyword arguments as CompileCpuOptions."""
    renamed = {"file_name": "fileName"}
    return {renamed.get(k, k): v for k, v in options.items()}


@pytest.fixture(scope="module")
def compiler():
    """The C compiler the compiles use, or a skip saying why there is none."""
    cc = os.environ.get("CC", "cc")
    if shutil.which(cc) is None or shutil.which("gcc") is None:
        pytest.skip(f"no C compiler ({cc!r} and gcc) on this host: compile_cpu cannot be tested")
    return cc


@pytest.fixture(scope="module")
def ts_compiled(compiler):
    """The TypeScript compiler's results for the cases and failures here, in one node run."""
    jobs = [{"op": "compileCpu", "source": src, "options": {"functions": fns, **ts_options(opts)}} for _, src, fns, opts in CASES]
    jobs += [
        {"op": "compileCpu", "source": BROKEN, "options": {"functions": {"ok": ["float32* a"], "bad": ["float32* a"]}}},
        {
            "op": "compileCpu",
            "source": "void f(void) { syntax error here }\n",
            "options": {"functions": {"f": []}, "fileName": "gemm_tile.c"},
        },
    ]
    jobs += [{"op": "compileCpu", "source": src, "options": {"functions": fns, **ts_options(opts)}} for _, src, fns, opts, _ in MISMATCHES]
    results = run_ts(jobs)
    n = len(CASES)
    return {"cases": results[:n], "broken": results[n], "file_name": results[n + 1], "mismatches": results[n + 2 :]}


@pytest.fixture(scope="module")
def ts_plain():
    """The TypeScript answers that need no compiler."""
    jobs = [
        {"op": "compileCpu", "source": GOOD, "options": {"functions": {"fill": ["int32* out"]}, "cc": "/nonexistent/cc"}},
        {"op": "compileCpu", "source": GOOD, "options": {"functions": {}}},
    ]
    jobs += [{"op": "parseParam", "decl": d, "index": 4, "fn": "gemm"} for d in PARAM_DECLS]
    results = run_ts(jobs)
    return {"no_cc": results[0], "no_functions": results[1], "params": results[2:]}


@pytest.mark.parametrize("index", range(len(CASES)), ids=[c[0] for c in CASES])
def test_the_bundle_is_byte_identical_to_the_typescript_compilers(ts_compiled, index):
    _, source, functions, options = CASES[index]
    expected = ts_value(ts_compiled["cases"][index])
    m = compile_cpu(source, functions, **options)
    assert m.bytes.hex() == expected["hex"]
    assert (m.name, m.digest, m.target, m.functions) == (expected["name"], expected["digest"], "cpu", expected["functions"])
    assert m.digest == bundle_digest(m.bytes) and m.name == m.digest[:16] + ".kfm"
    b = decode_bundle(m.bytes)
    assert b["targetDetails"] == host_cpu_target()
    assert b["binary"][:4] == b"\x7fELF"
    assert b["meta"]["flags"] == " ".join(["-O2", "-shared", "-fPIC", *options.get("flags", [])])


CROSS_CC = "aarch64-linux-gnu-gcc"


def test_a_cross_compiled_bundle_names_the_target_it_was_built_for(compiler):
    """Debian's gcc-aarch64-linux-gnu on any host: the bundle says aarch64, as the TypeScript compiler's does."""
    if shutil.which(CROSS_CC) is None:
        pytest.skip(f"no {CROSS_CC} (Debian: apt-get install gcc-aarch64-linux-gnu libc6-dev-arm64-cross)")
    [expected] = run_ts([{"op": "compileCpu", "source": GOOD, "options": {"functions": SAXPY_FILL, "cc": CROSS_CC}}])
    m = compile_cpu(GOOD, SAXPY_FILL, cc=CROSS_CC)
    assert m.bytes.hex() == ts_value(expected)["hex"]
    assert decode_bundle(m.bytes)["targetDetails"] == {"arch": "aarch64", "os": "linux"}


def test_the_shared_object_runs(compiler, tmp_path):
    b = decode_bundle(compile_cpu(GOOD, SAXPY_FILL).bytes)
    path = tmp_path / "module.so"
    path.write_bytes(b["binary"])
    lib = ctypes.CDLL(str(path))
    out = (ctypes.c_int32 * 5)()
    lib.fill(out, 5, 7)
    assert list(out) == [7] * 5


@pytest.fixture()
def private_tmp(tmp_path, monkeypatch):
    """A temp root of this test's own, so a leftover build directory shows."""
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    return tmp_path


def test_a_syntax_error_is_compile_error_with_the_typescript_message(ts_compiled, private_tmp):
    expected = ts_compiled["broken"]
    with pytest.raises(FarmError) as info:
        compile_cpu(BROKEN, {"ok": ["float32* a"], "bad": ["float32* a"]})
    err = info.value
    assert (err.code, err.message, err.details) == (expected["code"], expected["message"], expected["details"])
    assert err.code == "COMPILE_ERROR"
    assert "kernel.c:4:" in err.message and "not_declared_anywhere" in err.message
    assert "kfarm-cc-" not in err.message, "the message leaks the build directory"
    assert list(private_tmp.iterdir()) == [], "the build directory was left behind"


def test_the_file_name_reads_as_in_typescript(ts_compiled):
    with pytest.raises(FarmError) as info:
        compile_cpu("void f(void) { syntax error here }\n", {"f": []}, file_name="gemm_tile.c")
    expected = ts_compiled["file_name"]
    assert (info.value.code, info.value.message) == (expected["code"], expected["message"])
    assert "gemm_tile.c:1:" in info.value.message


def test_a_missing_compiler_and_no_functions_read_as_in_typescript(ts_plain):
    with pytest.raises(FarmError) as info:
        compile_cpu(GOOD, {"fill": ["int32* out"]}, cc="/nonexistent/cc")
    assert (info.value.code, info.value.message) == (ts_plain["no_cc"]["code"], ts_plain["no_cc"]["message"])
    assert info.value.code == "TOOLCHAIN_MISSING"
    assert "/nonexistent/cc" in info.value.message and "apt-get install gcc" in info.value.message
    with pytest.raises(FarmError) as info:
        compile_cpu(GOOD, {})
    assert (info.value.code, info.value.message) == (ts_plain["no_functions"]["code"], ts_plain["no_functions"]["message"])


@pytest.mark.parametrize("index", range(len(PARAM_DECLS)), ids=[repr(d) for d in PARAM_DECLS])
def test_parameter_declarations_read_as_parse_param_reads_them(ts_plain, index):
    expected = ts_plain["params"][index]
    if expected["ok"]:
        assert parse_param(PARAM_DECLS[index], 4, "gemm") == expected["value"]
    else:
        with pytest.raises(FarmError) as info:
            parse_param(PARAM_DECLS[index], 4, "gemm")
        assert (info.value.code, info.value.message) == (expected["code"], expected["message"])
        assert "function gemm, parameter 4" in info.value.message


NO_CC = "/nonexistent/cc"  # every refusal below happens before the compiler would run

REFUSALS = [
    (
        "functions as a list of records",
        dict(functions=[{"name": "fill", "params": ["int32* out"]}]),
        r"functions must be a dict of function name → parameter list, e\.g\. \{\"vadd\"",
    ),
    ("parameters as one string", dict(functions={"fill": "int32* out, int32 n"}), r"function fill: parameters must be a list such as"),
    ("a function name that is no C identifier", dict(functions={"my-fill": []}), r'function name "my-fill" is not a C identifier'),
    (
        "a ParamSpec with a bad kind",
        dict(functions={"fill": [{"name": "out", "kind": "pointer", "dtype": "int32"}]}),
        r'function fill, parameter 0: ParamSpec\.kind is "pointer", expected "buffer" or "scalar"',
    ),
    (
        "a ParamSpec shape on a scalar",
        dict(functions={"fill": [{"name": "n", "kind": "scalar", "dtype": "int32", "shape": [2]}]}),
        r"parameter 0: ParamSpec\.shape is only allowed on buffers",
    ),
    ("a parameter that is a number", dict(functions={"fill": [5]}), r'parameter 0: 5 is not "DTYPE\* name"'),
    (
        "flags as one string",
        dict(functions={"f": []}, flags="-O3 -Wall"),
        r'flags must be a list of strings such as \["-O3", "-DN=4"\], got "-O3 -Wall"',
    ),
    (
        "a file name with a directory",
        dict(functions={"f": []}, file_name="../kernel.c"),
        r'file_name "\.\./kernel\.c" is not a plain file name',
    ),
    ("a file name that reads as a flag", dict(functions={"f": []}, file_name="-o.c"), r'file_name "-o\.c" is not a plain file name'),
    ("an empty compiler", dict(functions={"f": []}, cc=""), r'cc must be a compiler\'s name or path, got ""'),
]


@pytest.mark.parametrize("case", REFUSALS, ids=[r[0] for r in REFUSALS])
def test_bad_options_are_invalid_argument_saying_what_is_expected(case):
    _, kwargs, message = case
    kwargs = {"cc": NO_CC, **kwargs}
    functions = kwargs.pop("functions")
    with pytest.raises(FarmError, match=message) as info:
        compile_cpu(GOOD, functions, **kwargs)
    assert info.value.code == "INVALID_ARGUMENT"


def test_a_source_that_is_not_text_is_refused():
    with pytest.raises(FarmError, match="source must be a string of C code, got bytes") as info:
        compile_cpu(GOOD.encode(), {"f": []}, cc=NO_CC)
    assert info.value.code == "INVALID_ARGUMENT"
    with pytest.raises(FarmError, match="source is not valid Unicode text") as info:
        compile_cpu("void f(void) {} // \udc80\n", {"f": []}, cc=NO_CC)
    assert info.value.code == "INVALID_ARGUMENT"


def test_function_table_keeps_the_dict_order():
    assert function_table({"f": ["int32 n"], "g": []}) == [
        {"name": "f", "params": [{"name": "n", "kind": "scalar", "dtype": "int32"}]},
        {"name": "g", "params": []},
    ]


@pytest.mark.parametrize("index", range(len(MISMATCHES)), ids=[m[0] for m in MISMATCHES])
def test_functions_the_source_does_not_bear_out_are_compile_error_as_in_typescript(ts_compiled, private_tmp, index):
    """A declared function the object lacks, or parameters its C function does not take, failed only on the board."""
    _, source, functions, options, message = MISMATCHES[index]
    with pytest.raises(FarmError) as info:
        compile_cpu(source, functions, **options)
    err = info.value
    expected = ts_compiled["mismatches"][index]
    assert (err.code, err.message, err.details) == (expected["code"], expected["message"], expected["details"])
    assert err.code == "COMPILE_ERROR"
    assert re.search(message, err.message), err.message
    assert "kfarm-cc-" not in err.message, "the message leaks the build directory"
    assert list(private_tmp.iterdir()) == [], "the build directory was left behind"


def test_the_parameter_check_takes_what_a_board_passes_alike(compiler):
    source = """#include <stdint.h>
void f(const float* a, void* b, long long* c, double x, int n) { (void)a; (void)b; (void)c; (void)x; (void)n; }
void g(void) {}
"""
    m = compile_cpu(source, {"f": ["float32* a", "uint8* b", "int64* c", "float32 x", "int64 n"], "g": []})
    assert [f["name"] for f in m.functions] == ["f", "g"]
    compile_cpu(source, {"g": []}, file_name="kfarm-functions.c")
    with pytest.raises(FarmError, match=r"\S+ built no shared object from kernel\.c: do the flags stop before linking") as info:
        compile_cpu(source, {"g": []}, flags=["-c"])
    assert info.value.code == "COMPILE_ERROR"


def test_the_check_file_is_the_typescript_ones():
    table = function_table({"f": ["float32* a", "uint8* b", "int64 n"], "g": []})
    [expected] = run_ts([{"op": "paramsCheckSource", "fileName": "gemm.c", "functions": table}])
    assert params_check_source("gemm.c", table) == ts_value(expected)


def _elf(wide: bool, little: bool, symbols: list, elf_type: int = 3, sections: bool = True) -> bytes:
    """A minimal ELF (host-sdk/elf-exports.spec.ts builds the same): a header and three sections (none, .dynsym, .dynstr)."""
    o = "<" if little else ">"
    ehsize, symsize, shsize = (64, 24, 64) if wide else (52, 16, 40)
    strtab, names = b"\0", []
    for s in symbols:
        names.append(len(strtab))
        strtab += s[0].encode() + b"\0"
    str_off = ehsize
    sym_off = str_off + len(strtab)
    sym_bytes = (len(symbols) + 1) * symsize
    sh_off = sym_off + sym_bytes
    out = bytearray(sh_off + 3 * shsize)
    word = "Q" if wide else "I"
    out[:7] = bytes([0x7F, 0x45, 0x4C, 0x46, 2 if wide else 1, 1 if little else 2, 1])
    struct.pack_into(o + "HHI", out, 16, elf_type, 62 if wide else 3, 1)
    if sections:
        struct.pack_into(o + word, out, 0x28 if wide else 0x20, sh_off)
        struct.pack_into(o + "H", out, 0x3A if wide else 0x2E, shsize)
        struct.pack_into(o + "H", out, 0x3C if wide else 0x30, 3)
    out[str_off : str_off + len(strtab)] = strtab
    for i, (_, bind, kind, visibility, defined) in enumerate(symbols):
        at = sym_off + (i + 1) * symsize
        struct.pack_into(o + "I", out, at, names[i])
        out[at + (4 if wide else 12)] = (bind << 4) | kind
        out[at + (5 if wide else 13)] = visibility
        struct.pack_into(o + "H", out, at + (6 if wide else 14), 9 if defined else 0)
    for i, kind, offset, size, link, entsize in [(1, 11, sym_off, sym_bytes, 2, symsize), (2, 3, str_off, len(strtab), 0, 0)]:
        at = sh_off + i * shsize
        struct.pack_into(o + "I", out, at + 4, kind)
        struct.pack_into(o + word, out, at + (0x18 if wide else 0x10), offset)
        struct.pack_into(o + word, out, at + (0x20 if wide else 0x14), size)
        struct.pack_into(o + "I", out, at + (0x28 if wide else 0x18), link)
        struct.pack_into(o + word, out, at + (0x38 if wide else 0x24), entsize)
    return bytes(out)


# (name, bind, type, visibility, defined), as in host-sdk/elf-exports.spec.ts.
ELF_SYMBOLS = [
    ("vadd", 1, 2, 0, True),
    ("resolved", 1, 10, 0, True),
    ("weak", 2, 2, 0, True),
    ("protected", 1, 2, 3, True),
    ("label", 1, 0, 0, True),
    ("imported", 1, 2, 0, False),
    ("local", 0, 2, 0, True),
    ("hidden", 1, 2, 2, True),
    ("table", 1, 1, 0, True),
]


@pytest.mark.parametrize("wide, little", [(True, True), (True, False), (False, True), (False, False)])
def test_elf_exports_reads_either_class_and_byte_order(wide, little):
    assert elf_exports(_elf(wide, little, ELF_SYMBOLS)) == ElfExports(True, ["vadd", "resolved", "weak", "protected"], ["label"])


def test_elf_exports_says_what_it_cannot_read():
    assert elf_exports(_elf(True, True, [], elf_type=1)) == ElfExports(False, [], [])
    assert elf_exports(_elf(True, True, ELF_SYMBOLS, sections=False)) is None
    assert elf_exports(bytes([0xCF, 0xFA, 0xED, 0xFE, 7, 0, 0, 1])) is None
    assert elf_exports(_elf(True, True, ELF_SYMBOLS)[:300]) is None
