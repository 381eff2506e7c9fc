/**
 * The module bundle: one file per compiled module, built by the host
 * compilers, shipped with `upload` and checked by the agent before loading.
 *
 * Encoding: the protobuf message farm.v1.ModuleBundle (farm/v1/bundle.proto,
 * the schema of both SDKs), written by protobufjs in its canonical encoding
 * (the rules are in bundle.proto), so the Python SDK's google.protobuf writes
 * the same bytes for the same module and the bundle's sha256 is its content
 * address whichever SDK compiled it. `validateBundle` names the first bad
 * field, so a malformed or foreign file is refused with a clear message.
 */
import { createHash } from "node:crypto";
import { createRequire } from "node:module";
import { fileURLToPath } from "node:url";
import { FarmError } from "./errors.ts";
import { isDtype, type Dtype } from "./dtype.ts";
import type { ModuleBundle as ModuleBundleMessage, ModuleBundle__Output as ModuleBundleRead } from "./gen/farm/v1/ModuleBundle.ts";
import type { BundleEntry } from "./gen/farm/v1/BundleEntry.ts";
import type * as Protobuf from "protobufjs";

const require = createRequire(import.meta.url);
const protobuf = require("protobufjs") as typeof Protobuf;

// 64-bit fields (shape dims, shared memory) decode as JS numbers, as frames.ts has them.
protobuf.util.Long = undefined as never;
protobuf.configure();

const root = new protobuf.Root();
root.resolvePath = (_origin, target) => (target.startsWith("farm/") ? fileURLToPath(new URL(target, import.meta.url)) : target);
root.loadSync(["farm/v1/bundle.proto"], { keepCase: true });
const bundleType = root.lookupType("farm.v1.ModuleBundle");

export const BUNDLE_FORMAT = "kernelfarm.bundle";
/**
 * 2: the protobuf encoding of bundle.proto. 1 was msgpackr's encoding of the
 * same record (kernelfarm before the schema); a version-1 file is refused
 * with a message that says to recompile (decodeBundle).
 */
export const BUNDLE_VERSION = 2;
export const BUNDLE_TARGETS = ["cpu", "cuda", "vta"] as const;
export type BundleTarget = (typeof BUNDLE_TARGETS)[number];

export interface ParamSpec {
  name: string;
  kind: "buffer" | "scalar";
  dtype: Dtype;
  /** Fixed shape of a buffer parameter; absent: any shape. */
  shape?: number[];
}

/** A CUDA launch: grid and block as [x, y, z], dynamic shared memory in bytes. */
export interface LaunchConfig {
  grid: [number, number, number];
  block: [number, number, number];
  sharedMemBytes: number;
}

export interface FunctionSpec {
  name: string;
  params: ParamSpec[];
  /** CUDA: the launch configuration fixed at compile time; absent, every call gives one. */
  launch?: LaunchConfig;
}

export interface ModuleBundle {
  format: typeof BUNDLE_FORMAT;
  version: number;
  target: BundleTarget;
  /** e.g. { arch: "x86_64", os: "linux" } or { arch: "sm_90" }. */
  targetDetails: Record<string, string>;
  /** The loadable binary: shared object, cubin/fatbin, VTA program. */
  binary: Uint8Array;
  functions: FunctionSpec[];
  /** Free-form provenance: compiler, flags, source hash. */
  meta?: Record<string, string>;
}

/**
 * Runs the codec once on a bundle with every kind of field (a CUDA launch, a
 * fixed shape, meta): protobufjs builds each message type's encoder and
 * decoder on its first use, ~5 ms each way, which a session worker pays at
 * its start instead of in its first session's load_module (BENCHMARKS §1,
 * "grant → upload+load+nop call").
 */
export function warmBundleCodec(): void {
  const warm: ModuleBundle = {
    format: BUNDLE_FORMAT,
    version: BUNDLE_VERSION,
    target: "cuda",
    targetDetails: { arch: "sm_90", format: "cubin" },
    binary: new Uint8Array(1),
    functions: [
      { name: "k", params: [{ name: "x", kind: "buffer", dtype: "float32", shape: [1] }], launch: { grid: [1, 1, 1], block: [1, 1, 1], sharedMemBytes: 1 } },
    ],
    meta: { warm: "1" },
  };
  decodeBundle(encodeBundle(warm));
}

export function encodeBundle(bundle: ModuleBundle): Uint8Array {
  validateBundle(bundle);
  return encodeBundleUnchecked(bundle);
}

/**
 * The canonical bytes of `bundle` without validating it first. For tests of
 * the decoder's own checks, which need bytes the encoder would refuse to
 * write; everything else uses encodeBundle.
 */
export function encodeBundleUnchecked(bundle: ModuleBundle): Uint8Array {
  return bundleType.encode(toMessage(bundle)).finish();
}

/**
 * `b` as the message object protobufjs encodes, with every field that holds
 * its default left out (canonical rule 2 of bundle.proto): protobufjs writes
 * a field that is present even when it is 0 or "", where Python's protobuf
 * writes nothing, and the bytes would differ.
 */
function toMessage(b: ModuleBundle): ModuleBundleMessage {
  return {
    format: b.format || undefined,
    version: b.version || undefined,
    target: b.target || undefined,
    target_details: entries(b.targetDetails),
    binary: b.binary.byteLength ? b.binary : undefined,
    functions: b.functions.map((f) => ({
      name: f.name || undefined,
      params: f.params.map((p) => ({ name: p.name || undefined, kind: p.kind || undefined, dtype: p.dtype || undefined, shape: p.shape && { dims: p.shape } })),
      launch: f.launch && { grid: f.launch.grid, block: f.launch.block, shared_mem_bytes: f.launch.sharedMemBytes || undefined },
    })),
    meta: entries(b.meta ?? {}),
  };
}

/** A string map as bundle.proto stores it: entries sorted by the key's UTF-8 bytes (rule 4), empty values left out (rule 2). */
function entries(record: Record<string, string>): BundleEntry[] {
  return Object.entries(record)
    .map(([key, value]) => ({ key, utf8: Buffer.from(key, "utf8"), value }))
    .sort((a, b) => Buffer.compare(a.utf8, b.utf8))
    .map(({ key, value }) => ({ key: key || undefined, value: value || undefined }));
}

/** The record a decoded message holds; fields it lacks read as their defaults, so validation names them. */
function fromMessage(m: ModuleBundleRead): ModuleBundle {
  const record = (list: BundleEntry[]) => Object.fromEntries(list.map((e) => [e.key ?? "", e.value ?? ""]));
  const bundle: ModuleBundle = {
    format: m.format as typeof BUNDLE_FORMAT,
    version: m.version,
    target: m.target as BundleTarget,
    targetDetails: record(m.target_details),
    // A copy: protobufjs hands back a view of the file's bytes.
    binary: new Uint8Array(m.binary),
    functions: m.functions.map((f) => {
      const fn: FunctionSpec = {
        name: f.name,
        params: f.params.map((p) => {
          const param: ParamSpec = { name: p.name, kind: p.kind as ParamSpec["kind"], dtype: p.dtype as Dtype };
          if (p.shape) param.shape = [...p.shape.dims];
          return param;
        }),
      };
      if (f.launch)
        fn.launch = {
          grid: [...f.launch.grid] as LaunchConfig["grid"],
          block: [...f.launch.block] as LaunchConfig["block"],
          sharedMemBytes: f.launch.shared_mem_bytes,
        };
      return fn;
    }),
  };
  if (m.meta.length) bundle.meta = record(m.meta);
  return bundle;
}

/** What to do with a bundle this SDK does not read (old, or not canonical). */
const RECOMPILE =
  "recompile the module with this version of the SDK (compileCpu, compileCuda or compileVta; kernelfarm.compile_cpu or compile_cuda in Python) and upload what it returns";

export function decodeBundle(bytes: Uint8Array): ModuleBundle {
  const foreign = foreignFormat(bytes);
  if (foreign) throw new FarmError("BAD_BUNDLE", `not a kernelfarm module bundle: ${foreign.what}`, { details: { format: foreign.format } });
  if (isMsgpackBundle(bytes)) {
    throw new FarmError(
      "BAD_BUNDLE",
      `invalid module bundle: version is 1, the msgpack encoding of older kernelfarm SDKs; this build reads version ${BUNDLE_VERSION} (protobuf): ${RECOMPILE}`,
      { details: { field: "version", version: 1 } },
    );
  }
  let message: ModuleBundleRead;
  try {
    message = bundleType.decode(bytes) as unknown as ModuleBundleRead;
  } catch (err) {
    throw new FarmError(
      "BAD_BUNDLE",
      `not a kernelfarm module bundle: protobuf decoding failed (${(err as Error).message}); build modules with compileCpu, compileCuda or compileVta`,
      { cause: err },
    );
  }
  const bundle = fromMessage(message);
  validateBundle(bundle);
  // One module, one content address: bytes that decode but are not the canonical encoding (fields out of order, defaults written, entries unsorted, unknown fields) are refused, as the Python SDK refuses them.
  if (!Buffer.from(encodeBundleUnchecked(bundle)).equals(Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength))) {
    throw new FarmError(
      "BAD_BUNDLE",
      `invalid module bundle: (encoding) is not the canonical encoding of the bundle it holds (farm/v1/bundle.proto); ${RECOMPILE}`,
      { details: { field: "(encoding)" } },
    );
  }
  return bundle;
}

/**
 * Whether `bytes` are a version-1 bundle: msgpackr's record (a map16, as
 * msgpackr always wrote one) whose first key is "format", holding
 * "kernelfarm.bundle". Named so that an agent given an old module says to
 * recompile it rather than that it is not a bundle.
 */
function isMsgpackBundle(bytes: Uint8Array): boolean {
  const head = Buffer.from(bytes.buffer, bytes.byteOffset, Math.min(bytes.byteLength, 64));
  return head[0] === 0xde && head.indexOf(Buffer.from(`\xa6format\xb1${BUNDLE_FORMAT}`, "latin1")) === 3;
}

const COMPILE_HINT =
  "compile the source with compileCpu (C), compileCuda (CUDA) or compileVta, which pack the binary with its function table, and upload what they return";

/**
 * What a file that is not a bundle is, when it is one of the formats people
 * upload by mistake (a plain .so, a cubin or fatbin, TVM's exported lib.tar),
 * with what to do instead; undefined for anything else.
 */
export function foreignFormat(bytes: Uint8Array): { format: "elf" | "cubin" | "fatbin" | "tar" | "zip" | "gzip" | "ptx"; what: string } | undefined {
  const at = (offset: number, text: string) =>
    Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength)
      .subarray(offset, offset + text.length)
      .toString("latin1") === text;
  if (at(0, "\x7fELF")) {
    // e_machine (offset 18, little-endian on every target here): 190 is EM_CUDA.
    const machine = bytes.byteLength > 19 ? bytes[18]! | (bytes[19]! << 8) : 0;
    return machine === 190
      ? { format: "cubin", what: `a CUDA cubin (ELF for the GPU), which carries no function table: ${COMPILE_HINT}` }
      : { format: "elf", what: `a plain ELF file (a shared object such as a .so), which carries no function table: ${COMPILE_HINT}` };
  }
  if (at(0, "\x50\xed\x55\xba")) return { format: "fatbin", what: `a CUDA fatbin, which carries no function table: ${COMPILE_HINT}` };
  if (at(257, "ustar")) return { format: "tar", what: `a tar archive (TVM's export_library lib.tar?): TVM modules are not supported yet; ${COMPILE_HINT}` };
  if (at(0, "PK\x03\x04")) return { format: "zip", what: `a zip archive: ${COMPILE_HINT}` };
  if (at(0, "\x1f\x8b")) return { format: "gzip", what: `a gzip file (a compressed archive?): ${COMPILE_HINT}` };
  if (
    /^\s*(\/\/|\.version)/.test(Buffer.from(bytes.subarray(0, 64)).toString("latin1")) &&
    Buffer.from(bytes.subarray(0, 4096)).toString("latin1").includes(".target")
  ) {
    return { format: "ptx", what: `PTX text: ${COMPILE_HINT}` };
  }
  return undefined;
}

/** sha256 of the encoded bundle: its content address. */
export function bundleDigest(bytes: Uint8Array): string {
  return createHash("sha256").update(bytes).digest("hex");
}

/**
 * A field's value as a message quotes it: JSON, with a bigint as its digits
 * and an `n`, cut at 60 characters — validateBundle is also given callers'
 * records, which may hold any value of any size.
 */
function shown(value: unknown): string {
  let text: string | undefined;
  try {
    text = JSON.stringify(value, (_k, v: unknown) => (typeof v === "bigint" ? `${v}n` : v));
  } catch {
    text = undefined; // a cycle, or anything else JSON refuses, is named by its type
  }
  text ??= typeof value === "object" && value !== null ? `a ${value.constructor?.name ?? "record"}` : typeof value;
  return text.length > 60 ? `${text.slice(0, 60)}…` : text;
}

function bad(field: string, problem: string): never {
  throw new FarmError("BAD_BUNDLE", `invalid module bundle: ${field} ${problem}`, { details: { field } });
}

export function validateBundle(value: unknown): asserts value is ModuleBundle {
  if (typeof value !== "object" || value === null || Array.isArray(value)) bad("(root)", "is not a record");
  const b = value as Record<string, unknown>;
  if (b.format !== BUNDLE_FORMAT) bad("format", `is ${shown(b.format)}, expected "${BUNDLE_FORMAT}"`);
  if (b.version !== BUNDLE_VERSION) bad("version", `is ${shown(b.version)}; this build reads version ${BUNDLE_VERSION}`);
  if (!BUNDLE_TARGETS.includes(b.target as BundleTarget)) bad("target", `is ${shown(b.target)}, expected one of ${BUNDLE_TARGETS.join(", ")}`);
  if (typeof b.targetDetails !== "object" || b.targetDetails === null) bad("targetDetails", "is not a record");
  for (const [k, v] of Object.entries(b.targetDetails as object)) {
    if (typeof v !== "string") bad(`targetDetails.${k}`, "is not a string");
  }
  if (!(b.binary instanceof Uint8Array) || b.binary.byteLength === 0) bad("binary", "is missing or empty");
  if (!Array.isArray(b.functions) || b.functions.length === 0) bad("functions", "is missing or empty");
  const names = new Set<string>();
  b.functions.forEach((f: unknown, i: number) => {
    const at = `functions[${i}]`;
    if (typeof f !== "object" || f === null) bad(at, "is not a record");
    const fn = f as Record<string, unknown>;
    if (typeof fn.name !== "string" || !/^[A-Za-z_][A-Za-z0-9_]*$/.test(fn.name)) bad(`${at}.name`, `is not a C identifier: ${shown(fn.name)}`);
    if (names.has(fn.name)) bad(`${at}.name`, `repeats "${fn.name}"`);
    names.add(fn.name);
    if (!Array.isArray(fn.params)) bad(`${at}.params`, "is not a list");
    fn.params.forEach((p: unknown, j: number) => validateParam(p, `${at}.params[${j}]`));
    if (fn.launch !== undefined) {
      if (b.target !== "cuda") bad(`${at}.launch`, `is only meaningful for target cuda, not ${b.target}`);
      const problem = launchProblem(fn.launch);
      if (problem) bad(`${at}.launch`, problem);
    }
  });
  if (b.target === "cuda") {
    const d = b.targetDetails as Record<string, string>;
    if (!/^sm_\d+[a-z]?$/.test(d.arch ?? "")) bad("targetDetails.arch", `is ${shown(d.arch)}, expected a GPU architecture such as "sm_90"`);
    if (d.format !== "cubin" && d.format !== "fatbin") bad("targetDetails.format", `is ${shown(d.format)}, expected "cubin" or "fatbin"`);
  }
}

/** A grid or block size as users write it: 256, [64, 64] or [8, 8, 4]. */
export type Dim3 = number | readonly number[];
/** A launch configuration as users write it; see LaunchConfig. */
export interface LaunchDecl {
  grid: Dim3;
  block: Dim3;
  sharedMemBytes?: number;
}

/** The LaunchConfig for `decl` (missing dimensions are 1); INVALID_ARGUMENT naming `where` if it is not one. */
export function toLaunchConfig(decl: LaunchDecl, where: string): LaunchConfig {
  const dim = (d: Dim3): number[] => {
    const v = typeof d === "number" ? [d] : [...d];
    while (v.length < 3) v.push(1);
    return v;
  };
  const config = { grid: dim(decl.grid), block: dim(decl.block), sharedMemBytes: decl.sharedMemBytes ?? 0 } as LaunchConfig;
  const problem = launchProblem(config);
  if (problem) throw new FarmError("INVALID_ARGUMENT", `${where}: launch ${problem}`);
  return config;
}

/** Why `value` is not a LaunchConfig, or undefined when it is one. */
export function launchProblem(value: unknown): string | undefined {
  if (typeof value !== "object" || value === null) return "is not a record";
  const l = value as Record<string, unknown>;
  for (const dim of ["grid", "block"] as const) {
    const v = l[dim];
    if (!Array.isArray(v) || v.length !== 3 || !v.every((d) => Number.isInteger(d) && d >= 1 && d <= 0x7fffffff)) {
      return `${dim} is ${shown(v)}, expected [x, y, z] of positive integers`;
    }
  }
  // Safe integers: bundle.proto holds it as a uint64, which must come back as the same JavaScript number.
  if (!Number.isSafeInteger(l.sharedMemBytes) || (l.sharedMemBytes as number) < 0)
    return `sharedMemBytes is ${shown(l.sharedMemBytes)}, expected a non-negative integer`;
  return undefined;
}

/**
 * Why `p` is not a ParamSpec, as [the field under it (".dtype", or "" for
 * itself), the problem], or undefined when it is one. The compilers check
 * their users' own ParamSpecs with it before running a compiler.
 */
export function paramProblem(p: unknown): [string, string] | undefined {
  if (typeof p !== "object" || p === null || Array.isArray(p)) return ["", "is not a record"];
  const param = p as Record<string, unknown>;
  if (typeof param.name !== "string") return [".name", "is not a string"];
  if (param.kind !== "buffer" && param.kind !== "scalar") return [".kind", `is ${shown(param.kind)}, expected "buffer" or "scalar"`];
  if (!isDtype(param.dtype)) return [".dtype", `is not a known dtype: ${shown(param.dtype)}`];
  if (param.shape !== undefined) {
    if (param.kind !== "buffer") return [".shape", "is only allowed on buffers"];
    if (!Array.isArray(param.shape) || !param.shape.every((d) => Number.isSafeInteger(d) && d > 0)) return [".shape", "is not a list of positive integers"];
  }
  return undefined;
}

function validateParam(p: unknown, at: string): void {
  const problem = paramProblem(p);
  if (problem) bad(`${at}${problem[0]}`, problem[1]);
}
