/**
 * What a board kind provides to a session worker. One Backend instance lives
 * in one worker process and serves its sessions one after another.
 */
import type { BOARD_KINDS, BundleTarget, FunctionSpec, LaunchConfig, ModuleBundle } from "../../protos/index.ts";
import type { CudaLaunchLimits } from "../../domain/index.ts";

/** A kind an agent serves: contract.json's boardKinds, the one table of them (protos/enums.ts adds the tracker's tvm-rpc). */
export type BoardKind = (typeof BOARD_KINDS)[number];

/** Memory on the board holding one remote array. */
export interface DeviceArray {
  readonly nbytes: number;
  write(offset: number, data: Uint8Array): void;
  /** Bytes [offset, offset+length): may be a view, valid until the next call. */
  read(offset: number, length: number): Uint8Array;
  free(): void;
}

/** A checked argument, ready for the backend. */
export type ArgValue = { kind: "buffer"; array: DeviceArray } | { kind: "scalar"; value: number };

/** How one call or timing runs, beyond its arguments: CUDA boards take the first three, CPU boards the last. */
export interface CallSettings {
  /** Overrides the bundle's launch configuration. */
  launch?: LaunchConfig;
  /** timeCalls: overwrite L2 before the timed launches. */
  flushL2?: boolean;
  /** timeCalls: replay the launches as one captured graph. */
  graph?: boolean;
  /** timeCalls: evict every buffer argument but the first from the CPU caches first. */
  flushCpuCache?: boolean;
}

export interface LoadedFunction {
  readonly spec: FunctionSpec;
}

export interface LoadedModule {
  readonly functions: ReadonlyMap<string, LoadedFunction>;
}

export interface BackendStats {
  counters: Record<string, number>;
  info: Record<string, string>;
}

export interface Backend {
  readonly kind: BoardKind;
  readonly target: BundleTarget;
  /** What one session may allocate in total. */
  readonly memoryBytes: number;
  alloc(nbytes: number): DeviceArray;
  /** Loads a validated bundle whose target is this backend's. */
  load(bundle: ModuleBundle, workdir: string): LoadedModule;
  /** Runs the function once, synchronously, to completion. */
  invoke(fn: LoadedFunction, args: readonly ArgValue[], call?: CallSettings): void;
  /** Runs it `number` times back to back and returns the elapsed nanoseconds
   * measured next to the device (CPU: a monotonic clock around the loop; CUDA: events). */
  timeCalls(fn: LoadedFunction, args: readonly ArgValue[], number: number, call?: CallSettings): number;
  /**
   * True where load() runs a tenant's native code in this process (a shared
   * object's constructors, a CUDA module in this process's context): the
   * worker tells its agent before the first load, and from then on the agent
   * believes nothing of it beyond its own session (device-agent/agent/pool.ts).
   * False where a module is data an interpreter or a device runs (VTA).
   */
  readonly loadsNativeCode: boolean;
  /** True when this process must not serve another session (foreign code loaded, a device left hung). */
  readonly tainted: boolean;
  stats(): BackendStats;
  /**
   * Watches the board over a timing: called before the timed runs, the
   * function it returns is called after them and gives the conditions the
   * result carries (CUDA: clocks, and NVML's throttle reasons and violation
   * counters at both ends, so throttling that came and went in between is
   * seen). A board without it: a result carries stats().info taken after.
   */
  watchConditions?(): () => Record<string, string>;
  clearStats(): void;
  /** Frees what a session left behind, before the next session. */
  reset(): void;
  /**
   * The board's canary: a tiny known kernel with a known answer, run through
   * the same path sessions use, with trusted code (it does not taint the
   * worker). Undefined: this board has no canary configured.
   */
  canary(): CanaryResult | undefined;
}

export interface CanaryResult {
  ok: boolean;
  /** What was checked, or what came out wrong. */
  detail: string;
  /**
   * A passing canary: its kernel's time per run in nanoseconds, measured next
   * to the device (backends/canary-timing.ts); undefined: not timed.
   */
  kernelNs?: number;
}

/** Board facts reported at registration (computed in the agent, not the worker). */
export interface BoardFacts {
  labels: Record<string, string>;
  capabilities: Record<string, string>;
  /** A CUDA board's launch limits: typed in the registration (BoardSpec.cuda_limits), not among the capabilities. */
  cudaLimits?: CudaLaunchLimits;
}
