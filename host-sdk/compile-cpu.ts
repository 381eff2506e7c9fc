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
import {
  BUNDLE_FORMAT,
  BUNDLE_VERSION,
  FarmError,
  bundleDigest,
  encodeBundle,
  isDtype,
  paramProblem,
  type FunctionSpec,
  type ParamSpec,
} from "../protos/index.ts";
import { binaryCpuTarget, hostCpuTarget } from "../domain/index.ts";
import type { CompiledModule } from "./compiled-module.ts";
import { checkFileName, checkFlags, checkRecord, invalidOption, shown } from "./options.ts";

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
  if (typeof decl === "object" && decl !== null && !Array.isArray(decl)) {
    const problem = paramProblem(decl);
    if (problem)
      throw new FarmError("INVALID_ARGUMENT", `function ${fn}, parameter ${index}: ParamSpec${problem[0]} ${problem[1]}`, {
        details: { function: fn, parameter: index },
      });
    return decl;
  }
  if (typeof decl !== "string") {
    throw new FarmError(
      "INVALID_ARGUMENT",
      `function ${fn}, parameter ${index}: ${JSON.stringify(decl) ?? shown(decl)} is not "DTYPE* name" or "DTYPE name" (dtypes: int8 … float64)`,
      { details: { function: fn, parameter: index } },
    );
  }
  const m = /^\s*([a-z0-9]+)\s*(\*?)\s*([A-Za-z_][A-Za-z0-9_]*)?\s*$/.exec(decl);
  if (!m || !isDtype(m[1])) {
    throw new FarmError(
      "INVALID_ARGUMENT",
      `function ${fn}, parameter ${index}: ${JSON.stringify(decl)} is not "DTYPE* name" or "DTYPE name" (dtypes: int8 … float64)`,
      { details: { function: fn, parameter: index } },
    );
  }
  return { name: m[3] ?? `arg${index}`, kind: m[2] ? "buffer" : "scalar", dtype: m[1] };
}

const IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_]*$/;
const FUNCTIONS_EXAMPLE = '{ vadd: ["float32* a", "float32* b", "float32* c", "int32 n"] }';

/**
 * The bundle's function table from `{ name: [param, …] }`. The shape is
 * checked first: a list of `{ name, params }` (the shape several RPC
 * libraries use) or a string of parameters is refused saying what is expected.
 */
export function functionTable(functions: Record<string, readonly ParamDecl[]>, where = "compileCpu"): FunctionSpec[] {
  if (typeof functions !== "object" || functions === null || Array.isArray(functions)) {
    const hint = Array.isArray(functions) ? " (for a list of { name, params }, write { [name]: params })" : "";
    throw invalidOption(
      where,
      "functions",
      `functions must be a record of function name → parameter list, e.g. ${FUNCTIONS_EXAMPLE}; got ${shown(functions)}${hint}`,
    );
  }
  const table = Object.entries(functions).map(([name, params]) => {
    if (!IDENTIFIER.test(name))
      throw new FarmError("INVALID_ARGUMENT", `${where}: function name ${JSON.stringify(name)} is not a C identifier`, {
        details: { function: name, field: "name" },
      });
    if (!Array.isArray(params)) {
      throw new FarmError(
        "INVALID_ARGUMENT",
        `${where}: function ${name}: parameters must be a list such as ["float32* a", "int32 n"], got ${JSON.stringify(params) ?? shown(params)}`,
        { details: { function: name, field: "params" } },
      );
    }
    return { name, params: params.map((p: ParamDecl, i) => parseParam(p, i, name)) };
  });
  if (table.length === 0) throw new FarmError("INVALID_ARGUMENT", "compile: declare at least one function in `functions`");
  return table;
}

export async function compileCpu(source: string, opts: CompileCpuOptions): Promise<CompiledModule> {
  checkRecord(
    opts,
    ["functions", "flags", "cc", "fileName"],
    "compileCpu",
    "options",
    `{ functions, flags?, cc?, fileName? }, e.g. { functions: ${FUNCTIONS_EXAMPLE} }`,
  );
  if (typeof source !== "string") throw invalidOption("compileCpu", "source", `source must be a string of C code, got ${shown(source)}`);
  const functions = functionTable(opts.functions);
  const flags = checkFlags(opts.flags, "compileCpu");
  const cc = opts.cc ?? process.env.CC ?? "cc";
  if (typeof cc !== "string" || cc === "") throw invalidOption("compileCpu", "cc", `cc must be a compiler's name or path, got ${shown(cc)}`);
  const fileName = checkFileName(opts.fileName ?? "kernel.c", "compileCpu", "kernel.c");
  const dir = await mkdtemp(join(tmpdir(), "kfarm-cc-"));
  try {
    const src = join(dir, fileName);
    const out = join(dir, "module.so");
    await writeFile(src, source);
    try {
      await run(cc, ["-O2", "-shared", "-fPIC", ...flags, "-o", out, fileName], { cwd: dir, maxBuffer: 16 << 20 });
    } catch (err) {
      const e = err as NodeJS.ErrnoException & { stderr?: string };
      if (e.code === "ENOENT") {
        throw new FarmError("TOOLCHAIN_MISSING", `no C compiler "${cc}" on this host: install one (Debian: apt-get install gcc) or set CC`);
      }
      const diagnostics = (e.stderr ?? e.message)
        .split(dir + "/")
        .join("")
        .trim();
      throw new FarmError("COMPILE_ERROR", `${cc} failed to compile ${fileName}:\n${diagnostics}`, { details: { diagnostics } });
    }
    const binary = await readFile(out);
    const bytes = encodeBundle({
      format: BUNDLE_FORMAT,
      version: BUNDLE_VERSION,
      target: "cpu",
      // What the compiler built for (a cross compiler's target), read from the binary; the host's where it cannot be read.
      targetDetails: { ...(binaryCpuTarget(binary) ?? hostCpuTarget()) },
      binary,
      functions,
      meta: { compiler: cc, flags: ["-O2", "-shared", "-fPIC", ...flags].join(" ") },
    });
    const digest = bundleDigest(bytes);
    return { bytes, name: `${digest.slice(0, 16)}.kfm`, digest, target: "cpu", functions };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
