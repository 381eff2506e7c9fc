/**
 * The VTA functional simulator and the `vta-sim` board. Besides the board,
 * `runVtaFunction` runs a compiled VTA function in-process on host bytes —
 * for benchmarks and compiler tests that want no farm around it.
 */
import { FarmError } from "../../../protos/index.ts";
import type { VtaBinary } from "../../../vta/index.ts";
import type { DramBuffer } from "./dram.ts";
import type { ParamInfo } from "../vta-board/decode.ts";
import { VtaSimulator, type VtaSimulatorOptions } from "./simulator.ts";

export { VtaSimBackend, VTA_SIM_KIND, describeVtaSimBoard, type VtaSimBackendOptions } from "./backend.ts";
export { VtaSimulator, DEFAULT_VTA_SIM_MEMORY_BYTES, type VtaSimulatorOptions, type VtaProgram, type CallReport } from "./simulator.ts";
export { Dram, DramBuffer, PAGE_BYTES } from "./dram.ts";
export { TVM_COUNTERS, VtaCounters } from "../vta-board/stats.ts";
export { DEFAULT_TIMING, resolveTiming, type TimingModel } from "../vta-board/timing.ts";
export { wasmGemmSupported, type GemmEngine } from "./core.ts";
export type { ParamInfo } from "../vta-board/decode.ts";

export interface RunVtaFunctionOptions extends VtaSimulatorOptions {
  /** Run on this simulator (its SRAMs, tokens and counters carry over) instead of a fresh one. */
  simulator?: VtaSimulator;
  /** Parameter names and kinds (default: every relocated parameter is a buffer named argN). */
  params?: readonly ParamInfo[];
  /** Clear the simulator's counters before the call (default true), so `counters` is this call's. */
  clearStats?: boolean;
}

export interface RunVtaFunctionResult {
  /** Each argument's bytes after the call (copies). */
  outputs: Uint8Array[];
  /** The simulator's counters after the call (TVM's seven, cycle_count, busy cycles, runs, instructions). */
  counters: Record<string, number>;
  /** Estimated cycles of this call. */
  cycles: number;
  /** Wall-clock nanoseconds the simulation took (placement and copies excluded). */
  wallNs: number;
}

/**
 * Runs function `name` of `binary` once on a simulator, with `args[i]` the
 * initial bytes of buffer parameter i. Errors are FarmErrors as on a board
 * (TARGET_MISMATCH, LOAD_ERROR, BAD_ARGUMENTS, RUNTIME_ERROR).
 */
export function runVtaFunction(binary: VtaBinary, name: string, args: readonly Uint8Array[], opts: RunVtaFunctionOptions = {}): RunVtaFunctionResult {
  const sim = opts.simulator ?? new VtaSimulator(opts);
  if (binary.hardware !== sim.hw.name) {
    throw new FarmError("TARGET_MISMATCH", `the program was compiled for VTA hardware ${binary.hardware}, but the simulator is ${sim.hw.name}`);
  }
  const program = sim.prepare(binary, name, opts.params);
  const buffers: DramBuffer[] = [];
  try {
    for (const a of args) {
      const b = sim.dram.alloc(a.byteLength);
      b.write(0, a);
      buffers.push(b);
    }
    if (opts.clearStats ?? true) sim.counters.clear();
    const t0 = process.hrtime.bigint();
    const report = sim.call(program, buffers);
    const wallNs = Number(process.hrtime.bigint() - t0);
    return {
      outputs: buffers.map((b) => b.read(0, b.nbytes).slice()),
      counters: sim.counters.toRecord(),
      cycles: report.cycles,
      wallNs,
    };
  } finally {
    for (const b of buffers) b.free();
    sim.release(program);
  }
}
