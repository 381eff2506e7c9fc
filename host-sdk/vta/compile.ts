/**
 * The VTA host compiler: kernel descriptions (workload + schedule) in, a
 * module bundle (target "vta") out. Each kernel is lowered to the runtime
 * call sequence TVM's VTA passes would produce (lowered.ts + a template),
 * replayed against the runtime emulation (vta/runtime.ts) once, as one call
 * of the compiled function, and the resulting device runs become the
 * function's program.
 */
import { BUNDLE_FORMAT, BUNDLE_VERSION, FarmError, bundleDigest, encodeBundle, type FunctionSpec, type ParamSpec } from "../../protos/index.ts";
import {
  DEFAULT_VTA_HARDWARE,
  VtaCommandQueue,
  VtaRuntimeError,
  encodeVtaBinary,
  streamStats,
  type QueueId,
  type VtaBinary,
  type VtaFunction,
  type VtaHardware,
  type VtaStreamStats,
} from "../../vta/index.ts";
import type { CompiledModule } from "../compiled-module.ts";
import { checkRecord, invalidOption, shown } from "../options.ts";
import { conv2dParams, lowerConv2d, resolveConv2d, type ResolvedConv2d, type VtaConv2dSchedule, type VtaConv2dWorkload } from "./conv2d.ts";
import {
  elementwiseParams,
  lowerElementwise,
  resolveElementwise,
  type ResolvedElementwise,
  type VtaElementwiseSchedule,
  type VtaElementwiseWorkload,
} from "./elementwise.ts";
import { runLowered, type TrailingPops } from "./lowered.ts";
import type { Stmt } from "./stmt.ts";
import { lowerMatmul, matmulParams, resolveMatmul, type ResolvedMatmul, type VtaMatmulSchedule, type VtaMatmulWorkload } from "./matmul.ts";

/** One function of a VTA module: what it computes and how it is scheduled (missing knobs are chosen for you). */
export type VtaKernelSpec =
  | { kind: "conv2d"; name?: string; workload: VtaConv2dWorkload; schedule?: Partial<VtaConv2dSchedule> }
  | { kind: "matmul"; name?: string; workload: VtaMatmulWorkload; schedule?: Partial<VtaMatmulSchedule> }
  | { kind: "elementwise"; name?: string; workload: VtaElementwiseWorkload; schedule?: Partial<VtaElementwiseSchedule> };

export interface CompileVtaOptions {
  /** The hardware to compile for; default the Pynq / simulator configuration (1x16_i8w8a32_15_15_18_17). */
  hardware?: VtaHardware;
  /**
   * Token pops TVM places after the final sync: `"commit"` (default) ends each
   * call with balanced token queues, so the function can be called again;
   * `"carry"` reproduces TVM's first-call stream exactly (see TrailingPops).
   */
  trailingPops?: TrailingPops;
}

/** What the compiler decided and what the program will cost, per function. */
export interface VtaKernelInfo {
  name: string;
  kind: VtaKernelSpec["kind"];
  /** The schedule used, with every knob filled in. */
  schedule: VtaConv2dSchedule | VtaMatmulSchedule | VtaElementwiseSchedule;
  params: ParamSpec[];
  /** Device runs per call (a run ends with FINISH; more than one only for programs beyond 2 M instructions). */
  runs: number;
  instructions: number;
  /** The simulator counters one call will report, derived from the instructions. */
  stats: VtaStreamStats;
  /**
   * With `trailingPops: "carry"`: the dependency pops left pending after the
   * final sync (TVM carries them into its next call; a replayed stream leaves
   * their tokens in the queues). Empty with the default "commit".
   */
  carriedPops: { from: QueueId; to: QueueId }[];
}

export interface VtaCompiledModule extends CompiledModule {
  readonly target: "vta";
  readonly hardware: VtaHardware;
  /** The decoded binary: every function's runs. */
  readonly program: VtaBinary;
  readonly kernels: readonly VtaKernelInfo[];
}

const DEFAULT_NAMES = { conv2d: "conv2d", matmul: "matmul", elementwise: "elementwise" } as const;

/**
 * The fields each kernel kind's workload and schedule have: any other is a
 * typo (`stride` for `strideH`) that would otherwise compile something the
 * caller did not ask for.
 */
const FIELDS: Record<VtaKernelSpec["kind"], { workload: readonly string[]; schedule: readonly string[] }> = {
  conv2d: {
    workload: ["batch", "inChannels", "outChannels", "height", "width", "kernelH", "kernelW", "padH", "padW", "strideH", "strideW", "shift", "clip"],
    schedule: ["ocBlock", "icBlock", "hBlock", "wBlock", "virtualThreads", "storeGranularity"],
  },
  matmul: {
    workload: ["batch", "inFeatures", "outFeatures", "shift", "clip"],
    schedule: ["batchBlock", "inBlock", "outBlock", "virtualThreads", "storeGranularity"],
  },
  elementwise: { workload: ["length", "inputDtype", "ops"], schedule: ["blockVectors"] },
};

/** The options, checked: unknown keys and a hardware that is no VtaHardware are INVALID_ARGUMENT. */
function checkOptions(options: CompileVtaOptions): VtaHardware {
  checkRecord(options, ["hardware", "trailingPops"], "compileVta", "options", "{ hardware?, trailingPops? }");
  const hw = options.hardware ?? DEFAULT_VTA_HARDWARE;
  const h = hw as Partial<VtaHardware> | null;
  if (
    typeof h !== "object" ||
    h === null ||
    typeof h.name !== "string" ||
    !Number.isInteger(h.blockIn) ||
    !Number.isInteger(h.blockOut) ||
    !Number.isInteger(h.batch)
  ) {
    throw invalidOption(
      "compileVta",
      "hardware",
      `hardware must be a VtaHardware, made by vtaHardware(config) (default DEFAULT_VTA_HARDWARE, the Pynq configuration), got ${shown(hw)}`,
    );
  }
  return hw;
}

/** The spec's own keys, and its workload's and schedule's (their values are checked by each kind's template). */
function checkSpecFields(spec: VtaKernelSpec): void {
  checkRecord(spec, ["kind", "name", "workload", "schedule"], "compileVta", "the kernel spec", "{ kind, name?, workload, schedule? }");
  const fields = FIELDS[spec.kind];
  if (!fields) return; // lowerSpec names the unknown kind
  const { workload, schedule } = spec as { workload: unknown; schedule?: unknown };
  if (typeof workload === "object" && workload !== null) checkRecord(workload, fields.workload, "compileVta", `${spec.kind} workload`, "an object");
  if (schedule !== undefined)
    checkRecord(schedule, fields.schedule, "compileVta", `${spec.kind} schedule`, `an object { ${fields.schedule.map((f) => `${f}?`).join(", ")} }`);
}

interface Lowered {
  root: Stmt;
  threads: number;
  params: ParamSpec[];
  schedule: VtaKernelInfo["schedule"];
}

function lowerSpec(spec: VtaKernelSpec, hw: VtaHardware): Lowered {
  switch (spec.kind) {
    case "conv2d": {
      const r: ResolvedConv2d = resolveConv2d(spec.workload, spec.schedule, hw);
      return { root: lowerConv2d(r, hw), threads: r.schedule.virtualThreads, params: conv2dParams(r, hw), schedule: r.schedule };
    }
    case "matmul": {
      const r: ResolvedMatmul = resolveMatmul(spec.workload, spec.schedule, hw);
      return { root: lowerMatmul(r, hw), threads: r.schedule.virtualThreads, params: matmulParams(r, hw), schedule: r.schedule };
    }
    case "elementwise": {
      const r: ResolvedElementwise = resolveElementwise(spec.workload, spec.schedule, hw);
      return { root: lowerElementwise(r, hw), threads: 1, params: elementwiseParams(r), schedule: r.schedule };
    }
    default:
      throw new FarmError(
        "INVALID_ARGUMENT",
        `unknown VTA kernel kind ${JSON.stringify((spec as { kind: unknown }).kind)}; expected "conv2d", "matmul" or "elementwise"`,
      );
  }
}

/** Lowers one kernel to its device runs (no bundle): for tests, tools and the disassembler. */
export function lowerVtaKernel(spec: VtaKernelSpec, options: CompileVtaOptions = {}): { fn: VtaFunction; info: VtaKernelInfo } {
  const hw = checkOptions(options);
  const trailingPops = options.trailingPops ?? "commit";
  if (trailingPops !== "commit" && trailingPops !== "carry")
    throw new FarmError("INVALID_ARGUMENT", `trailingPops must be "commit" or "carry", got ${JSON.stringify(trailingPops)}`);
  if (typeof spec !== "object" || spec === null) throw new FarmError("INVALID_ARGUMENT", "a VTA kernel spec must be an object");
  checkSpecFields(spec);
  const name = spec.name ?? DEFAULT_NAMES[spec.kind as keyof typeof DEFAULT_NAMES] ?? "kernel";
  const lowered = lowerSpec(spec, hw);
  const cmd = new VtaCommandQueue({ hardware: hw });
  try {
    runLowered(lowered.root, cmd, { threads: lowered.threads, trailingPops });
  } catch (err) {
    if (err instanceof VtaRuntimeError) {
      throw new FarmError("COMPILE_ERROR", `${name}: the VTA runtime rejects this schedule: ${err.message}`, { cause: err, details: { rule: err.code } });
    }
    throw err;
  }
  const runs = cmd.takeRuns();
  const carriedPops = cmd
    .pendingPops()
    .flatMap((p) => [
      ...(p.popPrev ? [{ from: (p.stage - 1) as QueueId, to: p.stage }] : []),
      ...(p.popNext ? [{ from: (p.stage + 1) as QueueId, to: p.stage }] : []),
    ]);
  const info: VtaKernelInfo = {
    name,
    kind: spec.kind,
    schedule: lowered.schedule,
    params: lowered.params,
    runs: runs.length,
    instructions: runs.reduce((n, r) => n + r.insns.byteLength / hw.insnBytes, 0),
    stats: streamStats(runs, hw),
    carriedPops,
  };
  return { fn: { runs }, info };
}

/**
 * Compiles VTA kernels into one module bundle (target "vta").
 *
 * ```ts
 * const mod = compileVta({ kind: "conv2d", workload: { batch: 1, inChannels: 256, outChannels: 256,
 *   height: 14, width: 14, kernelH: 3, kernelW: 3, padH: 1, padW: 1, shift: 8, clip: [0, 127] } });
 * await session.upload(mod);
 * ```
 *
 * Throws FarmError INVALID_ARGUMENT for malformed requests and COMPILE_ERROR
 * for shapes or schedules VTA cannot run (indivisible by the block sizes,
 * tiles beyond an on-chip buffer, uop kernels the runtime refuses).
 */
export function compileVta(kernels: VtaKernelSpec | readonly VtaKernelSpec[], options: CompileVtaOptions = {}): VtaCompiledModule {
  const hw = checkOptions(options);
  const list = Array.isArray(kernels) ? (kernels as readonly VtaKernelSpec[]) : [kernels as VtaKernelSpec];
  if (list.length === 0) throw new FarmError("INVALID_ARGUMENT", "compileVta: give at least one kernel");
  const functions: Record<string, VtaFunction> = {};
  const table: FunctionSpec[] = [];
  const infos: VtaKernelInfo[] = [];
  for (const spec of list) {
    const { fn, info } = lowerVtaKernel(spec, options);
    if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(info.name))
      throw new FarmError("INVALID_ARGUMENT", `VTA function name ${JSON.stringify(info.name)} is not a C identifier`);
    if (Object.hasOwn(functions, info.name)) throw new FarmError("INVALID_ARGUMENT", `two VTA functions are named "${info.name}"; give each a distinct name`);
    functions[info.name] = fn;
    table.push({ name: info.name, params: info.params });
    infos.push(info);
  }
  const program: VtaBinary = { hardware: hw.name, functions };
  const bytes = encodeBundle({
    format: BUNDLE_FORMAT,
    version: BUNDLE_VERSION,
    target: "vta",
    targetDetails: { hardware: hw.name },
    binary: encodeVtaBinary(program),
    functions: table,
    meta: { compiler: "kernelfarm-vta", kernels: JSON.stringify(infos.map((i) => ({ name: i.name, kind: i.kind, schedule: i.schedule }))) },
  });
  const digest = bundleDigest(bytes);
  return { bytes, name: `${digest.slice(0, 16)}.kfm`, digest, target: "vta", functions: table, hardware: hw, program, kernels: infos };
}
