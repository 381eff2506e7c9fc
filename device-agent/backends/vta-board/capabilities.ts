/**
 * What every VTA board shares, simulated (vta-sim) or real (vta-mmio: an
 * FPGA through its registers, or the device model): this folder holds the
 * program decoder, the timing model, the counters, the dependency tokens,
 * the canary and, here, the registration facts.
 */
import type { VtaHardware } from "../../../vta/index.ts";

/** A VTA board's configuration as capabilities: its name, GEMM shape and buffer sizes (every VTA board registers them). */
export function vtaCapabilities(hw: VtaHardware): Record<string, string> {
  return {
    hardware: hw.name,
    batch: String(hw.batch),
    block_in: String(hw.blockIn),
    block_out: String(hw.blockOut),
    inp_buffer_bytes: String(hw.inpDepth * hw.inpElemBytes),
    wgt_buffer_bytes: String(hw.wgtDepth * hw.wgtElemBytes),
    acc_buffer_bytes: String(hw.accDepth * hw.accElemBytes),
    uop_buffer_bytes: String(hw.uopDepth * hw.uopElemBytes),
  };
}
