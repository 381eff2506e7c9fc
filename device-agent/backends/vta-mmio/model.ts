/**
 * The register-level device model: the VTA simulator behind the same
 * registers and DMA memory a board has, so that the real mmio driver runs
 * unmodified against it (tests and CI have no FPGA).
 *
 * Registers are the four modules' windows of registers.ts; memory is the
 * simulator's DRAM, and each buffer has a CPU view apart from the device's
 * bytes, joined only by `flushForDevice` and `invalidateForCpu`, as caches
 * would: a driver that forgets either computes on stale bytes here too. A run
 * starts when fetch has been started and load, compute and store started
 * with auto-restart; it executes at once, and done shows after
 * `pollsUntilDone` reads of a done register.
 *
 * The model is strict, each offence a RUNTIME_ERROR naming it: a register
 * outside the map, a start without an instruction address or count, an
 * instruction fetch or data DMA outside allocated memory, a start while a run
 * is in flight, and the CPU flushing or invalidating a buffer before compute's
 * done register has read 1.
 */
import { existsSync } from "node:fs";
import { FarmError } from "../../../protos/index.ts";
import type { VtaHardware } from "../../../vta/index.ts";
import type { DramBuffer } from "../vta-sim/dram.ts";
import { VtaSimulator } from "../vta-sim/simulator.ts";
import type { DmaBuffer, DmaMemory, RegisterBus } from "./bus.ts";
import {
  ARG,
  CONTROL,
  CTRL_AUTO_RESTART,
  CTRL_DONE,
  CTRL_START,
  MODULES,
  VTA_DONE,
  VTA_IP_REG_MAP_RANGE,
  VTA_TARGETS,
  registerAddress,
  registerName,
  type VtaModule,
  type VtaTarget,
} from "./registers.ts";

/** The Pynq-Z1's memory. */
export const DEFAULT_MODEL_MEMORY_BYTES = 512 << 20;

export interface VtaDeviceModelOptions {
  target?: VtaTarget;
  hardware?: VtaHardware;
  memoryBytes?: number;
  /** Reads of a done register before done shows (default 2), so the driver's poll loop runs. */
  pollsUntilDone?: number;
  /**
   * A device that never raises done, for tests of the driver's timeout:
   * `always`, or a path: a run started while that file exists hangs.
   */
  hang?: string;
}

type RunState = "idle" | "running" | "done";

const hex = (n: number) => `0x${n.toString(16).padStart(8, "0")}`;

export class VtaDeviceModel implements RegisterBus, DmaMemory {
  readonly sim: VtaSimulator;
  readonly target: VtaTarget;
  readonly description = "device model (the VTA simulator behind registers and DMA)";
  /** Runs executed, for tests. */
  runs = 0;
  private readonly regs = new Map<number, number>();
  private readonly started = new Set<VtaModule>();
  private state: RunState = "idle";
  private pollsLeft = 0;
  private hanging = false;
  private readonly pollsUntilDone: number;

  constructor(private readonly opts: VtaDeviceModelOptions = {}) {
    this.target = opts.target ?? VTA_TARGETS.pynq!;
    this.sim = new VtaSimulator({ hardware: opts.hardware, memoryBytes: opts.memoryBytes ?? DEFAULT_MODEL_MEMORY_BYTES });
    this.pollsUntilDone = opts.pollsUntilDone ?? 2;
    for (const m of MODULES) {
      this.regs.set(registerAddress(this.target, m, CONTROL), 0);
      for (const offset of Object.values(ARG[m])) this.regs.set(registerAddress(this.target, m, offset), 0);
    }
  }

  get capacityBytes(): number {
    return this.sim.dram.capacityBytes;
  }

  // ------------------------------------------------------------------ RegisterBus

  read32(phys: number): number {
    const [m, offset] = this.locate(phys, "read");
    if (m === "fetch" && offset === CONTROL) {
      if (this.state === "running" && this.poll()) return CTRL_DONE;
      return this.state === "running" ? CTRL_START : this.state === "done" ? CTRL_DONE : 0;
    }
    if (m === "compute" && offset === ARG.compute.doneRead) {
      if (this.state === "running" && this.poll()) this.state = "done";
      return this.state === "done" ? VTA_DONE : 0;
    }
    return this.regs.get(phys)!;
  }

  write32(phys: number, value: number): void {
    const [m, offset] = this.locate(phys, "write");
    if (!Number.isInteger(value) || value < 0 || value > 0xffffffff) this.offence(`write of ${value} to ${registerName(m, offset)}: not a 32-bit value`);
    if (offset !== CONTROL) {
      if (this.state === "running") this.offence(`write to ${registerName(m, offset)} while a run is in flight`);
      this.regs.set(phys, value);
      return;
    }
    if (value === 0) {
      if (this.state === "running") this.offence(`${m} stopped (control 0) while a run is in flight, before compute's done register read 1`);
      this.started.delete(m);
      if (this.started.size === 0) this.state = "idle";
      return;
    }
    const want = m === "fetch" ? CTRL_START : CTRL_START | CTRL_AUTO_RESTART;
    if (value !== want)
      this.offence(
        `control 0x${value.toString(16)} written to ${m}; the driver starts fetch with 0x${CTRL_START.toString(16)} and the others with 0x${want.toString(16)}`,
      );
    if (this.state === "running") this.offence(`${m} started while a run is in flight`);
    if (m === "fetch") {
      const count = this.regs.get(registerAddress(this.target, "fetch", ARG.fetch.insnCount))!;
      const addr = this.regs.get(registerAddress(this.target, "fetch", ARG.fetch.insnAddr))!;
      if (addr === 0) this.offence("fetch started without an instruction address (fetch+0x18 is 0)");
      if (count === 0) this.offence("fetch started with an instruction count of 0 (fetch+0x10)");
    }
    if (this.state === "done") {
      this.state = "idle";
      this.started.clear();
    }
    this.started.add(m);
    if (this.started.size === MODULES.length) this.execute();
  }

  close(): void {}

  // ------------------------------------------------------------------ DmaMemory

  alloc(nbytes: number): DmaBuffer {
    return new ModelBuffer(this, this.sim.dram.alloc(nbytes), nbytes);
  }

  /** @internal a buffer's CPU access, refused while a run is in flight. */
  checkCpuAccess(what: string, buf: ModelBuffer): void {
    if (this.state === "running") this.offence(`${what} of the buffer at ${hex(buf.phys)} while a run is in flight (before compute's done register read 1)`);
  }

  /** Frees everything (between sessions). */
  reset(): void {
    if (this.state === "running") this.offence("reset while a run is in flight");
    this.sim.reset();
    this.started.clear();
    this.state = "idle";
  }

  // ------------------------------------------------------------------ inside

  private execute(): void {
    const count = this.regs.get(registerAddress(this.target, "fetch", ARG.fetch.insnCount))!;
    const addr = this.regs.get(registerAddress(this.target, "fetch", ARG.fetch.insnAddr))!;
    const end = addr + count * 16;
    const buf = this.sim.dram.find(addr);
    if (!buf || end > buf.phys + buf.nbytes) {
      this.offence(`instruction fetch of ${count} instructions at [${hex(addr)}, ${hex(end)}) lies outside allocated memory`);
    }
    this.state = "running";
    this.pollsLeft = this.pollsUntilDone;
    const hang = this.opts.hang;
    this.hanging = hang === "always" || (hang !== undefined && existsSync(hang));
    this.runs++;
    try {
      this.sim.runStream(buf.bytes.subarray(addr - buf.phys, end - buf.phys), `stream of ${count} instructions at ${hex(addr)}`);
    } catch (err) {
      this.state = "idle";
      this.started.clear();
      throw new FarmError("RUNTIME_ERROR", `VTA device model: ${(err as Error).message}`, { cause: err });
    }
  }

  /** One read of a done register: true once done shows. */
  private poll(): boolean {
    if (this.hanging) return false;
    return --this.pollsLeft <= 0;
  }

  private locate(phys: number, access: string): [VtaModule, number] {
    const base = this.target.baseAddress;
    const span = MODULES.length * VTA_IP_REG_MAP_RANGE;
    if (!Number.isInteger(phys) || phys < base || phys >= base + span) {
      this.offence(`${access} at ${hex(phys)}, outside VTA's register windows [${hex(base)}, ${hex(base + span)})`);
    }
    const m = MODULES[Math.floor((phys - base) / VTA_IP_REG_MAP_RANGE)]!;
    const offset = (phys - base) % VTA_IP_REG_MAP_RANGE;
    if (!this.regs.has(phys)) this.offence(`${access} of unmapped register ${m}+0x${offset.toString(16)} (${hex(phys)})`);
    return [m, offset];
  }

  private offence(what: string): never {
    throw new FarmError("RUNTIME_ERROR", `VTA device model: ${what}`);
  }
}

/** A model buffer: the device's bytes in the simulator's DRAM, and the CPU's view apart from them. */
class ModelBuffer implements DmaBuffer {
  readonly bytes: Uint8Array<ArrayBuffer>;
  readonly phys: number;

  constructor(
    private readonly model: VtaDeviceModel,
    private readonly device: DramBuffer,
    readonly nbytes: number,
  ) {
    this.phys = device.phys;
    this.bytes = new Uint8Array(nbytes);
  }

  flushForDevice(offset = 0, length = this.nbytes - offset): void {
    this.model.checkCpuAccess("flush", this);
    this.device.bytes.set(this.bytes.subarray(offset, offset + length), offset);
  }

  invalidateForCpu(offset = 0, length = this.nbytes - offset): void {
    this.model.checkCpuAccess("invalidate", this);
    this.bytes.set(this.device.bytes.subarray(offset, offset + length), offset);
  }

  free(): void {
    this.device.free();
  }
}
