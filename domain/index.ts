/**
 * The rules both sides of the farm apply to kernels and their timings: CPU
 * targets, CUDA launch limits, seeded inputs, the precision of a time
 * evaluation, clock throttling, content digests of large inputs.
 */
export { hostCpuTarget, binaryCpuTarget, type CpuTarget } from "./cpu-target.ts";
export { randomArray, fillRange, fillProblem, type RandomFill } from "./random.ts";
export {
  blockRegisters,
  cudaLaunchLimitsFromWire,
  cudaLaunchLimitsToWire,
  cudaLaunchProblem,
  type CudaLaunchLimits,
  type KernelLaunchResources,
  type LaunchShape,
} from "./cuda-limits.ts";
export { DEFAULT_PRECISION_BUDGET_MS, MAX_PRECISION_REPEATS, MIN_PRECISION_REPEATS, median, medianRse } from "./precision.ts";
export {
  CLOCK_EVENT_REASONS,
  clockEventNames,
  throttlingNames,
  describeThrottling,
  throttledOf,
  type ClockEventReason,
  type ThrottleSample,
} from "./throttle.ts";
export { TREE_LEAF_BYTES, treeDigest, treeDigestOfFile, treeRoot } from "./tree-digest.ts";
