/**
 * VTA's control registers as TVM's Pynq driver drives them
 * (docs/vta-isa.md §11, from apache/tvm-vta `src/pynq/pynq_driver.{h,cc}`
 * and `config/pkg_config.py`). Each of the four modules is an HLS block with
 * an AXI-lite window of VTA_IP_REG_MAP_RANGE bytes, the four one after another
 * from the target's base address.
 */

/** Bytes of one module's register window. */
export const VTA_IP_REG_MAP_RANGE = 0x1000;

/** The modules, in the order of their windows. */
export const MODULES = ["fetch", "load", "compute", "store"] as const;
export type VtaModule = (typeof MODULES)[number];

/** Offset 0x00 of every window: the HLS block-level control register. */
export const CONTROL = 0x00;
export const CTRL_START = 0x1;
export const CTRL_DONE = 0x2;
export const CTRL_AUTO_RESTART = 0x80;

/** Argument registers, by module (8 bytes apart from 0x10). */
export const ARG = {
  fetch: { insnCount: 0x10, insnAddr: 0x18 },
  load: { inpAddr: 0x10, wgtAddr: 0x18 },
  compute: { doneWrite: 0x10, doneRead: 0x18, uopAddr: 0x20, biasAddr: 0x28 },
  store: { outAddr: 0x10 },
} as const;

/** What compute's done-read register holds when a run has finished. */
export const VTA_DONE = 1;

/** A board built with TVM's VTA for the Pynq software stack: where the registers are and how fast it runs. */
export interface VtaTarget {
  /** TVM's TARGET name. */
  readonly name: string;
  /** Physical address of fetch's window; load, compute and store follow. */
  readonly baseAddress: number;
  readonly clockMhz: number;
  /** The board's CPU, as `uname -m` names it. */
  readonly cpu: string;
}

/** The targets TVM builds for the Pynq driver (docs/vta-isa.md §11; de10nano has a driver of its own). */
export const VTA_TARGETS: Readonly<Record<string, VtaTarget>> = {
  pynq: { name: "pynq", baseAddress: 0x43c00000, clockMhz: 100, cpu: "armv7l" },
  ultra96: { name: "ultra96", baseAddress: 0xa0000000, clockMhz: 333, cpu: "aarch64" },
  zcu104: { name: "zcu104", baseAddress: 0xa0000000, clockMhz: 333, cpu: "aarch64" },
};

/** Physical address of a module's register at `offset`. */
export function registerAddress(target: VtaTarget, module: VtaModule, offset: number): number {
  return target.baseAddress + MODULES.indexOf(module) * VTA_IP_REG_MAP_RANGE + offset;
}

/** `fetch+0x18 (insn address)`: how errors name a register. */
export function registerName(module: VtaModule, offset: number): string {
  const args = ARG[module] as Record<string, number>;
  const name = offset === CONTROL ? "control" : Object.entries(args).find(([, o]) => o === offset)?.[0];
  return `${module}+0x${offset.toString(16).padStart(2, "0")}${name ? ` (${name})` : ""}`;
}
