/**
 * The native CUDA timing baseline: bench/cuda/native-timer.c, a small C
 * program that times one kernel of a compiled module with CUDA events the way
 * the farm's CUDA board does (one warm-up launch, then `repeat` x `number`
 * launches between two events). The benchmark runs it in the same run as the
 * farm and compares the medians.
 */
import { execFile } from "node:child_process";
import { mkdir } from "node:fs/promises";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";

const run = promisify(execFile);

const NATIVE_TIMER_C = fileURLToPath(new URL("../cuda/native-timer.c", import.meta.url));

/** A hung GPU must not hang the benchmark; sgemm 4096³ x 100 launches is ~1 s. */
export const DEFAULT_NATIVE_TIMEOUT_MS = 120_000;
const MAX_OUTPUT_BYTES = 1 << 20;

/**
 * A kernel argument, in kernel order: a device buffer of `buf` bytes (a
 * multiple of 4) whose floats are all `fill` (default 1.0), or a scalar.
 */
export type NativeArg = { buf: number; fill?: number } | { i32: number } | { f32: number };

export interface NativeTimerOptions {
  /** Compiled module file: cubin, fatbin or PTX. */
  module: string;
  kernel: string;
  grid: [number, number, number];
  block: [number, number, number];
  sharedMemBytes?: number;
  args: NativeArg[];
  /** Launches per timed repeat. */
  number: number;
  repeat: number;
  /** CUDA device ordinal; default 0. */
  device?: number;
  /** Kill the timer after this long; default DEFAULT_NATIVE_TIMEOUT_MS. */
  timeoutMs?: number;
}

export interface NativeTimerResult {
  /** Device name as the driver reports it, e.g. "NVIDIA H100 80GB HBM3". */
  device: string;
  /** Per-launch milliseconds of each repeat. */
  resultsMs: number[];
}

/** Compiles native-timer.c into `outDir` with `cc` (no CUDA needed at build time); returns the binary's path. */
export async function buildNativeTimer(outDir: string): Promise<string> {
  await mkdir(outDir, { recursive: true });
  const bin = join(outDir, "native-timer");
  const cc = process.env.CC ?? "cc";
  try {
    await run(cc, ["-O2", "-Wall", "-Wextra", "-o", bin, NATIVE_TIMER_C, "-ldl"], { maxBuffer: MAX_OUTPUT_BYTES });
  } catch (err) {
    if (isErrno(err, "ENOENT")) {
      throw new Error(`cannot build the native CUDA timer: C compiler "${cc}" not found (install a C compiler or set $CC)`, { cause: err });
    }
    throw new Error(`cannot build the native CUDA timer (${cc} ${NATIVE_TIMER_C}): ${stderrOf(err) || String(err)}`, { cause: err });
  }
  return bin;
}

/** Times one kernel with the native timer built by buildNativeTimer(). */
export async function runNativeTimer(bin: string, opts: NativeTimerOptions): Promise<NativeTimerResult> {
  const argv = nativeTimerArgv(opts);
  let stdout: string;
  try {
    ({ stdout } = await run(bin, argv, { maxBuffer: MAX_OUTPUT_BYTES, timeout: opts.timeoutMs ?? DEFAULT_NATIVE_TIMEOUT_MS, killSignal: "SIGKILL" }));
  } catch (err) {
    throw new Error(`native timer failed for ${opts.kernel} (${failureKind(err, bin, opts)})${stderrOf(err) ? `: ${stderrOf(err)}` : ""}`, { cause: err });
  }
  return parseNativeOutput(stdout, opts);
}

/** The native timer's command line for `opts`. @internal */
export function nativeTimerArgv(opts: NativeTimerOptions): string[] {
  const dim = (name: string, d: readonly number[]) => {
    if (d.length !== 3 || !d.every((v) => Number.isInteger(v) && v >= 1))
      throw new Error(`native timer: ${name} ${JSON.stringify(d)} is not three positive integers`);
    return d.join(",");
  };
  const count = (name: string, v: number, min: number) => {
    if (!Number.isInteger(v) || v < min) throw new Error(`native timer: ${name} ${v} is not an integer >= ${min}`);
    return String(v);
  };
  const argv = [opts.module, opts.kernel, "--grid", dim("grid", opts.grid), "--block", dim("block", opts.block)];
  argv.push("--smem", count("sharedMemBytes", opts.sharedMemBytes ?? 0, 0));
  argv.push("--number", count("number", opts.number, 1), "--repeat", count("repeat", opts.repeat, 1));
  argv.push("--device", count("device", opts.device ?? 0, 0));
  opts.args.forEach((a, i) => argv.push(nativeArg(a, i)));
  return argv;
}

// Floats are passed as String(v): strtof() reads all of its forms ("1e-7", "NaN", "-Infinity").
function nativeArg(a: NativeArg, index: number): string {
  if ("buf" in a) {
    if (!Number.isSafeInteger(a.buf) || a.buf < 4 || a.buf % 4 !== 0)
      throw new Error(`native timer: argument ${index}: buffer of ${a.buf} bytes is not a positive multiple of 4`);
    return a.fill === undefined ? `buf:${a.buf}` : `buf:${a.buf}:${a.fill}`;
  }
  if ("i32" in a) {
    if (!Number.isInteger(a.i32) || a.i32 < -0x8000_0000 || a.i32 > 0x7fff_ffff) throw new Error(`native timer: argument ${index}: ${a.i32} is not an int32`);
    return `i32:${a.i32}`;
  }
  return `f32:${a.f32}`;
}

function parseNativeOutput(stdout: string, opts: NativeTimerOptions): NativeTimerResult {
  let out: unknown;
  try {
    out = JSON.parse(stdout);
  } catch (err) {
    throw new Error(`native timer printed no JSON for ${opts.kernel}: ${JSON.stringify(stdout.slice(0, 200))}`, { cause: err });
  }
  const o = out as { device?: unknown; kernel?: unknown; number?: unknown; results_ms?: unknown };
  const ms = o.results_ms;
  if (
    typeof o.device !== "string" ||
    o.kernel !== opts.kernel ||
    o.number !== opts.number ||
    !Array.isArray(ms) ||
    ms.length !== opts.repeat ||
    !ms.every((v): v is number => typeof v === "number" && Number.isFinite(v) && v >= 0)
  ) {
    throw new Error(`native timer output for ${opts.kernel} does not match the request: ${stdout.trim().slice(0, 300)}`);
  }
  return { device: o.device, resultsMs: ms };
}

function failureKind(err: unknown, bin: string, opts: NativeTimerOptions): string {
  const e = (typeof err === "object" && err !== null ? err : {}) as { code?: unknown; signal?: unknown; killed?: boolean };
  if (e.killed) return `killed after ${opts.timeoutMs ?? DEFAULT_NATIVE_TIMEOUT_MS} ms`;
  if (typeof e.code === "number") return `exit code ${e.code}`;
  if (typeof e.signal === "string") return `signal ${e.signal}`;
  if (typeof e.code === "string") return `cannot run ${bin}: ${e.code}`;
  return String(err);
}

function isErrno(err: unknown, code: string): boolean {
  return typeof err === "object" && err !== null && (err as { code?: unknown }).code === code;
}

function stderrOf(err: unknown): string {
  const s = typeof err === "object" && err !== null ? (err as { stderr?: unknown }).stderr : undefined;
  return typeof s === "string" ? s.trim() : Buffer.isBuffer(s) ? s.toString().trim() : "";
}
