/** Small C kernels the tests compile with the real compiler. */
import assert from "node:assert/strict";
import { compileCpu, type CompiledModule, type Session } from "../../host-sdk/index.ts";

export const VADD_SOURCE = `
#include <stdint.h>
#include <stdio.h>
void vadd(const float* a, const float* b, float* c, int32_t n) {
  for (int32_t i = 0; i < n; i++) c[i] = a[i] + b[i];
}
void scale(float* a, int32_t n, float s) {
  for (int32_t i = 0; i < n; i++) a[i] *= s;
}
void nop(void) {}
`;

export function compileVadd(): Promise<CompiledModule> {
  return compileCpu(VADD_SOURCE, {
    functions: {
      vadd: ["float32* a", "float32* b", "float32* c", "int32 n"],
      scale: ["float32* a", "int32 n", "float32 s"],
      nop: [],
    },
  });
}

/** Uploads and loads vadd in `s` and checks a sum of `n` floats made on the host: the board really runs the kernel. */
export async function checkVadd(s: Session, n = 4096): Promise<void> {
  const module = await compileVadd();
  await s.upload(module);
  const vadd = (await s.loadModule(module.name)).getFunction("vadd");
  const a = await s.array(Float32Array.from({ length: n }, (_, i) => i));
  const b = await s.array(new Float32Array(n).fill(0.5));
  const out = await s.array({ shape: [n], dtype: "float32" });
  await vadd(a, b, out, n);
  const got = (await out.toArray()) as Float32Array;
  assert.equal(got[0], 0.5);
  assert.equal(got[n - 1], n - 0.5);
}

/** Kernels that misbehave: a segfault, an abort, an endless loop, a slow one. */
export const BAD_SOURCE = `
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
void segv(int32_t n) { volatile int* p = (int*)(intptr_t)n; *p = 42; }
void die(void) { abort(); }
void spin(void) { for (volatile unsigned long i = 0;; i++) {} }
/* Leaves "napping" in its session's folder first: the sign a test waits for that the call is running. */
void nap(int32_t ms) { FILE* f = fopen("napping", "w"); if (f) fclose(f); usleep(ms * 1000); }
`;

export function compileBad(): Promise<CompiledModule> {
  return compileCpu(BAD_SOURCE, { functions: { segv: ["int32 n"], die: [], spin: [], nap: ["int32 ms"] } });
}
