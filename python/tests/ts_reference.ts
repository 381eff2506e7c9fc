/**
 * The TypeScript side of the Python twins' tests (compilers, precision,
 * throttle flag): runs a list of jobs against the real TypeScript code
 * (protos/, host-sdk/) and writes what each
 * gave, so python/tests can check the Python twins give the same bytes and
 * messages. Used by ts_reference.py.
 *
 *   node --import tsx python/tests/ts_reference.ts OUT.json < jobs.json
 *
 * jobs.json is a JSON list of { op, ... }; bytes travel as { "$hex": "..." }
 * both ways. OUT.json gets one { ok: true, value } or { ok: false, code,
 * message, details } per job, in order. The answer goes to a file, not
 * stdout, so that nothing a library logs can corrupt it.
 */
import { readFileSync, writeFileSync } from "node:fs";
import {
  DTYPES, FarmError, decodeBundle, encodeBundle, toLaunchConfig, validateBundle,
  type FunctionSpec, type LaunchDecl, type ModuleBundle,
} from "../../protos/index.ts";
import { hostCpuTarget, medianRse, throttledOf } from "../../domain/index.ts";
import { compileCpu, compileCuda, compileCudaMany, parseParam, type CompileCpuOptions, type CompileCudaOptions, type CompiledModule, type ParamDecl } from "../../host-sdk/index.ts";
import { cacheKey } from "../../host-sdk/cuda/cache.ts";
import { cleanDiagnostics } from "../../host-sdk/cuda/nvcc.ts";
import { parsePtxasInfo } from "../../host-sdk/cuda/ptxas-info.ts";
import { paramsCheckSource } from "../../host-sdk/compile-cpu.ts";

type Job = Record<string, unknown> & { op: string };

/** JSON from the Python side → JavaScript values: { $hex } becomes a Uint8Array. */
function revive(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(revive);
  if (typeof value === "object" && value !== null) {
    const o = value as Record<string, unknown>;
    if (typeof o.$hex === "string" && Object.keys(o).length === 1) return new Uint8Array(Buffer.from(o.$hex, "hex"));
    return Object.fromEntries(Object.entries(o).map(([k, v]) => [k, revive(v)]));
  }
  return value;
}

/** JavaScript values → JSON for the Python side: byte arrays as { $hex }. */
function toJson(value: unknown): unknown {
  if (value instanceof Uint8Array) return { $hex: Buffer.from(value.buffer, value.byteOffset, value.byteLength).toString("hex") };
  if (Array.isArray(value)) return value.map(toJson);
  if (typeof value === "object" && value !== null) return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, toJson(v)]));
  return value;
}

function moduleJson(m: CompiledModule): unknown {
  return { ...m, bytes: undefined, hex: Buffer.from(m.bytes).toString("hex") };
}

async function run(job: Job): Promise<unknown> {
  const j = revive(job) as Record<string, unknown>;
  switch (job.op) {
    case "encodeBundle":
      return Buffer.from(encodeBundle(j.bundle as ModuleBundle)).toString("hex");
    case "decodeBundle":
      return decodeBundle(new Uint8Array(Buffer.from(j.hex as string, "hex")));
    case "validateBundle":
      validateBundle(j.bundle);
      return null;
    case "toLaunchConfig":
      return toLaunchConfig(j.decl as LaunchDecl, j.where as string);
    case "hostCpuTarget":
      return hostCpuTarget();
    case "dtypes":
      return Object.keys(DTYPES);
    case "parseParam":
      return parseParam(j.decl as ParamDecl, j.index as number, j.fn as string);
    case "compileCpu":
      return moduleJson(await compileCpu(j.source as string, j.options as CompileCpuOptions));
    case "paramsCheckSource":
      return paramsCheckSource(j.fileName as string, j.functions as FunctionSpec[]);
    case "compileCuda":
      return moduleJson(await compileCuda(j.source as string, j.options as CompileCudaOptions));
    case "compileCudaMany":
      return (await compileCudaMany(j.jobs as Array<{ source: string } & CompileCudaOptions>)).map(moduleJson);
    case "cacheKey":
      return cacheKey(j.parts as Record<string, unknown>);
    case "parsePtxasInfo":
      return parsePtxasInfo(j.text as string);
    case "medianRse": {
      // Infinity is not JSON: sent as a string.
      const rse = medianRse(j.samples as number[]);
      return Number.isFinite(rse) ? rse : String(rse);
    }
    case "throttledOf":
      return throttledOf(j.conditions as Record<string, string>) ?? null;
    case "cleanDiagnostics":
      return cleanDiagnostics(j.stderr as string, j.dirs as string[]);
    default:
      throw new Error(`ts_reference: unknown op ${JSON.stringify(job.op)}`);
  }
}

const [out] = process.argv.slice(2);
if (!out) throw new Error("usage: ts_reference.ts OUT.json < jobs.json");
const jobs = JSON.parse(readFileSync(0, "utf8")) as Job[];
const results: unknown[] = [];
for (const job of jobs) {
  try {
    results.push({ ok: true, value: toJson(await run(job)) });
  } catch (err) {
    if (err instanceof FarmError) results.push({ ok: false, code: err.code, message: err.message, details: toJson(err.details ?? {}) });
    else results.push({ ok: false, code: "THROWN", message: String(err) });
  }
}
writeFileSync(out, JSON.stringify(results));
