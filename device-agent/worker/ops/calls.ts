/**
 * Modules and calls: load_module, call, and what timing and measure share
 * with a call — its arguments checked, its board settings, its watchdog.
 */
import { FarmError, decodeBundle, integerRange, launchProblem } from "../../../protos/index.ts";
import type { Call__Output } from "../../../protos/gen/farm/v1/Call.ts";
import type { ArgValue, CallSettings, LoadedFunction } from "../../backends/index.ts";
import type { SessionHooks, SessionState } from "../session-state.ts";
import { arrayOf } from "./arrays.ts";
import type { Handler } from "./operation.ts";

const NO_SETTINGS: CallSettings = Object.freeze({});
/** The board target each call setting belongs to. */
const SETTING_TARGETS: Record<keyof CallSettings, "cuda" | "cpu"> = { launch: "cuda", flushL2: "cuda", graph: "cuda", flushCpuCache: "cpu" };

export const loadModule: Handler<"load_module"> = (s, id, { name }, mux) => {
  const bundle = decodeBundle(s.files.read(name, "load"));
  if (bundle.target !== s.backend.target) {
    const details = Object.values(bundle.targetDetails).join("/");
    throw new FarmError(
      "TARGET_MISMATCH",
      `module "${name}" was built for target ${bundle.target}${details ? ` (${details})` : ""}, but this board is a ${s.backend.kind} board`,
    );
  }
  // Said before the load: a shared object's constructors run inside it, and from then on this process is the tenant's.
  if (s.backend.loadsNativeCode && !s.nativeCodeLoaded) {
    s.hooks.beforeNativeCode?.();
    s.nativeCodeLoaded = true;
  }
  const module = s.backend.load(bundle, s.files.dir);
  const moduleId = s.nextModule++;
  s.modules.set(moduleId, module);
  mux.reply({
    id,
    module: {
      module: moduleId,
      target: bundle.target,
      functions: bundle.functions.map((fn) => ({
        name: fn.name,
        params: fn.params.map((p) => ({ name: p.name, kind: p.kind, dtype: p.dtype, shape: p.shape ?? [] })),
      })),
    },
  });
};

export const call: Handler<"call"> = (s, id, c, mux) => {
  const { fn, args } = prepare(s, c);
  const settings = callSettings(s, c);
  const t0 = process.hrtime.bigint();
  guarded(s, c, "call", () => s.backend.invoke(fn, args, settings));
  mux.reply({ id, call: { elapsed_ns: Number(process.hrtime.bigint() - t0) } });
};

/** Looks up the function and checks every argument against its parameters. */
export function prepare(s: SessionState, c: Call__Output): { fn: LoadedFunction; args: ArgValue[] } {
  const module = s.modules.get(c.module);
  if (!module) throw new FarmError("NOT_FOUND", `no module ${c.module} in this session; load one with loadModule`);
  const fn = module.functions.get(c.function);
  if (!fn) {
    throw new FarmError("UNKNOWN_FUNCTION", `module ${c.module} has no function "${c.function}"; it has: ${[...module.functions.keys()].join(", ")}`);
  }
  const params = fn.spec.params;
  const signature = `${fn.spec.name}(${params.map((p) => `${p.dtype}${p.kind === "buffer" ? "*" : ""} ${p.name}`).join(", ")})`;
  if (c.args.length !== params.length) {
    throw new FarmError("BAD_ARGUMENTS", `${signature} takes ${params.length} argument(s), got ${c.args.length}`);
  }
  const args = params.map((p, i): ArgValue => {
    const arg = c.args[i]!;
    const at = `argument ${i} (${p.name}) of ${signature}`;
    if (p.kind === "buffer") {
      if (arg.value !== "array") throw new FarmError("BAD_ARGUMENTS", `${at} must be a ${p.dtype} array, got a scalar`);
      const a = arrayOf(s, arg.array ?? 0);
      if (a.dtype !== p.dtype) throw new FarmError("BAD_ARGUMENTS", `${at} must be a ${p.dtype} array, got ${a.dtype}`);
      if (p.shape && p.shape.length > 0 && (p.shape.length !== a.shape.length || p.shape.some((d, k) => d !== a.shape[k]))) {
        throw new FarmError("BAD_ARGUMENTS", `${at} must have shape [${p.shape.join(", ")}], got [${a.shape.join(", ")}]`);
      }
      return { kind: "buffer", array: a.array };
    }
    if (arg.value === "array") throw new FarmError("BAD_ARGUMENTS", `${at} must be a ${p.dtype} scalar, got an array`);
    const value = (arg.value === "int_value" ? arg.int_value : arg.float_value) ?? 0;
    const range = integerRange(p.dtype);
    if (!range) return { kind: "scalar", value };
    if (arg.value !== "int_value" || !Number.isSafeInteger(value)) throw new FarmError("BAD_ARGUMENTS", `${at} must be an integer, got ${value}`);
    // The FFI wraps out-of-range integers silently (2^32 + 8 → 8 for an int32): refuse them.
    const [min, max] = range;
    if (value < min || value > max) throw new FarmError("BAD_ARGUMENTS", `${at} must be a ${p.dtype} in [${min}, ${max}], got ${value}`);
    return { kind: "scalar", value };
  });
  return { fn, args };
}

/** Runs `run` under the watchdog with the call's limit (callLimit); a non-FarmError it throws is the call's RUNTIME_ERROR. */
export function guarded<T>(s: SessionState, c: Call__Output, what: string, run: () => T): T {
  const limit = callLimit(c.timeout_ms, s.limits.callTimeoutMs, s.hooks.callsEnd, Date.now());
  s.hooks.watchdog?.arm(limit.ms, `${what} ${c.function} ran past its ${limit.ms} ms timeout ${limit.why}`);
  try {
    return run();
  } catch (err) {
    if (err instanceof FarmError) throw err;
    throw new FarmError("RUNTIME_ERROR", `${what} ${c.function} failed: ${(err as Error).message}`, { cause: err });
  } finally {
    s.hooks.watchdog?.disarm();
  }
}

/**
 * A call's time limit at `now`, and the words of its TIMEOUT that say where
 * it came from and how to change it: the call's own timeoutMs, else the
 * board's default (its agent's --call-timeout-ms); never past what the
 * session has left for calls (SessionHooks.callsEnd), so that a hung kernel
 * ends as the call's TIMEOUT rather than the session's.
 */
export function callLimit(timeoutMs: number, boardDefaultMs: number, callsEnd: SessionHooks["callsEnd"], now: number): { ms: number; why: string } {
  const left = callsEnd ? Math.floor(callsEnd.at - now) : Infinity;
  const asked = timeoutMs || boardDefaultMs;
  if (left > 0 && left < asked) {
    return {
      ms: left,
      why:
        `(all its session had left: its sessionTimeoutMs of ${callsEnd!.sessionTimeoutMs} ms, less the end grace the board needs to report this); ` +
        "if the kernel needs longer, ask for a longer session: request(key, { sessionTimeoutMs }), session_timeout= in Python",
    };
  }
  if (timeoutMs) return { ms: timeoutMs, why: "(the call's own timeoutMs; timeout= in seconds in Python)" };
  return {
    ms: asked,
    why:
      `(the board's default: its agent's --call-timeout-ms, ${asked} ms); ` +
      "a call sets its own with timeoutMs (fn.withOptions({ timeoutMs }), timeEvaluator's and measure's timeoutMs; timeout= in seconds in Python)",
  };
}

/** The call's board-specific settings; refused on boards that have no such thing. */
export function callSettings(s: SessionState, c: Call__Output, timing: { flush_l2?: boolean; graph?: boolean; flush_cpu_cache?: boolean } = {}): CallSettings {
  // The common case, on every call: nothing board-specific asked.
  if (!c.launch && !timing.flush_l2 && !timing.graph && !timing.flush_cpu_cache) return NO_SETTINGS;
  const settings: CallSettings = {};
  if (c.launch) {
    const launch = { grid: c.launch.grid, block: c.launch.block, sharedMemBytes: c.launch.shared_mem_bytes };
    const problem = launchProblem(launch);
    if (problem) throw new FarmError("BAD_ARGUMENTS", `launch of ${c.function}: ${problem}`);
    settings.launch = launch as CallSettings["launch"];
  }
  if (timing.flush_l2) settings.flushL2 = true;
  if (timing.graph) settings.graph = true;
  if (timing.flush_cpu_cache) settings.flushCpuCache = true;
  for (const target of ["cuda", "cpu"] as const) {
    const given = (Object.keys(settings) as (keyof CallSettings)[]).filter((k) => SETTING_TARGETS[k] === target);
    if (given.length === 0 || s.backend.target === target) continue;
    const hint = target === "cpu" && s.backend.target === "cuda" ? " (flushL2 flushes a GPU's L2)" : "";
    throw new FarmError(
      "BAD_ARGUMENTS",
      `${given.join(", ")} ${given.length > 1 ? "are options" : "is an option"} of ${target.toUpperCase()} boards; this is a ${s.backend.kind} board${hint}`,
    );
  }
  return settings;
}
