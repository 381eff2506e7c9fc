/**
 * The VTA host compiler: conv2d, matrix multiply and element-wise kernels for
 * VTA boards, compiled locally into module bundles (target "vta"), plus the
 * host-side packing helpers and reference implementations to check results.
 */
import { compileVta, type CompileVtaOptions, type VtaCompiledModule } from "./compile.ts";
import type { VtaConv2dSchedule, VtaConv2dWorkload } from "./conv2d.ts";
import type { VtaElementwiseSchedule, VtaElementwiseWorkload } from "./elementwise.ts";
import type { VtaMatmulSchedule, VtaMatmulWorkload } from "./matmul.ts";

export interface VtaKernelOptions extends CompileVtaOptions {
  /** Function name in the module; default "conv2d", "matmul", "elementwise" or "vector_add". */
  name?: string;
}

/** A module with one conv2d function `(data, kernel, res)` in packed NCHWnc layout; missing schedule knobs are chosen for you. */
export function vtaConv2d(workload: VtaConv2dWorkload, schedule?: Partial<VtaConv2dSchedule>, options: VtaKernelOptions = {}): VtaCompiledModule {
  const { name, ...compile } = options;
  return compileVta({ kind: "conv2d", workload, ...(schedule ? { schedule } : {}), ...(name ? { name } : {}) }, compile);
}

/** A module with one matmul function `(A, W, C)`: C = A · Wᵀ in packed layouts. */
export function vtaMatmul(workload: VtaMatmulWorkload, schedule?: Partial<VtaMatmulSchedule>, options: VtaKernelOptions = {}): VtaCompiledModule {
  const { name, ...compile } = options;
  return compileVta({ kind: "matmul", workload, ...(schedule ? { schedule } : {}), ...(name ? { name } : {}) }, compile);
}

/** A module with one element-wise function `(a[, b], c)`. */
export function vtaElementwise(
  workload: VtaElementwiseWorkload,
  schedule?: Partial<VtaElementwiseSchedule>,
  options: VtaKernelOptions = {},
): VtaCompiledModule {
  const { name, ...compile } = options;
  return compileVta({ kind: "elementwise", workload, ...(schedule ? { schedule } : {}), ...(name ? { name } : {}) }, compile);
}

/** The "get started" vector add: `c = int8(a + b)` over `length` int32 elements; a function `vector_add(a, b, c)`. */
export function vtaVectorAdd(length: number, options: VtaKernelOptions = {}): VtaCompiledModule {
  return vtaElementwise({ length, ops: [{ op: "add", rhs: "b" }] }, undefined, { ...options, name: options.name ?? "vector_add" });
}

export { compileVta, lowerVtaKernel, type CompileVtaOptions, type VtaCompiledModule, type VtaKernelInfo, type VtaKernelSpec } from "./compile.ts";
export type { VtaConv2dWorkload, VtaConv2dSchedule, Conv2dStoreGranularity } from "./conv2d.ts";
export type { VtaMatmulWorkload, VtaMatmulSchedule, MatmulStoreGranularity } from "./matmul.ts";
export type { VtaElementwiseWorkload, VtaElementwiseSchedule, VtaAluStep } from "./elementwise.ts";
export type { VtaEpilogue } from "./epilogue.ts";
export { VTA_TUTORIALS, VTA_CONV2D, VTA_MATRIX_MULTIPLY, VTA_MATRIX_MULTIPLY_BLOCKED, VTA_VECTOR_ADD } from "./tutorials.ts";
export { packNCHW, unpackNCHW, packOIHW, packMatrix, unpackMatrix, packMatmulInput, packMatmulWeight, unpackMatmulOutput } from "./layout.ts";
export { conv2dReference, matmulReference, elementwiseReference } from "./reference.ts";
export { conv2dOutputSize } from "./conv2d.ts";
