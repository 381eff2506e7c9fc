/** Small C kernels the tests compile with the real compiler. */
import { compileCpu, type CompiledModule } from "../../host-sdk/index.ts";

export const VADD_SOURCE = `
#include <stdint.h>
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

/** Kernels that misbehave: a segfault, an abort, an endless loop, a slow one. */
export const BAD_SOURCE = `
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>
void segv(int32_t n) { volatile int* p = (int*)(intptr_t)n; *p = 42; }
void die(void) { abort(); }
void spin(void) { for (volatile unsigned long i = 0;; i++) {} }
void nap(int32_t ms) { usleep(ms * 1000); }
`;

export function compileBad(): Promise<CompiledModule> {
  return compileCpu(BAD_SOURCE, { functions: { segv: ["int32 n"], die: [], spin: [], nap: ["int32 ms"] } });
}
