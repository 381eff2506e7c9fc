/**
 * The workloads and schedules of TVM's VTA tutorials (§9 of docs/vta-isa.md),
 * ready to compile. With the default hardware, each compiles to the
 * instruction stream TVM emitted for it (tests/fixtures/vta-golden/).
 */
import type { VtaKernelSpec } from "./compile.ts";

/** "Get Started with VTA": C = A + B over 64 vectors of 16 int32, result int8. */
export const VTA_VECTOR_ADD: Extract<VtaKernelSpec, { kind: "elementwise" }> = {
  kind: "elementwise",
  name: "vector_add",
  workload: { length: 1024, inputDtype: "int32", ops: [{ op: "add", rhs: "b" }] },
  schedule: { blockVectors: 64 },
};

/** "Simple Matrix Multiply": (1×256)·(256×256), int8 result truncated from int32. */
export const VTA_MATRIX_MULTIPLY: Extract<VtaKernelSpec, { kind: "matmul" }> = {
  kind: "matmul",
  name: "matrix_multiply",
  workload: { batch: 1, inFeatures: 256, outFeatures: 256 },
  schedule: { batchBlock: 1, inBlock: 1, outBlock: 16, virtualThreads: 1, storeGranularity: "tile" },
};

/** "Matrix Multiply Blocking": (1×1024)·(1024×1024), >> 8, clip [0, 127]. */
export const VTA_MATRIX_MULTIPLY_BLOCKED: Extract<VtaKernelSpec, { kind: "matmul" }> = {
  kind: "matmul",
  name: "matrix_multiply_opt",
  workload: { batch: 1, inFeatures: 1024, outFeatures: 1024, shift: 8, clip: [0, 127] },
  schedule: { batchBlock: 1, inBlock: 16, outBlock: 16, virtualThreads: 1, storeGranularity: "element" },
};

/** "2D Convolution Optimization": ResNet-18 layer 9, 1×256×14×14, 256 filters 3×3, pad 1, stride 1; >> 8, clip [0, 127]. */
export const VTA_CONV2D: Extract<VtaKernelSpec, { kind: "conv2d" }> = {
  kind: "conv2d",
  name: "conv2d",
  workload: {
    batch: 1,
    inChannels: 256,
    outChannels: 256,
    height: 14,
    width: 14,
    kernelH: 3,
    kernelW: 3,
    padH: 1,
    padW: 1,
    strideH: 1,
    strideW: 1,
    shift: 8,
    clip: [0, 127],
  },
  schedule: { ocBlock: 8, icBlock: 1, hBlock: 7, wBlock: 14, virtualThreads: 2, storeGranularity: "element" },
};

/** The tutorial kernels by the name of their golden stream file. */
export const VTA_TUTORIALS = Object.freeze({
  matrix_multiply: VTA_MATRIX_MULTIPLY,
  matrix_multiply_opt: VTA_MATRIX_MULTIPLY_BLOCKED,
  convolution_opt: VTA_CONV2D,
  vector_add: VTA_VECTOR_ADD,
});
