/**
 * Execution statistics. The first seven are TVM's functional simulator
 * counters, counted exactly as it counts them (§5 of docs/vta-isa.md), in the
 * order `vta.simulator.profiler_status` prints them:
 *
 * | counter | added to by | amount |
 * |---|---|---|
 * | inp_load_nbytes | LOAD INP, x_size ≠ 0 | x_size · y_size · INP element bytes (padding not counted) |
 * | wgt_load_nbytes | LOAD WGT, x_size ≠ 0 | x_size · y_size · WGT element bytes |
 * | acc_load_nbytes | LOAD ACC and LOAD ACC_8BIT, x_size ≠ 0 | x_size · y_size · ACC element bytes (ACC_8BIT too, although DRAM supplies a quarter) |
 * | uop_load_nbytes | LOAD UOP, x_size ≠ 0 | x_size · y_size · 4 |
 * | out_store_nbytes | STORE, x_size ≠ 0 | x_size · y_size · OUT element bytes |
 * | gemm_counter | GEMM with reset_reg = 0 | iter_out · iter_in · (uop_end − uop_bgn) |
 * | alu_counter | every ALU | iter_out · iter_in · (uop_end − uop_bgn) |
 *
 * NOPs, FINISH and tokens count nothing. Then kernelfarm's own: the cycle
 * estimate of timing.ts (`cycle_count`, summed over runs, as TVM's tsim
 * profiler reports it) with each module's busy cycles, and how much ran.
 * All are cumulative until cleared.
 */
import type { VtaHardware } from "../../../vta/index.ts";
import { KIND, type DecodedInsn } from "./decode.ts";

export const TVM_COUNTERS = [
  "inp_load_nbytes",
  "wgt_load_nbytes",
  "acc_load_nbytes",
  "uop_load_nbytes",
  "out_store_nbytes",
  "gemm_counter",
  "alu_counter",
] as const;

export class VtaCounters {
  inp_load_nbytes = 0;
  wgt_load_nbytes = 0;
  acc_load_nbytes = 0;
  uop_load_nbytes = 0;
  out_store_nbytes = 0;
  gemm_counter = 0;
  alu_counter = 0;
  /** Estimated cycles, summed over device runs (timing.ts). */
  cycle_count = 0;
  /** Cycles each module spent executing instructions (not waiting for tokens). */
  load_busy_cycles = 0;
  compute_busy_cycles = 0;
  store_busy_cycles = 0;
  /** Device runs (one per VtaRun executed) and instructions executed. */
  runs = 0;
  instructions = 0;

  clear(): void {
    for (const k of Object.keys(this) as (keyof VtaCounters)[]) {
      if (typeof this[k] === "number") (this as unknown as Record<string, number>)[k] = 0;
    }
  }

  /** Adds `other`'s counts to these. */
  add(other: Readonly<VtaCounters>): void {
    const mine = this as unknown as Record<string, number>;
    for (const [k, v] of Object.entries(other)) if (typeof v === "number") mine[k]! += v;
  }

  toRecord(): Record<string, number> {
    const out: Record<string, number> = {};
    for (const [k, v] of Object.entries(this)) if (typeof v === "number") out[k] = v;
    return out;
  }
}

/**
 * Adds what executing `insns` once counts to TVM's seven counters, without
 * executing them: every counter depends only on instruction fields (the table
 * above), which is why a board whose hardware has no counters (an FPGA) can
 * report the same statistics as the simulator. The simulator's Executor counts
 * the same amounts as it executes.
 */
export function countStatically(hw: VtaHardware, insns: readonly DecodedInsn[], c: VtaCounters): void {
  for (const d of insns) {
    const moved = d.xSize * d.ySize;
    switch (d.kind) {
      case KIND.LOAD_INP:
        c.inp_load_nbytes += moved * hw.inpElemBytes;
        break;
      case KIND.LOAD_WGT:
        c.wgt_load_nbytes += moved * hw.wgtElemBytes;
        break;
      case KIND.LOAD_ACC:
      case KIND.LOAD_ACC8:
        c.acc_load_nbytes += moved * hw.accElemBytes;
        break;
      case KIND.LOAD_UOP:
        c.uop_load_nbytes += moved * hw.uopElemBytes;
        break;
      case KIND.STORE:
        c.out_store_nbytes += moved * hw.outElemBytes;
        break;
      case KIND.GEMM:
        c.gemm_counter += d.iterOut * d.iterIn * (d.uopEnd - d.uopBgn);
        break;
      case KIND.ALU:
        c.alu_counter += d.iterOut * d.iterIn * (d.uopEnd - d.uopBgn);
        break;
    }
  }
}
