/**
 * The VTA tuner's workloads and knob space (examples/tune-vta-conv2d.ts), in
 * one place for the example and for the test that sweeps the space behind
 * the example's verdict (tests/tune-vta-example.test.ts).
 */
import { VTA_TUTORIALS, conv2dOutputSize, type VtaConv2dSchedule, type VtaConv2dWorkload } from "kernelfarm";

/** `--workload small` (default, fast enough for CI) and `tutorial` (the tutorial's ResNet-18 layer). */
export const VTA_CONV2D_WORKLOADS: Record<string, VtaConv2dWorkload> = {
  small: { batch: 1, inChannels: 64, outChannels: 64, height: 14, width: 14, kernelH: 3, kernelW: 3, padH: 1, padW: 1, shift: 8, clip: [0, 127] },
  tutorial: VTA_TUTORIALS.convolution_opt.workload,
};

/** The channel block of the default hardware. */
const BLOCK = 16;

const divisors = (n: number) => Array.from({ length: n }, (_, i) => i + 1).filter((d) => n % d === 0);

/**
 * The knob space: each tile size a divisor of its dimension. Whether
 * ocBlock × virtualThreads divides the channel blocks, and whether the
 * tiles fit the on-chip buffers and the micro-op cache, is for the compiler
 * to say (COMPILE_ERROR).
 */
export function vtaConv2dSpace(workload: VtaConv2dWorkload) {
  const { outHeight, outWidth } = conv2dOutputSize(workload);
  return {
    ocBlock: divisors(workload.outChannels / BLOCK),
    icBlock: divisors(workload.inChannels / BLOCK),
    hBlock: divisors(outHeight),
    wBlock: divisors(outWidth),
    virtualThreads: [1, 2],
    storeGranularity: ["element", "row", "channel"],
  } as const satisfies Record<keyof VtaConv2dSchedule, readonly (number | string)[]>;
}
