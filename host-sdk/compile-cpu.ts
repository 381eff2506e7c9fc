/**
 * The CPU compiler: the local C compiler (`cc -O2 -shared -fPIC`) turns C
 * source into a shared object, packed into a module bundle with a function
 * table declaring each function's parameters. The table is checked against
 * what was built: each function exported (checkExports), and its parameters
 * those the C function takes where the compiler can tell (checkParams), so
 * that a mismatch is COMPILE_ERROR here, not a failure on the board.
 */
import { execFile } from "node:child_process";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { extname, join } from "node:path";
import { promisify } from "node:util";
import {
  BUNDLE_FORMAT,
  BUNDLE_VERSION,
  DTYPES,
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
import { elfExports } from "./elf-exports.ts";
import { checkFileName, checkFlags, checkRecord, invalidOption, shown } from "./options.ts";

const run = promisify(execFile);
/** What every CPU build is compiled with, before the caller's flags. */
const CPU_BASE_FLAGS = ["-O2", "-shared", "-fPIC"];

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

/** Names a message lists before it says how many more there are. */
const LISTED = 20;

function listed(names: readonly string[]): string {
  if (names.length === 0) return "none";
  const more = names.length - LISTED;
  return names.slice(0, LISTED).join(", ") + (more > 0 ? `, … (${more} more)` : "");
}

/**
 * COMPILE_ERROR when a function of `functions` is not among those the shared
 * object exports: the board would find no such function at load. Nothing is
 * checked where the binary is not ELF (a Mach-O from a compiler on macOS).
 */
function checkExports(binary: Uint8Array, functions: readonly FunctionSpec[], cc: string, fileName: string): void {
  const exports = elfExports(binary);
  if (!exports) return;
  if (!exports.shared) {
    throw new FarmError("COMPILE_ERROR", `${cc} built no shared object from ${fileName}: do the flags stop before linking (-c, -E, -S)?`);
  }
  const found = new Set([...exports.functions, ...exports.untyped]);
  const missing = functions.map((f) => f.name).filter((name) => !found.has(name));
  if (missing.length === 0) return;
  const lines = [
    `${fileName} exports no function ${missing.map((n) => `"${n}"`).join(", ")} of \`functions\`; the shared object exports: ${listed(exports.functions)}`,
  ];
  for (const name of missing) {
    const mangled = exports.functions.find((e) => e.startsWith("_Z") && e.includes(`${name.length}${name}`));
    if (mangled) lines.push(`"${mangled}" is ${name} with a C++ mangled name: declare it extern "C" so that its name stays "${name}"`);
  }
  lines.push(
    "define each function of `functions` in the source under that name, with external linkage (not static, not hidden by -fvisibility=hidden), or take it out of `functions`",
  );
  throw new FarmError("COMPILE_ERROR", lines.join("\n"), { details: { missing, exports: exports.functions } });
}

/** The name of the file that checks the parameters; another where the source has that name. */
function paramsCheckName(fileName: string): string {
  const ext = extname(fileName) || ".c";
  return `kfarm-functions${ext}` === fileName ? `kfarm-functions-check${ext}` : `kfarm-functions${ext}`;
}

/**
 * A translation unit that calls each function of `functions` as a board
 * calls it — a pointer for each buffer, a value of its dtype for each
 * scalar — after the source itself, so that the compiler holds each call to
 * the function's prototype: a different number of parameters, or a pointer
 * where the C function takes a number (or the reverse), is its error.
 * Pointee types are not checked (a buffer may be `const float*`, `void*`, or
 * `long long*` for an int64 buffer), nor which number type a scalar is
 * (the C rules convert one to another silently). The Python SDK writes the
 * same file (compile_cpu.py), so that both SDKs give the same diagnostics.
 */
export function paramsCheckSource(fileName: string, functions: readonly FunctionSpec[]): string {
  const scalars = Object.entries(DTYPES).map(([dtype, info]) => `${info.c} kfarm_${dtype}`);
  const calls = functions.map((f) => {
    const args = f.params.map((p) => (p.kind === "buffer" ? "kfarm_buffer_arg" : `kfarm_${p.dtype}`));
    const decls = f.params.map((p) => `${p.dtype}${p.kind === "buffer" ? "*" : ""}`);
    return `  ${f.name}(${args.join(", ")}); /* functions.${f.name}: ${decls.length ? decls.join(", ") : "no parameters"} */`;
  });
  return [
    "/* kernelfarm: each function of `functions`, called as a board calls it (a pointer per buffer, a value per scalar). */",
    `#include "${fileName}"`,
    "#include <stdint.h>",
    "#ifdef __cplusplus",
    "struct kfarm_buffer { template <class T> operator T *() const { return 0; } };",
    "#else",
    "typedef void *kfarm_buffer;",
    '#pragma GCC diagnostic error "-Wint-conversion"',
    "#endif",
    `__attribute__((unused)) static void kfarm_functions(kfarm_buffer kfarm_buffer_arg, ${scalars.join(", ")}) {`,
    ...calls,
    "}",
    "",
  ].join("\n");
}

/**
 * Runs the parameter check (paramsCheckSource); resolves to COMPILE_ERROR when
 * `functions` declares parameters that its C functions do not take, where the
 * compiler can tell, else to undefined. It never rejects: it runs beside the
 * build, which may fail first (then `signal` stops it).
 */
async function checkParams(
  dir: string,
  functions: readonly FunctionSpec[],
  cc: string,
  flags: readonly string[],
  fileName: string,
  signal: AbortSignal,
): Promise<FarmError | undefined> {
  const check = paramsCheckName(fileName);
  try {
    await writeFile(join(dir, check), paramsCheckSource(fileName, functions));
    await run(cc, [...CPU_BASE_FLAGS, ...flags, "-fsyntax-only", check], { cwd: dir, maxBuffer: 16 << 20, signal });
    return undefined;
  } catch (err) {
    const e = err as NodeJS.ErrnoException & { stderr?: string };
    const diagnostics = (e.stderr ?? e.message)
      .split(dir + "/")
      .join("")
      .trim();
    return new FarmError(
      "COMPILE_ERROR",
      `${fileName}: its functions do not take the parameters that \`functions\` declares (${cc} checked ${check}, which calls each function of \`functions\` as a board calls it):\n${diagnostics}\n` +
        'list each function\'s parameters in `functions` in the order its C definition takes them: "DTYPE* name" for a pointer, "DTYPE name" for a number',
      { details: { diagnostics } },
    );
  }
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
    // The check runs beside the build (a second compiler process: on two cores it costs next to nothing).
    const stopChecking = new AbortController();
    const checking = checkParams(dir, functions, cc, flags, fileName, stopChecking.signal);
    try {
      await run(cc, [...CPU_BASE_FLAGS, ...flags, "-o", out, fileName], { cwd: dir, maxBuffer: 16 << 20 });
    } catch (err) {
      stopChecking.abort();
      await checking;
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
    let binary: Buffer;
    try {
      binary = await readFile(out);
      checkExports(binary, functions, cc, fileName);
    } catch (err) {
      await checking; // before the build directory goes
      throw err;
    }
    const mismatch = await checking;
    if (mismatch) throw mismatch;
    const bytes = encodeBundle({
      format: BUNDLE_FORMAT,
      version: BUNDLE_VERSION,
      target: "cpu",
      // What the compiler built for (a cross compiler's target), read from the binary; the host's where it cannot be read.
      targetDetails: { ...(binaryCpuTarget(binary) ?? hostCpuTarget()) },
      binary,
      functions,
      meta: { compiler: cc, flags: [...CPU_BASE_FLAGS, ...flags].join(" ") },
    });
    const digest = bundleDigest(bytes);
    return { bytes, name: `${digest.slice(0, 16)}.kfm`, digest, target: "cpu", functions };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
