/**
 * The `vta` board: a VTA accelerator driven through its registers, as TVM's
 * Pynq driver drives it — on a Zynq board (`vta:pynq`, `vta:ultra96`,
 * `vta:zcu104`: /dev/mem and a contiguous-memory allocator, linux.ts) or on
 * the register-level device model (`vta:model`, model.ts), which the same
 * driver code cannot tell from a board.
 *
 * It runs the bundles a `vta-sim` board runs, unchanged. Loading decodes and
 * checks every run once (the simulator's decoder, so the same errors) and
 * places its micro-ops; a call flushes the arguments' cache lines, relocates
 * each run's stream to the arguments' physical addresses in the instruction
 * buffer, starts the device and polls done, then invalidates what the device
 * stored. Statistics are TVM's seven, counted from the streams (identical to
 * the simulator's); timings are the board's clock around the done poll.
 */
import { FarmError, type FunctionSpec, type ModuleBundle } from "../../../protos/index.ts";
import { DEFAULT_VTA_HARDWARE, type VtaHardware } from "../../../vta/index.ts";
import type { ArgValue, Backend, BackendStats, BoardFacts, CanaryResult, DeviceArray, LoadedFunction, LoadedModule } from "../backend.ts";
import { vtaCapabilities } from "../vta-board/capabilities.ts";
import { runVtaCanary } from "../vta-board/canary.ts";
import { checkArgumentSizes, vtaBinaryOf } from "../vta-board/decode.ts";
import { VtaCounters } from "../vta-board/stats.ts";
import { resolveTiming } from "../vta-board/timing.ts";
import type { DmaBuffer, DmaMemory, RegisterBus } from "./bus.ts";
import { VtaMmioDriver } from "./driver.ts";
import { VtaDeviceModel } from "./model.ts";
import { prepareMmioProgram, releaseMmioProgram, relocateRun, type MmioProgram } from "./program.ts";
import { VTA_TARGETS, type VtaTarget } from "./registers.ts";

export const VTA_KIND = "vta";
/** The device of a `vta` board that is the register-level model rather than a board. */
export const MODEL_DEVICE = "model";
/** Instructions the instruction buffer holds by default (16 bytes each: 1 MiB). */
export const DEFAULT_INSN_BUFFER_BYTES = 1 << 20;

export interface VtaMmioBackendOptions {
  /** `model`, or the target whose registers to map (pynq, ultra96, zcu104). */
  device: string;
  hardware?: VtaHardware;
  /** The model's memory (a board's is its allocator's). */
  memoryBytes?: number;
  /** Which allocator on a board: `auto` (u-dma-buf's udmabuf0, then libcma), `cma`, or a u-dma-buf region's name. */
  dma?: string;
  doneTimeoutMs?: number;
  insnBufferBytes?: number;
  /** The model only: never raise done (`always`, or while the file at this path exists). */
  hang?: string;
}

/** The target a `vta` device names: the model stands for a Pynq-Z1. */
export function vtaTarget(device: string): VtaTarget {
  const target = VTA_TARGETS[device === MODEL_DEVICE ? "pynq" : device];
  if (!target) {
    throw new FarmError(
      "INVALID_ARGUMENT",
      `vta board device ${JSON.stringify(device)} is not known; give ${MODEL_DEVICE} (the device model) or a target: ${Object.keys(VTA_TARGETS).join(", ")}`,
    );
  }
  return target;
}

/** Registration facts: the VTA configuration, the device and its target's registers and clock. */
export function describeVtaBoard(device: string, hw: VtaHardware = DEFAULT_VTA_HARDWARE): BoardFacts {
  const target = vtaTarget(device);
  return {
    labels: { vta: hw.name, device },
    capabilities: {
      ...vtaCapabilities(hw),
      target: target.name,
      register_base: `0x${target.baseAddress.toString(16)}`,
      clock_mhz: String(target.clockMhz),
      ...(device === MODEL_DEVICE ? { model: "true" } : {}),
    },
  };
}

interface MmioLoadedFunction extends LoadedFunction {
  readonly program: MmioProgram;
}

/** A session's array: a DMA buffer, written and read through the CPU's view. */
class MmioArray implements DeviceArray {
  constructor(
    readonly dma: DmaBuffer,
    private readonly owner: Set<DmaBuffer>,
  ) {}

  get nbytes(): number {
    return this.dma.nbytes;
  }

  write(offset: number, data: Uint8Array): void {
    if (offset < 0 || offset + data.byteLength > this.dma.nbytes) {
      throw new FarmError("BAD_ARGUMENTS", `write of ${data.byteLength} bytes at offset ${offset} overruns a ${this.dma.nbytes}-byte VTA DMA buffer`);
    }
    this.dma.bytes.set(data, offset);
  }

  read(offset: number, length: number): Uint8Array {
    return this.dma.bytes.subarray(offset, offset + length);
  }

  free(): void {
    if (this.owner.delete(this.dma)) this.dma.free();
  }
}

export class VtaMmioBackend implements Backend {
  readonly loadsNativeCode = false;
  readonly kind = VTA_KIND;
  readonly target = "vta" as const;
  readonly hardware: VtaHardware;
  readonly driver: VtaMmioDriver;
  /** The model, when this board is one. */
  readonly model: VtaDeviceModel | undefined;
  private readonly memory: DmaMemory;
  private readonly bus: RegisterBus;
  private readonly insnBuffer: DmaBuffer;
  private readonly timing = resolveTiming();
  /** Buffers of this session (arrays and micro-ops), freed by reset. */
  private readonly owned = new Set<DmaBuffer>();
  private readonly programs = new Set<MmioProgram>();
  private readonly counters = new VtaCounters();
  private calls = 0;
  private callNs = 0;
  private deviceNs = 0;
  private modules = 0;

  constructor(opts: VtaMmioBackendOptions, open?: (target: VtaTarget, dma: string) => { bus: RegisterBus; memory: DmaMemory }) {
    this.hardware = opts.hardware ?? DEFAULT_VTA_HARDWARE;
    const target = vtaTarget(opts.device);
    if (opts.device === MODEL_DEVICE) {
      this.model = new VtaDeviceModel({ target, hardware: this.hardware, memoryBytes: opts.memoryBytes, hang: opts.hang });
      this.bus = this.model;
      this.memory = this.model;
    } else {
      if (!open) throw new FarmError("INTERNAL", "a vta board on hardware needs the Linux device layer (linux.ts)");
      ({ bus: this.bus, memory: this.memory } = open(target, opts.dma ?? "auto"));
    }
    this.driver = new VtaMmioDriver(this.bus, target, { doneTimeoutMs: opts.doneTimeoutMs });
    this.insnBuffer = this.memory.alloc(opts.insnBufferBytes ?? DEFAULT_INSN_BUFFER_BYTES);
  }

  get memoryBytes(): number {
    return this.memory.capacityBytes;
  }

  /** A device that timed out may still be running: this worker serves no other session, and the next one's canary re-checks the board. */
  get tainted(): boolean {
    return this.driver.hungSince !== undefined;
  }

  alloc(nbytes: number): DeviceArray {
    this.driver.assertLive();
    if (!Number.isInteger(nbytes) || nbytes < 0) throw new FarmError("BAD_ARGUMENTS", `cannot allocate ${nbytes} bytes of VTA DMA memory`);
    const dma = this.memory.alloc(nbytes);
    this.owned.add(dma);
    return new MmioArray(dma, this.owned);
  }

  load(bundle: ModuleBundle): LoadedModule {
    this.driver.assertLive();
    const hw = this.hardware;
    const binary = vtaBinaryOf(bundle, hw, `this board is ${hw.name}`);
    const functions = new Map<string, MmioLoadedFunction>();
    const prepared: MmioProgram[] = [];
    try {
      for (const spec of bundle.functions) {
        const program = prepareMmioProgram(
          hw,
          this.timing,
          this.memory,
          binary,
          spec.name,
          spec.params.map((p) => ({ name: p.name, kind: p.kind })),
        );
        prepared.push(program);
        const capacity = this.insnBuffer.nbytes / 16;
        const longest = program.runs.find((r) => r.count > capacity);
        if (longest) {
          throw new FarmError(
            "LOAD_ERROR",
            `VTA function "${spec.name}", run ${longest.index}: ${longest.count} instructions (${longest.count * 16} bytes) do not fit the board's instruction buffer of ${capacity} instructions (${this.insnBuffer.nbytes} bytes); split the work into more runs or give the board a larger insn_buffer`,
          );
        }
        functions.set(spec.name, { spec, program });
      }
    } catch (err) {
      for (const p of prepared) releaseMmioProgram(p);
      throw err;
    }
    for (const p of prepared) {
      this.programs.add(p);
      for (const r of p.runs) if (r.uopBuffer) this.owned.add(r.uopBuffer);
    }
    this.modules++;
    return { functions };
  }

  invoke(fn: LoadedFunction, args: readonly ArgValue[]): void {
    this.call(fn as MmioLoadedFunction, args);
  }

  /** The device's nanoseconds (the board's clock around each done poll) of `number` calls. */
  timeCalls(fn: LoadedFunction, args: readonly ArgValue[], number: number): number {
    let ns = 0;
    for (let i = 0; i < number; i++) ns += this.call(fn as MmioLoadedFunction, args);
    return ns;
  }

  stats(): BackendStats {
    return {
      counters: {
        ...this.counters.toRecord(),
        calls: this.calls,
        call_ns_total: this.callNs,
        device_ns_total: this.deviceNs,
        dram_bytes_in_use: [...this.owned].reduce((n, b) => n + b.nbytes, 0),
      },
      info: {
        kind: this.kind,
        hardware: this.hardware.name,
        device: this.model ? MODEL_DEVICE : this.driver.target.name,
        dma: this.memory.description,
        modules: String(this.modules),
      },
    };
  }

  clearStats(): void {
    this.counters.clear();
    this.calls = 0;
    this.callNs = 0;
    this.deviceNs = 0;
  }

  /** The same one-block GEMM as the simulator's, checked exactly, through the driver; timed by the board's clock. */
  canary(): CanaryResult {
    return runVtaCanary(this);
  }

  reset(): void {
    for (const b of this.owned) b.free();
    this.owned.clear();
    this.programs.clear();
    this.clearStats();
    this.modules = 0;
  }

  /** One call: every run of the function in turn; returns the device's nanoseconds. */
  private call(fn: MmioLoadedFunction, args: readonly ArgValue[]): number {
    const { program, spec } = fn;
    this.driver.assertLive();
    if (program.error) throw program.error;
    const buffers = this.buffers(spec, args);
    checkArgumentSizes(
      program,
      buffers.map((b) => b?.nbytes),
    );
    const phys = buffers.map((b) => b?.phys ?? 0);
    const t0 = process.hrtime.bigint();
    let deviceNs = 0;
    for (const p of program.touched) buffers[p]!.flushForDevice();
    for (const run of program.runs) {
      relocateRun(this.hardware, run, phys, this.insnBuffer.bytes);
      this.insnBuffer.flushForDevice(0, run.count * 16);
      deviceNs += this.driver.run(this.insnBuffer.phys, run.count).ns;
    }
    for (const p of program.stored) buffers[p]!.invalidateForCpu();
    const t1 = process.hrtime.bigint();
    this.counters.add(program.counters);
    this.counters.runs += program.runs.length;
    this.counters.instructions += program.runs.reduce((n, r) => n + r.count, 0);
    this.calls++;
    this.callNs += Number(t1 - t0);
    this.deviceNs += deviceNs;
    return deviceNs;
  }

  private buffers(spec: FunctionSpec, args: readonly ArgValue[]): (DmaBuffer | undefined)[] {
    return args.map((a, i) => {
      if (a.kind !== "buffer") return undefined;
      if (!(a.array instanceof MmioArray) || !this.owned.has(a.array.dma)) {
        throw new FarmError("BAD_ARGUMENTS", `argument ${i} (${spec.params[i]?.name ?? "?"}) of ${spec.name} is not an array of this VTA board`);
      }
      return a.array.dma;
    });
  }
}
