/**
 * What the driver API cannot tell: the clocks a GPU runs at right now, its
 * temperature and why it is throttled. Read through NVML
 * (`libnvidia-ml.so.1`, installed with the driver) when it is there; without
 * it, timings carry the driver's nominal clocks and say so.
 */
import koffi from "koffi";
import type { ThrottleSample } from "../../../domain/index.ts";

type Fn = (...args: unknown[]) => number;

const NVML_CLOCK_SM = 1;
const NVML_CLOCK_MEM = 2;
const NVML_TEMPERATURE_GPU = 0;
/** nvmlPerfPolicyType_t: how long the power, or the thermal, limit held the clocks below application clocks. */
const NVML_PERF_POLICY_POWER = 0;
const NVML_PERF_POLICY_THERMAL = 1;
const NVML_SUCCESS = 0;

export interface LiveClocks {
  sm_clock_mhz: string;
  mem_clock_mhz: string;
  temperature_c: string;
  clock_source: "nvml";
}

export class Nvml {
  private constructor(
    private readonly f: Record<string, Fn | undefined>,
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
    // A function this NVML does not export (older or newer than the name): undefined, and what it would tell is "unknown".
    const optional = (name: string, args: string[]): Fn | undefined => {
      try {
        return lib.func(name, "int", args) as Fn;
      } catch {
        return undefined;
      }
    };
    try {
      const f: Record<string, Fn | undefined> = {
        init: lib.func("nvmlInit_v2", "int", []) as Fn,
        byBus: lib.func("nvmlDeviceGetHandleByPciBusId_v2", "int", ["const char *", "void *"]) as Fn,
        clock: optional("nvmlDeviceGetClockInfo", ["uint64_t", "int", "void *"]),
        temperature: optional("nvmlDeviceGetTemperature", ["uint64_t", "int", "void *"]),
        // Renamed in R535; the old name is still exported (deprecated), and is all an older driver has.
        reasons:
          optional("nvmlDeviceGetCurrentClocksEventReasons", ["uint64_t", "void *"]) ??
          optional("nvmlDeviceGetCurrentClocksThrottleReasons", ["uint64_t", "void *"]),
        // nvmlViolationTime_t: { unsigned long long referenceTime (µs); unsigned long long violationTime (ns) }.
        violation: optional("nvmlDeviceGetViolationStatus", ["uint64_t", "int", "void *"]),
      };
      if (f.init!() !== NVML_SUCCESS) return undefined;
      const out = Buffer.alloc(8);
      if (f.byBus!(pciBusId, out) !== NVML_SUCCESS) return undefined;
      return new Nvml(f, out.readBigUInt64LE(0));
    } catch {
      return undefined;
    }
  }

  private read(fn: string, ...args: unknown[]): string {
    const out = Buffer.alloc(8);
    return this.f[fn]?.(this.handle, ...args, out) === NVML_SUCCESS ? String(out.readUInt32LE(0)) : "unknown";
  }

  /** Clocks and temperature now. */
  clocks(): LiveClocks {
    return {
      sm_clock_mhz: this.read("clock", NVML_CLOCK_SM),
      mem_clock_mhz: this.read("clock", NVML_CLOCK_MEM),
      temperature_c: this.read("temperature", NVML_TEMPERATURE_GPU),
      clock_source: "nvml",
    };
  }

  /** The clocks-event-reasons mask and the power and thermal violation counters now (domain/throttle.ts reads them). */
  throttle(): ThrottleSample {
    const reasons = Buffer.alloc(8);
    const sample: ThrottleSample = {};
    if (this.f.reasons?.(this.handle, reasons) === NVML_SUCCESS) sample.reasons = reasons.readBigUInt64LE(0);
    const power = this.violationNs(NVML_PERF_POLICY_POWER);
    if (power !== undefined) sample.powerViolationNs = power;
    const thermal = this.violationNs(NVML_PERF_POLICY_THERMAL);
    if (thermal !== undefined) sample.thermalViolationNs = thermal;
    return sample;
  }

  /** Cumulative ns the policy's limit held the clocks down; undefined where this GPU does not count it (NVML_ERROR_NOT_SUPPORTED). */
  private violationNs(policy: number): bigint | undefined {
    const out = Buffer.alloc(16);
    return this.f.violation?.(this.handle, policy, out) === NVML_SUCCESS ? out.readBigUInt64LE(8) : undefined;
  }
}
