/**
 * The cycle estimate: a simple timing model of VTA's three modules running
 * concurrently. TVM's functional simulator has none (tsim counts real Chisel
 * cycles); this one exists so that schedules can be compared — above all so
 * that virtual threading's latency hiding shows in the numbers.
 *
 * **Model.**
 *
 * 1. The load, compute and store modules each execute their own instructions
 *    in program order, one at a time, all three concurrently.
 * 2. An instruction starts when its module is free **and** every token it pops
 *    has been pushed; it finishes `cost` cycles later, and the tokens it
 *    pushes carry that finish time. (This is an event-driven simulation of the
 *    dependency tokens; since each FIFO has one producer and one consumer, the
 *    k-th pop always matches the k-th push, so the estimate does not depend on
 *    the order in which the functional simulator happens to run modules.)
 * 3. A run lasts until its last instruction finishes (normally FINISH);
 *    `cycle_count` sums the runs. Tokens left over from an earlier run are
 *    available at cycle 0 of the next.
 *
 * **Costs** (cycles), with the DMA bus `2^LOG_BUS_WIDTH` bits wide
 * (LOG_BUS_WIDTH = 6, the Pynq's 64-bit AXI port: 8 bytes per cycle):
 *
 * | instruction | cost |
 * |---|---|
 * | LOAD / STORE, x_size ≠ 0 | `dmaLatency` + ⌈DRAM bytes moved / bus bytes⌉ + padded elements × `padCyclesPerElement` |
 * | NOP (x_size = 0), FINISH | `nopCycles` |
 * | GEMM (also reset) | `computeLatency` + iter_out · iter_in · uops × `gemmCyclesPerUop` (the core retires one 1×16·16×16 product per cycle) |
 * | ALU | `computeLatency` + iter_out · iter_in · uops × (`aluCyclesPerUop` with an immediate, `aluCyclesPerUopTwoOperands` reading two ACC rows) |
 *
 * DRAM bytes are what crosses the bus: x_size · y_size elements of the DRAM
 * element size (ACC_8BIT: a quarter of an ACC element); padding is generated
 * on chip and costs SRAM writes only.
 */
import { FarmError } from "../../../protos/index.ts";

export interface TimingModel {
  /** log2 of the DMA bus width in bits (VTA's LOG_BUS_WIDTH; 6 on the Pynq). */
  logBusWidth: number;
  /** Fixed cost of every DMA (LOAD or STORE that moves data): request and DRAM latency. */
  dmaLatencyCycles: number;
  /** Cycles per padding element written into SRAM. */
  padCyclesPerElement: number;
  /** Pipeline fill of a GEMM or ALU instruction. */
  computeLatencyCycles: number;
  gemmCyclesPerUop: number;
  aluCyclesPerUop: number;
  aluCyclesPerUopTwoOperands: number;
  /** NOPs (x_size = 0) and FINISH. */
  nopCycles: number;
}

export const DEFAULT_TIMING: Readonly<TimingModel> = Object.freeze({
  logBusWidth: 6,
  dmaLatencyCycles: 64,
  padCyclesPerElement: 1,
  computeLatencyCycles: 4,
  gemmCyclesPerUop: 1,
  aluCyclesPerUop: 1,
  aluCyclesPerUopTwoOperands: 2,
  nopCycles: 1,
});

export function resolveTiming(t: Partial<TimingModel> = {}): TimingModel {
  const out = { ...DEFAULT_TIMING, ...t };
  for (const [k, v] of Object.entries(out)) {
    if (typeof v !== "number" || !Number.isFinite(v) || v < 0)
      throw new FarmError("INVALID_ARGUMENT", `vta-sim board option timing.${k} must be a non-negative number, got ${String(v)}`, {
        details: { option: `timing.${k}` },
      });
  }
  return out;
}

export function busBytesPerCycle(t: TimingModel): number {
  return Math.max(1, 2 ** t.logBusWidth / 8);
}

/** A LOAD or STORE that moves `dramBytes` and writes `padElements` zero elements. */
export function dmaCycles(t: TimingModel, dramBytes: number, padElements: number): number {
  return t.dmaLatencyCycles + Math.ceil(dramBytes / busBytesPerCycle(t)) + padElements * t.padCyclesPerElement;
}

export function gemmCycles(t: TimingModel, uopExecutions: number): number {
  return t.computeLatencyCycles + uopExecutions * t.gemmCyclesPerUop;
}

export function aluCycles(t: TimingModel, uopExecutions: number, useImm: boolean): number {
  return t.computeLatencyCycles + uopExecutions * (useImm ? t.aluCyclesPerUop : t.aluCyclesPerUopTwoOperands);
}
