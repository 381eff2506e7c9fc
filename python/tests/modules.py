"""Module bundles for the tests: CPU modules with the Python SDK's own
compile_cpu(); VTA modules with the TypeScript VTA compiler through node
(python/tests/ts/build_module.ts), as the Python SDK has no VTA compiler. A
built module has what compile_cpu() returns: `.bytes`, `.name`, `.digest`,
`.functions`.
"""
from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

from farm import REPO, run_ts

from kernelfarm import CompiledModule, compile_cpu

BUILD = REPO / "python" / "tests" / "ts" / "build_module.ts"


def build_cpu(source: str, functions: dict[str, list[Any]]) -> CompiledModule:
    """`functions`: name → parameters ("float32* a", "int32 n", or a full spec with a shape)."""
    return compile_cpu(source, functions)


def build_vta(tutorial: str) -> CompiledModule:
    """One of the VTA tutorials' modules (host-sdk VTA_TUTORIALS), compiled by compileVta."""
    with tempfile.TemporaryDirectory(prefix="kf-py-build-") as d:
        run = run_ts(BUILD, [tutorial, d])
        if run.returncode != 0:
            raise RuntimeError(f"build_module.ts {tutorial}: {run.stderr.strip()}")
        return CompiledModule.from_bytes(Path(json.loads(run.stdout.strip().splitlines()[-1])["path"]).read_bytes())


VADD_SOURCE = """
#include <stdint.h>
void vadd(const float* a, const float* b, float* c, int32_t n) {
  for (int32_t i = 0; i < n; i++) c[i] = a[i] + b[i];
}
void scale(float* a, int32_t n, float s) {
  for (int32_t i = 0; i < n; i++) a[i] *= s;
}
void nop(void) {}
"""
VADD_FUNCTIONS = {
    "vadd": ["float32* a", "float32* b", "float32* c", "int32 n"],
    "scale": ["float32* a", "int32 n", "float32 s"],
    "nop": [],
}

#: Kernels that misbehave: a wrong sum, a segfault, an endless loop, a fixed-shape parameter.
BAD_SOURCE = """
#include <stdint.h>
void vadd_wrong(const float* a, const float* b, float* c, int32_t n) {
  for (int32_t i = 0; i < n; i++) c[i] = a[i] + b[i] + (i == n - 1 ? 1.0f : 0.0f);
}
void segv(int32_t n) { volatile int* p = (int*)(intptr_t)n; *p = 42; }
void spin(void) { for (volatile unsigned long i = 0;; i++) {} }
void sum16(const int32_t* m, int32_t* out) { int32_t s = 0; for (int i = 0; i < 16; i++) s += m[i]; *out = s; }
"""
BAD_FUNCTIONS = {
    "vadd_wrong": ["float32* a", "float32* b", "float32* c", "int32 n"],
    "segv": ["int32 n"],
    "spin": [],
    "sum16": [
        {"name": "m", "kind": "buffer", "dtype": "int32", "shape": [4, 4]},
        {"name": "out", "kind": "buffer", "dtype": "int32", "shape": [1]},
    ],
}
