"""compile_cuda against the TypeScript compileCuda: the same bundle bytes,
resources and messages for the same input, one compile cache for both, and
refusals before nvcc runs. Tests that run nvcc skip when it is not here."""
from __future__ import annotations

import copy
import hashlib
import os
import re
import tempfile

import pytest
from ts_reference import run_ts, ts_value

from kernelfarm.bundle import decode_bundle
from kernelfarm.compile_cuda import compile_cuda, compile_cuda_many
from kernelfarm.cuda_cache import cache_key
from kernelfarm.cuda_nvcc import clean_diagnostics, locate_nvcc, nvcc_limiter, nvcc_version, parallelism
from kernelfarm.cuda_ptxas import parse_ptxas_info
from kernelfarm.errors import FarmError

SAXPY = """extern "C" __global__ void saxpy(float a, const float* x, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}
extern "C" __global__ void reverse(const float* x, float* y) {
  __shared__ float tile[1024];
  tile[threadIdx.x] = x[threadIdx.x];
  __syncthreads();
  y[threadIdx.x] = tile[1023 - threadIdx.x];
}
"""
SAXPY_PARAMS = ["float32 a", "float32* x", "float32* y", "int32 n"]
FUNCTIONS = {"saxpy": {"params": SAXPY_PARAMS, "launch": {"grid": 4096, "block": 256}}, "reverse": ["float32* x", "float32* y"]}

# A template instantiated by extern "C" kernels, sized by defines given as flags.
TEMPLATED = """#ifndef TILE
#define TILE 16
#endif
#ifndef SCALE
#define SCALE 1
#endif
template <typename T, int N>
__device__ T tile_sum(const T* x) {
  T s = 0;
  for (int i = 0; i < N; i++) s += x[i];
  return s * SCALE;
}
extern "C" __global__ void sum_f(const float* x, float* y) {
  extern __shared__ float scratch[];
  scratch[threadIdx.x] = tile_sum<float, TILE>(x + threadIdx.x * TILE);
  __syncthreads();
  y[blockIdx.x * blockDim.x + threadIdx.x] = scratch[threadIdx.x];
}
extern "C" __global__ void sum_d(const double* x, double* y) { y[threadIdx.x] = tile_sum<double, TILE>(x); }
"""

# The bad line is line 3: an undeclared identifier.
BROKEN = """extern "C" __global__ void saxpy(float a, const float* x, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + not_declared_anywhere;
}
"""

# (name, source, functions, options as the Python call takes them)
CASES = [
    ("a fatbin, one kernel with a launch and one without", SAXPY, FUNCTIONS, {}),
    ("a cubin (ptx False)", SAXPY, {"saxpy": SAXPY_PARAMS}, {"ptx": False}),
    (
        "templates and defines, a 2-D launch with dynamic shared memory",
        TEMPLATED,
        {
            "sum_f": {"params": ["float32* x", "float32* y"], "launch": {"grid": [8, 8], "block": (16, 16), "shared_mem_bytes": 1024}},
            "sum_d": {"params": ["float64* x", "float64* y"]},
        },
        {"flags": ["-DTILE=8", "-DSCALE=3"]},
    ),
    (
        "sm_80, a launch spelled as in the bundle",
        SAXPY,
        {"saxpy": {"params": SAXPY_PARAMS, "launch": {"grid": [4096, 1, 1], "block": 256.0, "sharedMemBytes": 0}}},
        {"arch": "sm_80"},
    ),
    (
        "sm_90a, fixed shapes as ParamSpec dicts, own file name",
        SAXPY,
        {
            "reverse": [
                {"name": "x", "kind": "buffer", "dtype": "float32", "shape": [1024]},
                {"dtype": "float32", "kind": "buffer", "name": "y", "shape": [1024]},
            ],
        },
        {"arch": "sm_90a", "file_name": "my_kernel.cu"},
    ),
]

# The TypeScript spec's ptxas captures (nvcc 13.0.88), read by both parsers.
PTXAS_TEXTS = [
    """ptxas warning : For profile sm_90a adjusting per thread register count of 16 to lower bound of 24
ptxas info    : Overriding maximum register limit 256 for 'dyn' with  24 of maxrregcount option
ptxas info    : 0 bytes gmem
ptxas info    : Compiling entry function 'dyn' for 'sm_90a'
ptxas info    : Function properties for dyn
    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 12 registers, used 1 barriers
ptxas info    : Compile time = 5.689 ms
ptxas info    : Compiling entry function 'spill' for 'sm_90a'
ptxas info    : Function properties for spill
    152 bytes stack frame, 184 bytes spill stores, 184 bytes spill loads
ptxas info    : Used 24 registers, used 0 barriers, 152 bytes cumulative stack size
ptxas info    : 0 bytes gmem, 256 bytes cmem[3]
ptxas info    : Compiling entry function 'dyn' for 'sm_80'
ptxas info    : Function properties for dyn
    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 10 registers, used 1 barriers, 360 bytes cmem[0], 8 bytes cmem[2]
""",
    """ptxas info    : 0 bytes gmem
ptxas info    : Compiling entry function 'tile' for 'sm_90'
ptxas info    : Function properties for tile
    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 14 registers, used 1 barriers, 4096 bytes smem
ptxas info    : Compiling entry function 'stacky' for 'sm_90'
ptxas info    : Function properties for stacky
    1024 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 34 registers, used 0 barriers, 1024 bytes cumulative stack size
ptxas info    : Function properties for _Z3bigi
    8 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
""",
    'kernel.cu(3): warning #177-D: variable "unused" was declared but never referenced\r\n'
    "ptxas info    : Compiling entry function 'saxpy' for 'sm_70'\r\n"
    "ptxas info    : Function properties for saxpy\r\n"
    "    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\r\n"
    "ptxas info    : Used 10 registers, 380 bytes cmem[0]",
    "",
]

DIAGNOSTICS = (
    "ptxas info    : 0 bytes gmem\n"
    "ptxas info    : Compiling entry function 'huge' for 'sm_90'\n"
    "    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n"
    "ptxas error   : Entry function 'huge' uses too much shared data (0x61a80 bytes, 0xc000 max)\n"
    '/tmp/kfarm-nvcc-AbC123/kernel.cu(3): warning #177-D: variable "unused" was declared but never referenced\n'
    "nvcc: cannot write /tmp/kfarm-nvcc-AbC123\n"
)

CACHE_KEY_PARTS = [
    {
        "nvcc": "Cuda compilation tools, release 13.0, V13.0.88",
        "arch": "sm_90",
        "ptx": True,
        "flags": ["-DN=4"],
        "fileName": "kernel.cu",
        "functions": [
            {
                "name": "k",
                "params": [{"name": "x", "kind": "buffer", "dtype": "float32", "shape": [4, 4]}],
                "launch": {"grid": [1, 1, 1], "block": [32, 1, 1], "sharedMemBytes": 0},
            }
        ],
        "source": 'extern "C" __global__ void k(float* x) { /* é 😀 \t "q" \\ \x01 */ }\n',
    },
    {"zeta": False, "Alpha": None, "alpha": [1, 2.5, -3], "b": {"y": 1, "x": 2}},
]


def ts_options(options: dict) -> dict:
    """compile_cuda's keyword arguments as CompileCudaOptions."""
    renamed = {"file_name": "fileName"}
    return {renamed.get(k, k): v for k, v in options.items()}


def ts_functions(functions: dict) -> dict:
    """A functions dict as the TypeScript takes it: the launch's dynamic shared memory spelled sharedMemBytes."""
    out = copy.deepcopy(functions)
    for decl in out.values():
        launch = decl.get("launch") if isinstance(decl, dict) else None
        if launch and "shared_mem_bytes" in launch:
            launch["sharedMemBytes"] = launch.pop("shared_mem_bytes")
    return out


def ts_compile_job(source: str, functions: dict, options: dict, cache=False) -> dict:
    return {"op": "compileCuda", "source": source, "options": {"functions": ts_functions(functions), "cache": cache, **ts_options(options)}}


@pytest.fixture(scope="module")
def nvcc():
    """The nvcc the compiles use, or a skip saying why there is none."""
    try:
        return nvcc_version(locate_nvcc())
    except FarmError as err:
        pytest.skip(f"no nvcc: {err.message}")


MANY = [
    {
        "source": (
            f'extern "C" __global__ void k{i}(const float* x, float* y, int n) {{\n'
            f"  int i = blockIdx.x * blockDim.x + threadIdx.x;\n  if (i < n) y[i] = y[i] {op} x[i];\n}}\n"
        ),
        "functions": {f"k{i}": {"params": ["float32* x", "float32* y", "int32 n"], "launch": {"grid": [i + 1, 2], "block": 128}}},
    }
    for i, op in enumerate("+-*/")
]


@pytest.fixture(scope="module")
def ts_compiled(nvcc):
    """The TypeScript compiler's results for the cases and failures here, in one node run."""
    jobs = [ts_compile_job(src, fns, opts) for _, src, fns, opts in CASES]
    jobs += [
        ts_compile_job(BROKEN, {"saxpy": SAXPY_PARAMS}, {}),
        ts_compile_job(SAXPY.replace('extern "C" __global__ void saxpy', "__global__ void saxpy"), FUNCTIONS, {}),
        ts_compile_job(SAXPY, {"saxpy": SAXPY_PARAMS, "gemm": ["float32* c"]}, {}),
        {"op": "compileCudaMany", "jobs": [{**job, "cache": False} for job in MANY]},
    ]
    results = run_ts(jobs)
    n = len(CASES)
    return {"cases": results[:n], "broken": results[n], "mangled": results[n + 1], "missing": results[n + 2], "many": results[n + 3]}


@pytest.fixture(scope="module")
def ts_plain():
    """The TypeScript answers that need no nvcc."""
    jobs = [{"op": "parsePtxasInfo", "text": t} for t in PTXAS_TEXTS]
    jobs += [{"op": "cleanDiagnostics", "stderr": DIAGNOSTICS, "dirs": ["/tmp/kfarm-nvcc-AbC123"]}]
    jobs += [{"op": "cacheKey", "parts": p} for p in CACHE_KEY_PARTS]
    jobs += [ts_compile_job(SAXPY, FUNCTIONS, {"nvcc": "/nonexistent/nvcc"})]
    results = run_ts(jobs)
    n = len(PTXAS_TEXTS)
    return {"ptxas": results[:n], "clean": results[n], "keys": results[n + 1 : n + 1 + len(CACHE_KEY_PARTS)], "missing_nvcc": results[-1]}


def resources_json(module) -> dict:
    return {name: r.to_json() for name, r in module.resources.items()}


@pytest.mark.parametrize("index", range(len(CASES)), ids=[c[0] for c in CASES])
def test_the_bundle_is_byte_identical_to_the_typescript_compilers(ts_compiled, index):
    _, source, functions, options = CASES[index]
    expected = ts_value(ts_compiled["cases"][index])
    m = compile_cuda(source, functions, cache=False, **options)
    assert m.bytes.hex() == expected["hex"]
    assert (m.name, m.digest, m.target, m.arch, m.cached) == (expected["name"], expected["digest"], "cuda", expected["arch"], False)
    assert m.functions == expected["functions"]
    assert resources_json(m) == expected["resources"]
    b = decode_bundle(m.bytes)
    assert b["targetDetails"]["arch"] == options.get("arch", "sm_90")
    magic = b"\x7fELF" if options.get("ptx") is False else bytes([0x50, 0xED, 0x55, 0xBA])
    assert b["binary"][:4] == magic


def test_the_first_case_reads_as_the_typescript_spec_says(nvcc):
    m = compile_cuda(SAXPY, FUNCTIONS, cache=False)
    b = decode_bundle(m.bytes)
    assert b["targetDetails"] == {"arch": "sm_90", "format": "fatbin", "ptx": "compute_90"}
    assert m.functions[0]["launch"] == {"grid": [4096, 1, 1], "block": [256, 1, 1], "sharedMemBytes": 0}
    assert "launch" not in m.functions[1]
    assert m.resources["saxpy"].registers > 0 and m.resources["saxpy"].spill_store_bytes == 0
    assert (m.resources["reverse"].shared_mem_bytes, m.resources["reverse"].barriers) == (4096, 1)
    assert b["meta"]["flags"] == "-fatbin -O3 -gencode arch=compute_90,code=[sm_90,compute_90] -Xptxas -v"
    assert re.fullmatch(r"nvcc [0-9]+\.[0-9]+(\.[0-9]+)*", b["meta"]["compiler"]) and b["meta"]["compiler"] == f"nvcc {nvcc.version}"
    assert b["meta"]["source_sha256"] == hashlib.sha256(SAXPY.encode()).hexdigest()


def test_compile_cuda_many_gives_the_typescript_bundles_never_more_nvcc_than_cpus(ts_compiled):
    expected = ts_value(ts_compiled["many"])
    modules = compile_cuda_many([{**job, "cache": False} for job in MANY])
    assert [m.bytes.hex() for m in modules] == [e["hex"] for e in expected]
    assert [m.functions[0]["launch"]["grid"] for m in modules] == [[i + 1, 2, 1] for i in range(4)]
    assert len({m.digest for m in modules}) == 4
    assert 1 <= nvcc_limiter.peak <= parallelism()


def test_one_cache_serves_both_sdks(nvcc, tmp_path):
    py_first, ts_first = str(tmp_path / "py-first"), str(tmp_path / "ts-first")
    made = compile_cuda(SAXPY, FUNCTIONS, cache=py_first)
    assert made.cached is False
    options = {"flags": ["-DUNUSED=1"]}
    ts_made, ts_hit = run_ts(
        [ts_compile_job(SAXPY, FUNCTIONS, options, cache=ts_first), ts_compile_job(SAXPY, FUNCTIONS, {}, cache=py_first)]
    )
    # The TypeScript compiler finds the Python compiler's entry ...
    assert ts_value(ts_hit)["cached"] is True
    assert ts_value(ts_hit)["hex"] == made.bytes.hex()
    # ... and the Python compiler the TypeScript one's.
    hit = compile_cuda(SAXPY, FUNCTIONS, cache=ts_first, **options)
    assert hit.cached is True
    assert hit.bytes.hex() == ts_value(ts_made)["hex"]
    assert resources_json(hit) == ts_value(ts_made)["resources"]
    assert hit.functions == made.functions


def test_a_cache_hit_has_the_same_bytes_and_a_bad_entry_is_rebuilt(nvcc, tmp_path):
    cache = str(tmp_path)
    first = compile_cuda(SAXPY, FUNCTIONS, cache=cache)
    again = compile_cuda(SAXPY, FUNCTIONS, cache=cache)
    assert (first.cached, again.cached) == (False, True)
    assert (again.bytes, again.resources, again.functions) == (first.bytes, first.resources, first.functions)
    assert compile_cuda(SAXPY, FUNCTIONS, cache=cache, flags=["-DX=1"]).cached is False, "a new flag is a miss"
    assert compile_cuda(SAXPY + "// edited\n", FUNCTIONS, cache=cache).cached is False, "a new source is a miss"
    entries = sorted(os.listdir(cache))
    assert len(entries) == 3 and all(e.endswith(".kfm") for e in entries), entries
    for e in entries:
        (tmp_path / e).write_bytes(b"not a bundle")
    rebuilt = compile_cuda(SAXPY, FUNCTIONS, cache=cache)
    assert (rebuilt.cached, rebuilt.bytes) == (False, first.bytes)
    assert compile_cuda(SAXPY, FUNCTIONS, cache=cache).cached is True
    assert [e for e in os.listdir(cache) if not e.endswith(".kfm")] == [], "no temporary files left behind"


def test_a_syntax_error_is_compile_error_with_the_typescript_message(ts_compiled, tmp_path, monkeypatch):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    expected = ts_compiled["broken"]
    with pytest.raises(FarmError) as info:
        compile_cuda(BROKEN, {"saxpy": SAXPY_PARAMS}, cache=False)
    err = info.value
    assert (err.code, err.message, err.details) == (expected["code"], expected["message"], expected["details"])
    assert err.message.startswith("nvcc failed to compile kernel.cu:\n")
    assert 'kernel.cu(3): error: identifier "not_declared_anywhere" is undefined' in err.message.splitlines()
    assert "kfarm-nvcc-" not in err.message and "ptxas info" not in err.message
    assert list(tmp_path.iterdir()) == [], "the build directory was left behind"


def test_a_kernel_without_extern_c_or_not_in_the_source_is_compile_error_as_in_typescript(ts_compiled):
    mangled = SAXPY.replace('extern "C" __global__ void saxpy', "__global__ void saxpy")
    for source, functions, expected in [
        (mangled, FUNCTIONS, ts_compiled["mangled"]),
        (SAXPY, {"saxpy": SAXPY_PARAMS, "gemm": ["float32* c"]}, ts_compiled["missing"]),
    ]:
        with pytest.raises(FarmError) as info:
            compile_cuda(source, functions, cache=False)
        assert (info.value.code, info.value.message, info.value.details) == (expected["code"], expected["message"], expected["details"])
    assert expected["code"] == "COMPILE_ERROR"
    assert 'no kernel "gemm" for sm_90' in expected["message"]


def test_nvcc_missing_is_toolchain_missing_as_in_typescript(ts_plain):
    expected = ts_plain["missing_nvcc"]
    with pytest.raises(FarmError) as info:
        compile_cuda(SAXPY, FUNCTIONS, nvcc="/nonexistent/nvcc", cache=False)
    assert (info.value.code, info.value.message, info.value.details) == (expected["code"], expected["message"], expected["details"])
    assert info.value.code == "TOOLCHAIN_MISSING"
    assert info.value.details == {"tried": ["/nonexistent/nvcc (the nvcc option)"]}
    assert "install the CUDA toolkit (nvcc)" in info.value.message


def test_nvcc_is_looked_for_in_the_option_kfarm_nvcc_cuda_home_then_path(tmp_path, monkeypatch):
    monkeypatch.delenv("KFARM_NVCC", raising=False)
    monkeypatch.setenv("CUDA_HOME", "/nonexistent/cuda")
    where = locate_nvcc()
    assert (where.path, where.tried) == ("nvcc", ["/nonexistent/cuda/bin/nvcc ($CUDA_HOME/bin/nvcc: not found)", "nvcc on PATH"])
    (tmp_path / "bin").mkdir()
    fake = tmp_path / "bin" / "nvcc"
    fake.write_text("#!/bin/sh\n")
    fake.chmod(0o755)
    monkeypatch.setenv("CUDA_HOME", str(tmp_path))
    assert locate_nvcc().path == str(fake)
    monkeypatch.setenv("KFARM_NVCC", "/opt/env/nvcc")
    assert locate_nvcc().path == "/opt/env/nvcc"
    assert locate_nvcc("/opt/option/nvcc").path == "/opt/option/nvcc"


NO_NVCC = "/nonexistent/nvcc"  # every refusal below happens before nvcc would be looked for

REFUSALS = [
    (
        "functions as a list of records",
        dict(functions=[{"name": "saxpy", "params": SAXPY_PARAMS}]),
        r"functions must be a dict of kernel name → parameters, e\.g\. \{\"saxpy\"",
    ),
    ("a kernel name that is no C identifier", dict(functions={"my-kernel": []}), r'kernel name "my-kernel" is not a C identifier'),
    ("no kernels", dict(functions={}), r"declare at least one function"),
    ("a decl that is neither", dict(functions={"saxpy": "float32 a"}), r'function saxpy: expected a list of parameters or \{"params"'),
    (
        "a misspelt launch key",
        dict(functions={"saxpy": {"params": SAXPY_PARAMS, "lanuch": {"grid": 1, "block": 1}}}),
        r'function saxpy: unknown key "lanuch"',
    ),
    ("a bad parameter", dict(functions={"saxpy": ["float a"]}), r'function saxpy, parameter 0: "float a" is not'),
    (
        "launch grid 0",
        dict(functions={"saxpy": {"params": SAXPY_PARAMS, "launch": {"grid": 0, "block": 256}}}),
        r"function saxpy: launch grid is \[0,1,1\], expected \[x, y, z\] of positive integers",
    ),
    (
        "launch block with a 0",
        dict(functions={"saxpy": {"params": SAXPY_PARAMS, "launch": {"grid": 8, "block": [256, 0]}}}),
        r"function saxpy: launch block",
    ),
    (
        "launch grid of 4",
        dict(functions={"saxpy": {"params": SAXPY_PARAMS, "launch": {"grid": [1, 2, 3, 4], "block": 1}}}),
        r"function saxpy: launch grid is \[1,2,3,4\], expected a number or",
    ),
    (
        "launch block a fraction",
        dict(functions={"saxpy": {"params": SAXPY_PARAMS, "launch": {"grid": 8, "block": 2.5}}}),
        r"function saxpy: launch block is \[2\.5,1,1\]",
    ),
    (
        "launch negative shared memory",
        dict(functions={"saxpy": {"params": SAXPY_PARAMS, "launch": {"grid": 8, "block": 32, "shared_mem_bytes": -1}}}),
        r"function saxpy: launch sharedMemBytes is -1",
    ),
    (
        "launch grid a string",
        dict(functions={"saxpy": {"params": SAXPY_PARAMS, "launch": {"grid": "8", "block": 32}}}),
        r'function saxpy: launch grid is "8"',
    ),
    ("launch not a record", dict(functions={"saxpy": {"params": SAXPY_PARAMS, "launch": 5}}), r"function saxpy: launch is not a record"),
    (
        "launch with both spellings",
        dict(functions={"saxpy": {"params": SAXPY_PARAMS, "launch": {"grid": 1, "block": 1, "shared_mem_bytes": 0, "sharedMemBytes": 0}}}),
        r"both",
    ),
    (
        "launch with an unknown key",
        dict(functions={"saxpy": {"params": SAXPY_PARAMS, "launch": {"grid": 1, "block": 1, "smem": 0}}}),
        r'launch has an unknown key "smem"',
    ),
    (
        "a file name with a directory",
        dict(file_name="../kernel.cu"),
        r'file_name "\.\./kernel\.cu" is not a plain file name ending in \.cu',
    ),
    ("a file name not .cu", dict(file_name="kernel.c"), r'file_name "kernel\.c" is not'),
    ("flags as one string", dict(flags="-DN=4"), r"flags must be a list of strings"),
    ("ptx not a bool", dict(ptx="yes"), r'ptx must be True \(a fatbin with PTX\) or False \(a cubin\), got "yes"'),
    ("cache True", dict(cache=True), r"cache must be a directory or False \(no cache\), got true"),
] + [
    (f"arch {a!r}", dict(arch=a), rf'arch "{a}" is not a GPU architecture such as "sm_90"')
    for a in ["90", "sm90", "compute_90", "sm_90ab", "hopper"]
]


@pytest.mark.parametrize("case", REFUSALS, ids=[r[0] for r in REFUSALS])
def test_bad_options_are_invalid_argument_saying_what_is_expected(case):
    _, kwargs, message = case
    kwargs = {"nvcc": NO_NVCC, "cache": False, "functions": FUNCTIONS, **kwargs}
    functions = kwargs.pop("functions")
    with pytest.raises(FarmError, match=message) as info:
        compile_cuda(SAXPY, functions, **kwargs)
    assert info.value.code == "INVALID_ARGUMENT"


def test_a_source_that_is_not_text_is_refused():
    with pytest.raises(FarmError, match="source must be a string") as info:
        compile_cuda(SAXPY.encode(), FUNCTIONS, nvcc=NO_NVCC)
    assert info.value.code == "INVALID_ARGUMENT"


@pytest.mark.parametrize("index", range(len(PTXAS_TEXTS)))
def test_ptxas_info_is_read_as_the_typescript_reads_it(ts_plain, index):
    expected = ts_value(ts_plain["ptxas"][index])
    report = parse_ptxas_info(PTXAS_TEXTS[index])
    assert {arch: {name: r.to_json() for name, r in entries.items()} for arch, entries in report.items()} == expected
    assert [list(entries) for entries in report.values()] == [list(entries) for entries in expected.values()], "entry order"


def test_the_ptxas_captures_hold_what_the_typescript_spec_says(ts_plain):
    multi = parse_ptxas_info(PTXAS_TEXTS[0])
    assert multi["sm_90a"]["spill"].spill_store_bytes == 184 and multi["sm_90a"]["spill"].cumulative_stack_bytes == 152
    assert multi["sm_80"]["dyn"].const_mem_bytes == 368, "cmem banks add up"
    sm90 = parse_ptxas_info(PTXAS_TEXTS[1])["sm_90"]
    assert sm90["stacky"].stack_frame_bytes == 1024, "a device function's frame stays off the kernel before it"
    assert parse_ptxas_info(PTXAS_TEXTS[2])["sm_70"]["saxpy"].registers == 10


def test_diagnostics_are_cleaned_as_in_typescript(ts_plain):
    cleaned = clean_diagnostics(DIAGNOSTICS, ["/tmp/kfarm-nvcc-AbC123"])
    assert cleaned == ts_value(ts_plain["clean"])
    assert cleaned.startswith("ptxas error") and "kernel.cu(3): warning" in cleaned and "cannot write .\n" not in cleaned


@pytest.mark.parametrize("index", range(len(CACHE_KEY_PARTS)))
def test_the_cache_key_is_the_typescript_one(ts_plain, index):
    assert cache_key(CACHE_KEY_PARTS[index]) == ts_value(ts_plain["keys"][index])
