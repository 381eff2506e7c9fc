/**
 * The CPU compiler: the local C compiler (`cc -O2 -shared -fPIC`) turns C
 * source into a shared object, packed into a module bundle with a function
 * table declaring each function's parameters.
 */
import { execFile } from "node:child_process";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { FarmError, binaryCpuTarget, bundleDigest, encodeBundle, hostCpuTarget, isDtype, type FunctionSpec, type ParamSpec } from "../protos/index.ts";
import type { CompiledModule } from "./compiled-module.ts";

const run = promisify(execFile);

/**
 * A parameter: `"float32*"` / `"float32* a"` (a buffer), `"int32 n"` (a scalar),
 * or a full ParamSpec.
 */
export type ParamDecl = string | ParamSpec;

export interface CompileCpuOptions {
  /** Exported functions and their parameters, e.g. `{ vadd: ["float32* a", "float32* b", "float32* c", "int32 n"] }`. */
  functions: Record<string, readonly ParamDecl[]>;
  /** Extra compiler flags (after -O2 -shared -fPIC). */
  flags?: readonly string[];
  /** The compiler; default $CC or `cc`. */
  cc?: string;
  /** File name shown in diagnostics. Default "kernel.c". */
  fileName?: string;
}

export function parseParam(decl: ParamDecl, index: number, fn: string): ParamSpec {
  if (typeof decl !== "string") return decl;
  const m = /^\s*([a-z0-9]+)\s*(\*?)\s*([A-Za-z_][A-Za-z0-9_]*)?\s*$/.exec(decl);
  if (!m || !isDtype(m[1])) {
    throw new FarmError("INVALID_ARGUMENT", `function ${fn}, parameter ${index}: ${JSON.stringify(decl)} is not "DTYPE* name" or "DTYPE name" (dtypes: int8 … float64)`);
  }
  return { name: m[3] ?? `arg${index}`, kind: m[2] ? "buffer" : "scalar", dtype: m[1] };
}

export function functionTable(functions: Record<string, readonly ParamDecl[]>): FunctionSpec[] {
  const table = Object.entries(functions).map(([name, params]) => ({ name, params: params.map((p, i) => parseParam(p, i, name)) }));
  if (table.length === 0) throw new FarmError("INVALID_ARGUMENT", "compile: declare at least one function in `functions`");
  return table;
}

export async function compileCpu(source: string, opts: CompileCpuOptions): Promise<CompiledModule> {
  const functions = functionTable(opts.functions);
  const cc = opts.cc ?? process.env.CC ?? "cc";
  const fileName = opts.fileName ?? "kernel.c";
  const dir = await mkdtemp(join(tmpdir(), "kfarm-cc-"));
  try {
    const src = join(dir, fileName);
    const out = join(dir, "module.so");
    await writeFile(src, source);
    try {
      await run(cc, ["-O2", "-shared", "-fPIC", ...(opts.flags ?? []), "-o", out, fileName], { cwd: dir, maxBuffer: 16 << 20 });
    } catch (err) {
      const e = err as NodeJS.ErrnoException & { stderr?: string };
      if (e.code === "ENOENT") {
        throw new FarmError("TOOLCHAIN_MISSING", `no C compiler "${cc}" on this host: install one (Debian: apt-get install gcc) or set CC`);
      }
      const diagnostics = (e.stderr ?? e.message).split(dir + "/").join("").trim();
      throw new FarmError("COMPILE_ERROR", `${cc} failed to compile ${fileName}:\n${diagnostics}`, { details: { diagnostics } });
    }
    const binary = await readFile(out);
    const bytes = encodeBundle({
      format: "kernelfarm.bundle",
      version: 1,
      target: "cpu",
      // What the compiler built for (a cross compiler's target), read from the binary; the host's where it cannot be read.
      targetDetails: { ...(binaryCpuTarget(binary) ?? hostCpuTarget()) },
      binary,
      functions,
      meta: { compiler: cc, flags: ["-O2", "-shared", "-fPIC", ...(opts.flags ?? [])].join(" ") },
    });
    const digest = bundleDigest(bytes);
    return { bytes, name: `${digest.slice(0, 16)}.kfm`, digest, target: "cpu", functions };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
