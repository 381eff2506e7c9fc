/**
 * What the driver API cannot tell: the clocks a GPU runs at right now, its
 * temperature and why it is throttled. Read through NVML
 * (`libnvidia-ml.so.1`, installed with the driver) when it is there; without
 * it, timings carry the driver's nominal clocks and say so.
 */
import koffi from "koffi";

type Fn = (...args: unknown[]) => number;

const NVML_CLOCK_SM = 1;
const NVML_CLOCK_MEM = 2;
const NVML_TEMPERATURE_GPU = 0;

export interface LiveConditions {
  sm_clock_mhz: string;
  mem_clock_mhz: string;
  temperature_c: string;
  /** nvmlClocksEventReasons bit mask in hex; 0x0 or 0x1 (idle) means not throttled. */
  clock_event_reasons: string;
  clock_source: "nvml";
}

export class Nvml {
  private constructor(
    private readonly f: Record<string, Fn>,
    private readonly handle: bigint,
  ) {}

  /** NVML for the device at `pciBusId`, or undefined when NVML is missing or does not know it. */
  static open(pciBusId: string): Nvml | undefined {
    let lib: ReturnType<typeof koffi.load>;
    try {
      lib = koffi.load("libnvidia-ml.so.1");
    } catch {
      return undefined;
    }
    try {
      const f: Record<string, Fn> = {
        init: lib.func("nvmlInit_v2", "int", []) as Fn,
        byBus: lib.func("nvmlDeviceGetHandleByPciBusId_v2", "int", ["const char *", "void *"]) as Fn,
        clock: lib.func("nvmlDeviceGetClockInfo", "int", ["uint64_t", "int", "void *"]) as Fn,
        temperature: lib.func("nvmlDeviceGetTemperature", "int", ["uint64_t", "int", "void *"]) as Fn,
        reasons: lib.func("nvmlDeviceGetCurrentClocksThrottleReasons", "int", ["uint64_t", "void *"]) as Fn,
      };
      if (f.init!() !== 0) return undefined;
      const out = Buffer.alloc(8);
      if (f.byBus!(pciBusId, out) !== 0) return undefined;
      return new Nvml(f, out.readBigUInt64LE(0));
    } catch {
      return undefined;
    }
  }

  private read(fn: string, ...args: unknown[]): string {
    const out = Buffer.alloc(8);
    return this.f[fn]!(this.handle, ...args, out) === 0 ? String(out.readUInt32LE(0)) : "unknown";
  }

  now(): LiveConditions {
    const reasons = Buffer.alloc(8);
    const ok = this.f.reasons!(this.handle, reasons) === 0;
    return {
      sm_clock_mhz: this.read("clock", NVML_CLOCK_SM),
      mem_clock_mhz: this.read("clock", NVML_CLOCK_MEM),
      temperature_c: this.read("temperature", NVML_TEMPERATURE_GPU),
      clock_event_reasons: ok ? `0x${reasons.readBigUInt64LE(0).toString(16)}` : "unknown",
      clock_source: "nvml",
    };
  }
}
