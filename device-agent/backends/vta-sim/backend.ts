/**
 * The `vta-sim` board: VTA bundles run on the functional simulator in the
 * session worker. Loading a module decodes and checks every run of every
 * function once (decode.ts) and places its micro-op buffers; a call only
 * places its arguments per the program's relocations and executes the
 * decoded runs. Arrays are buffers in the simulator's DRAM; the stats are
 * TVM's simulator counters plus the cycle estimate.
 */
import { FarmError, type FunctionSpec, type ModuleBundle } from "../../../protos/index.ts";
import { DEFAULT_VTA_HARDWARE, type VtaHardware } from "../../../vta/index.ts";
import { vtaCapabilities } from "../vta-board/capabilities.ts";
import type { ArgValue, Backend, BackendStats, BoardFacts, CanaryResult, DeviceArray, LoadedFunction, LoadedModule } from "../backend.ts";
import { runVtaCanary } from "../vta-board/canary.ts";
import { vtaBinaryOf } from "../vta-board/decode.ts";
import { DramBuffer } from "./dram.ts";
import { VtaSimulator, type VtaProgram, type VtaSimulatorOptions } from "./simulator.ts";
import { busBytesPerCycle, resolveTiming } from "../vta-board/timing.ts";

export const VTA_SIM_KIND = "vta-sim";

/** Registration facts: the hardware name as label `vta`, buffer sizes as capabilities. */
export function describeVtaSimBoard(hw: VtaHardware = DEFAULT_VTA_HARDWARE): BoardFacts {
  return {
    labels: { vta: hw.name, sim: "true" },
    capabilities: { ...vtaCapabilities(hw), bus_bytes_per_cycle: String(busBytesPerCycle(resolveTiming())) },
  };
}

interface VtaLoadedFunction extends LoadedFunction {
  readonly program: VtaProgram;
}

export type VtaSimBackendOptions = VtaSimulatorOptions;

export class VtaSimBackend implements Backend {
  readonly loadsNativeCode = false;
  readonly kind = VTA_SIM_KIND;
  readonly target = "vta" as const;
  readonly memoryBytes: number;
  /** Only data is loaded, never code: a worker can serve session after session. */
  readonly tainted = false;
  readonly sim: VtaSimulator;
  private calls = 0;
  private callNs = 0;
  private modules = 0;

  constructor(opts: VtaSimBackendOptions = {}) {
    this.sim = new VtaSimulator(opts);
    this.memoryBytes = this.sim.dram.capacityBytes;
  }

  get hardware(): VtaHardware {
    return this.sim.hw;
  }

  alloc(nbytes: number): DeviceArray {
    return this.sim.dram.alloc(nbytes);
  }

  load(bundle: ModuleBundle): LoadedModule {
    const binary = vtaBinaryOf(bundle, this.sim.hw, `this board simulates ${this.sim.hw.name}`);
    const functions = new Map<string, VtaLoadedFunction>();
    const programs: VtaProgram[] = [];
    try {
      for (const spec of bundle.functions) {
        const program = this.sim.prepare(
          binary,
          spec.name,
          spec.params.map((p) => ({ name: p.name, kind: p.kind })),
        );
        programs.push(program);
        functions.set(spec.name, { spec, program });
      }
    } catch (err) {
      for (const p of programs) this.sim.release(p);
      throw err;
    }
    this.modules++;
    return { functions };
  }

  invoke(fn: LoadedFunction, args: readonly ArgValue[]): void {
    const program = (fn as VtaLoadedFunction).program;
    const buffers = this.buffers(fn.spec, args);
    const t0 = process.hrtime.bigint();
    try {
      this.sim.call(program, buffers);
    } finally {
      this.callNs += Number(process.hrtime.bigint() - t0);
      this.calls++;
    }
  }

  /** Wall-clock nanoseconds of `number` simulated calls (the simulated cycle estimate is in stats). */
  timeCalls(fn: LoadedFunction, args: readonly ArgValue[], number: number): number {
    const program = (fn as VtaLoadedFunction).program;
    const buffers = this.buffers(fn.spec, args);
    const t0 = process.hrtime.bigint();
    let done = 0;
    let ns: number;
    try {
      for (; done < number; done++) this.sim.call(program, buffers);
    } finally {
      ns = Number(process.hrtime.bigint() - t0);
      this.calls += done;
      this.callNs += ns;
    }
    return ns;
  }

  stats(): BackendStats {
    return {
      counters: { ...this.sim.counters.toRecord(), calls: this.calls, call_ns_total: this.callNs, dram_bytes_in_use: this.sim.dram.usedBytes },
      info: {
        kind: this.kind,
        hardware: this.sim.hw.name,
        gemm_engine: this.sim.core.engine,
        modules: String(this.modules),
        // Loads decode, calls only execute: this counts loads' work, not calls'.
        runs_decoded: String(this.sim.runsDecoded),
      },
    };
  }

  clearStats(): void {
    this.sim.counters.clear();
    this.calls = 0;
    this.callNs = 0;
  }

  /**
   * A one-block GEMM (canary.ts): output and TVM's statistics checked exactly;
   * runs only on an idle board. Timed on the simulator, so its drift is this
   * host's CPU's.
   */
  canary(): CanaryResult {
    return runVtaCanary(this);
  }

  reset(): void {
    this.sim.reset();
    this.calls = 0;
    this.callNs = 0;
    this.modules = 0;
  }

  private buffers(spec: FunctionSpec, args: readonly ArgValue[]): (DramBuffer | undefined)[] {
    return args.map((a, i) => {
      if (a.kind !== "buffer") return undefined;
      if (!(a.array instanceof DramBuffer)) {
        throw new FarmError("BAD_ARGUMENTS", `argument ${i} (${spec.params[i]?.name ?? "?"}) of ${spec.name} is not an array of this VTA board`);
      }
      return a.array;
    });
  }
}
