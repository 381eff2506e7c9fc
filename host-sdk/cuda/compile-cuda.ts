/**
 * The CUDA compiler: nvcc turns CUDA C++ source into a fatbin (SASS for one
 * architecture plus its PTX) or a cubin, packed into a module bundle with the
 * kernels' parameters, optional fixed launch configurations and what ptxas
 * reported about their resources. Results are cached on disk by content.
 */
import { createHash } from "node:crypto";
import { mkdtemp, readFile, realpath, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  BUNDLE_FORMAT,
  BUNDLE_VERSION,
  FarmError,
  bundleDigest,
  decodeBundle,
  encodeBundle,
  toLaunchConfig,
  type Dim3,
  type FunctionSpec,
  type LaunchConfig,
  type LaunchDecl,
} from "../../protos/index.ts";
import { componentLogger } from "../../runtime/index.ts";
import { functionTable, type ParamDecl } from "../compile-cpu.ts";
import type { CompiledModule } from "../compiled-module.ts";
import { checkFileName, checkFlags, checkRecord, shown } from "../options.ts";
import { cacheKey, defaultCacheDir, readCacheEntry, writeCacheEntry } from "./cache.ts";
import { cleanDiagnostics, locateNvcc, nvccVersion, runNvcc } from "./nvcc.ts";
import { parsePtxasInfo, type KernelResources } from "./ptxas-info.ts";

export type { Dim3, LaunchDecl };

/** A kernel's parameters, alone or with a launch configuration fixed at compile time. */
export type CudaFunctionDecl = readonly ParamDecl[] | { params: readonly ParamDecl[]; launch?: LaunchDecl };

export interface CompileCudaOptions {
  /** GPU architecture, "sm_90" (default "sm_90"); a suffix such as "sm_90a" is kept. */
  arch?: string;
  /** Kernels and their parameters, e.g. `{ saxpy: { params: ["float32 a", "float32* x", "float32* y", "int32 n"], launch: { grid: 4096, block: 256 } } }`.
   *  A kernel without `launch` takes its launch configuration at call time. Kernels must be `extern "C" __global__`. */
  functions: Record<string, CudaFunctionDecl>;
  /** Extra nvcc flags (after the defaults). */
  flags?: readonly string[];
  /** Also embed PTX (compute_XX) for forward compatibility: the binary is then a fatbin. Default true. false: a plain cubin for `arch` only. */
  ptx?: boolean;
  /** The nvcc to run; default $KFARM_NVCC, else $CUDA_HOME/bin/nvcc if it exists, else `nvcc` on PATH. */
  nvcc?: string;
  /** Name shown in diagnostics, default "kernel.cu". */
  fileName?: string;
  /** Cache directory, or false to disable. Default $KFARM_CACHE_DIR, else $XDG_CACHE_HOME/kernelfarm/cuda, else ~/.cache/kernelfarm/cuda. */
  cache?: string | false;
}

export interface CudaCompiledModule extends CompiledModule {
  readonly target: "cuda";
  readonly arch: string;
  /** Per kernel, what ptxas reported: registers, spill bytes, static shared memory, stack frame, constant memory. */
  readonly resources: Record<string, KernelResources>;
  /** True when the bundle came from the cache (no nvcc run). */
  readonly cached: boolean;
}

export const DEFAULT_CUDA_ARCH = "sm_90";
export const DEFAULT_CUDA_FILE_NAME = "kernel.cu";
const ARCH = /^sm_\d+[a-z]?$/;
const IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_]*$/;
const OPTION_KEYS = ["functions", "arch", "flags", "ptx", "nvcc", "fileName", "cache"];
const FUNCTIONS_EXAMPLE =
  '{ saxpy: { params: ["float32 a", "float32* x", "float32* y", "int32 n"], launch: { grid: 4096, block: 256 } } }, or { saxpy: ["float32 a", …] }';

interface ResolvedCompileCudaOptions {
  arch: string;
  functions: FunctionSpec[];
  flags: string[];
  ptx: boolean;
  nvcc: string | undefined;
  fileName: string;
  cache: string | false;
}

function invalid(message: string, details?: Record<string, unknown>): FarmError {
  return new FarmError("INVALID_ARGUMENT", `compileCuda: ${message}`, details ? { details } : {});
}

function resolveCompileCudaOptions(opts: CompileCudaOptions): ResolvedCompileCudaOptions {
  checkRecord(opts, OPTION_KEYS, "compileCuda", "options", `{ ${OPTION_KEYS.map((k) => (k === "functions" ? k : `${k}?`)).join(", ")} }`);
  const arch = opts.arch ?? DEFAULT_CUDA_ARCH;
  if (typeof arch !== "string" || !ARCH.test(arch))
    throw invalid(`arch ${JSON.stringify(arch)} is not a GPU architecture such as "sm_90" (or "sm_90a", "sm_80")`, { field: "arch" });
  const fileName = checkFileName(opts.fileName ?? DEFAULT_CUDA_FILE_NAME, "compileCuda", DEFAULT_CUDA_FILE_NAME, ".cu");
  const flags = checkFlags(opts.flags, "compileCuda");
  const ptx = opts.ptx ?? true;
  if (typeof ptx !== "boolean") throw invalid(`ptx must be true (a fatbin with PTX) or false (a cubin), got ${shown(ptx)}`, { field: "ptx" });
  if (opts.nvcc !== undefined && (typeof opts.nvcc !== "string" || opts.nvcc === ""))
    throw invalid(`nvcc must be a path, got ${shown(opts.nvcc)}`, { field: "nvcc" });
  const cache = opts.cache === undefined ? defaultCacheDir() : opts.cache;
  if (cache !== false && (typeof cache !== "string" || cache === ""))
    throw invalid(`cache must be a directory or false (no cache), got ${shown(cache)}`, { field: "cache" });
  return { arch, functions: cudaFunctionTable(opts.functions), flags, ptx, nvcc: opts.nvcc, fileName, cache };
}

/** The bundle's function table: parameters parsed as compileCpu does, launches normalised to [x, y, z] and checked. */
export function cudaFunctionTable(functions: Record<string, CudaFunctionDecl>): FunctionSpec[] {
  if (typeof functions !== "object" || functions === null || Array.isArray(functions)) {
    const hint = Array.isArray(functions) ? " (for a list of { name, params }, write { [name]: { params, launch } })" : "";
    throw invalid(`functions must be a record of kernel name → parameters, e.g. ${FUNCTIONS_EXAMPLE}; got ${shown(functions)}${hint}`, { field: "functions" });
  }
  const params: Record<string, readonly ParamDecl[]> = {};
  const launches = new Map<string, LaunchConfig>();
  for (const [name, decl] of Object.entries(functions)) {
    if (!IDENTIFIER.test(name)) throw invalid(`kernel name ${JSON.stringify(name)} is not a C identifier`, { function: name, field: "name" });
    if (Array.isArray(decl)) {
      params[name] = decl;
      continue;
    }
    const d = decl as { params?: unknown; launch?: unknown } | null;
    if (typeof d !== "object" || d === null || !Array.isArray(d.params)) {
      throw invalid(`function ${name}: expected a list of parameters or { params, launch? }`, { function: name, field: "params" });
    }
    const unknown = Object.keys(d).find((k) => k !== "params" && k !== "launch");
    if (unknown !== undefined)
      throw invalid(`function ${name}: unknown key ${JSON.stringify(unknown)}; a kernel is { params, launch? }`, { function: name, field: unknown });
    params[name] = d.params as readonly ParamDecl[];
    if (d.launch !== undefined) launches.set(name, launchConfig(name, d.launch));
  }
  return functionTable(params, "compileCuda").map((f) => {
    const launch = launches.get(f.name);
    return launch ? { ...f, launch } : f;
  });
}

function launchConfig(name: string, launch: unknown): LaunchConfig {
  const where = `compileCuda: function ${name}`;
  if (typeof launch !== "object" || launch === null)
    throw new FarmError("INVALID_ARGUMENT", `${where}: launch is not a record { grid, block, sharedMemBytes? }`, {
      details: { function: name, field: "launch" },
    });
  const l = launch as Record<string, unknown>;
  const unknown = Object.keys(l).find((k) => k !== "grid" && k !== "block" && k !== "sharedMemBytes");
  if (unknown !== undefined) {
    throw new FarmError("INVALID_ARGUMENT", `${where}: launch has an unknown key ${JSON.stringify(unknown)}; expected grid, block and sharedMemBytes`, {
      details: { function: name, field: "launch" },
    });
  }
  for (const field of ["grid", "block"] as const) {
    const v = l[field];
    if (typeof v !== "number" && !(Array.isArray(v) && v.length >= 1 && v.length <= 3)) {
      throw new FarmError("INVALID_ARGUMENT", `${where}: launch ${field} is ${JSON.stringify(v)}, expected a number or [x], [x, y], [x, y, z]`, {
        details: { function: name, field: `launch.${field}` },
      });
    }
  }
  return toLaunchConfig(l as unknown as LaunchDecl, where);
}

/** The nvcc command line (without the program). */
function nvccArgs(o: ResolvedCompileCudaOptions): { args: string[]; output: string; format: "fatbin" | "cubin"; ptx: string } {
  const sm = o.arch.slice("sm_".length);
  if (o.ptx) {
    const output = "module.fatbin";
    const args = ["-fatbin", "-O3", "-gencode", `arch=compute_${sm},code=[sm_${sm},compute_${sm}]`, "-Xptxas", "-v", ...o.flags, "-o", output, o.fileName];
    return { args, output, format: "fatbin", ptx: `compute_${sm}` };
  }
  const output = "module.cubin";
  return { args: ["-cubin", "-O3", `-arch=sm_${sm}`, "-Xptxas", "-v", ...o.flags, "-o", output, o.fileName], output, format: "cubin", ptx: "none" };
}

/**
 * Compiles `source` with nvcc into a module bundle (target "cuda").
 *
 * Errors: INVALID_ARGUMENT (options), TOOLCHAIN_MISSING (no nvcc),
 * COMPILE_ERROR (nvcc's diagnostics, or a declared kernel that is not an
 * entry function of the module).
 */
export async function compileCuda(source: string, opts: CompileCudaOptions): Promise<CudaCompiledModule> {
  if (typeof source !== "string") throw invalid("source must be a string", { field: "source" });
  const o = resolveCompileCudaOptions(opts);
  const where = await locateNvcc(o.nvcc);
  const nvcc = await nvccVersion(where);
  const key = cacheKey({ nvcc: nvcc.text, arch: o.arch, ptx: o.ptx, flags: o.flags, fileName: o.fileName, functions: o.functions, source });
  if (o.cache !== false) {
    const hit = fromCache(await readCacheEntry(o.cache, key), o);
    if (hit) return hit;
  }

  const { args, output, format, ptx } = nvccArgs(o);
  const dir = await mkdtemp(join(tmpdir(), "kfarm-nvcc-"));
  let binary: Uint8Array;
  let stderr: string;
  try {
    await writeFile(join(dir, o.fileName), source);
    const result = await runNvcc(where, args, dir);
    if (!result.ok) {
      const diagnostics = cleanDiagnostics(result.stderr, [dir, await realpath(dir)]) || result.reason;
      throw new FarmError("COMPILE_ERROR", `nvcc failed to compile ${o.fileName}:\n${diagnostics}`, { details: { diagnostics } });
    }
    stderr = result.stderr;
    binary = new Uint8Array(await readFile(join(dir, output)));
  } finally {
    await rm(dir, { recursive: true, force: true });
  }

  const resources = kernelResources(stderr, o);
  // A plain copy: protobufjs hands back a Buffer, which may be a slice of a pool Node reuses.
  const bytes = new Uint8Array(
    encodeBundle({
      format: BUNDLE_FORMAT,
      version: BUNDLE_VERSION,
      target: "cuda",
      targetDetails: { arch: o.arch, format, ptx },
      binary,
      functions: o.functions,
      meta: {
        compiler: `nvcc ${nvcc.version}`,
        flags: args.slice(0, -3).join(" "),
        source_sha256: createHash("sha256").update(source).digest("hex"),
        ptxas: JSON.stringify(resources),
      },
    }),
  );
  if (o.cache !== false) {
    try {
      await writeCacheEntry(o.cache, key, bytes);
    } catch (err) {
      componentLogger("cuda-compiler").warn({ dir: o.cache, err: (err as Error).message }, "could not write the compile cache; continuing without it");
    }
  }
  return compiledModule(bytes, o.functions, o.arch, resources, false);
}

/** Compiles every job, at most `os.availableParallelism()` nvcc processes at a time (as any concurrent compileCuda calls are). */
export function compileCudaMany(jobs: ReadonlyArray<{ source: string } & CompileCudaOptions>): Promise<CudaCompiledModule[]> {
  return Promise.all(jobs.map(({ source, ...opts }) => compileCuda(source, opts)));
}

function compiledModule(
  bytes: Uint8Array,
  functions: FunctionSpec[],
  arch: string,
  resources: Record<string, KernelResources>,
  cached: boolean,
): CudaCompiledModule {
  const digest = bundleDigest(bytes);
  return { bytes, name: `${digest.slice(0, 16)}.kfm`, digest, target: "cuda", functions, arch, resources, cached };
}

/** The declared kernels' resources on `arch`; COMPILE_ERROR when one is not an entry function of the module. */
function kernelResources(stderr: string, o: ResolvedCompileCudaOptions): Record<string, KernelResources> {
  const report = parsePtxasInfo(stderr);
  const entries = report[o.arch] ?? {};
  const found = Object.keys(entries);
  const missing = o.functions.map((f) => f.name).filter((name) => !(name in entries));
  if (missing.length > 0) {
    const lines = [
      `${o.fileName} has no kernel ${missing.map((n) => `"${n}"`).join(", ")} for ${o.arch}; entry functions compiled: ${found.length ? found.join(", ") : "none"}`,
    ];
    const otherArchs = Object.keys(report).filter((a) => a !== o.arch);
    if (!(o.arch in report) && otherArchs.length) lines.push(`(ptxas compiled for ${otherArchs.join(", ")} only: do the flags override the architecture?)`);
    for (const name of missing) {
      const mangled = found.find((e) => e.startsWith("_Z") && e.includes(`${name.length}${name}`));
      lines.push(
        mangled
          ? `"${mangled}" is ${name} with a C++ mangled name: declare the kernel extern "C" __global__ so that its name stays "${name}"`
          : `declare each kernel as extern "C" __global__ and list it in \`functions\` under its name in the source ("${name}" is not one)`,
      );
    }
    throw new FarmError("COMPILE_ERROR", lines.join("\n"), { details: { missing, entries: found } });
  }
  return Object.fromEntries(o.functions.map((f) => [f.name, entries[f.name]!]));
}

/** The module of a cache entry, or undefined when there is none or it is unusable (it is then rebuilt and overwritten). */
function fromCache(bytes: Uint8Array | undefined, o: ResolvedCompileCudaOptions): CudaCompiledModule | undefined {
  if (!bytes) return undefined;
  try {
    const bundle = decodeBundle(bytes);
    if (bundle.target !== "cuda" || bundle.targetDetails.arch !== o.arch) return undefined;
    const resources = JSON.parse(bundle.meta?.ptxas ?? "") as Record<string, KernelResources>;
    if (!o.functions.every((f) => typeof resources[f.name]?.registers === "number")) return undefined;
    return compiledModule(bytes, bundle.functions, o.arch, resources, true);
  } catch {
    return undefined;
  }
}
