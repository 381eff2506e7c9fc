import { decodeBundle } from "../../../protos/index.ts";
import type { ArgValue, Backend, CanaryResult } from "../backend.ts";
import { timeCanary } from "../canary-timing.ts";

/**
 * The VTA boards' canary (simulator and mmio alike): a 1×16 · 16×16 int8 GEMM (one VTA block, so
 * the packed layouts equal the plain ones), checked element by element
 * against a reference and against TVM's simulator statistics exactly.
 *
 * The agent may not import the host compiler, so the module is kept here
 * encoded: `vtaMatmul({ batch: 1, inFeatures: 16, outFeatures: 16 })`.
 * tests/vta-canary.test.ts recompiles it and fails if it differs;
 * `KFARM_UPDATE_FIXTURES=1` there rewrites this constant.
 */
export const VTA_CANARY_BUNDLE_BASE64 =
  "ChFrZXJuZWxmYXJtLmJ1bmRsZRACGgN2dGEiJAoIaGFyZHdhcmUSGDF4MTZfaTh3OGEzMl8xNV8xNV8xOF8xNyreAt4AAqhoYXJkd2FyZbgxeDE2X2k4dzhhMzJfMTVfMTVfMThfMTepZnVuY3Rpb25z3gABpm1hdG11bN4AAaRydW5zkd4AA6VpbnNuc8SgAAAAAAAAAAABAAEAAQAAAKIAIAAIAAIAAAAAAAAAAAAQAQAAAAAAAAEAAQABAAAAwAAAAAAAAAABAAEAAQAAAAgEAAQAAAAAAQABAAEAAABCAUAACAACAAAAAAAAAAAAKQIAAAAAAAABAAEAAQAAAEABAAAAAAAAAAAAAAAAAAAYAAAAAAAAAAAAAAAAAAAAAwAAAAAAAAAAAAAAAAAAAKR1b3BzxAgAAAAAAAAAAKtyZWxvY2F0aW9uc5XeAAKkaW5zbgCmYnVmZmVy/94AAqRpbnNuAqZidWZmZXIA3gACpGluc24DpmJ1ZmZlcgHeAAKkaW5zbgSmYnVmZmVy/94AAqRpbnNuBqZidWZmZXICMlkKBm1hdG11bBIZCgFBEgZidWZmZXIaBGludDgiBgoEAQEBEBIZCgFXEgZidWZmZXIaBGludDgiBgoEAQEQEBIZCgFDEgZidWZmZXIaBGludDgiBgoEAQEBEDoaCghjb21waWxlchIOa2VybmVsZmFybS12dGE6kQEKB2tlcm5lbHMShQFbeyJuYW1lIjoibWF0bXVsIiwia2luZCI6Im1hdG11bCIsInNjaGVkdWxlIjp7ImJhdGNoQmxvY2siOjEsImluQmxvY2siOjEsIm91dEJsb2NrIjoxLCJ2aXJ0dWFsVGhyZWFkcyI6MSwic3RvcmVHcmFudWxhcml0eSI6InRpbGUifX1d";

export const VTA_CANARY_FUNCTION = "matmul";

/** What TVM's simulator counts for one run of it. */
export const VTA_CANARY_STATS = {
  inp_load_nbytes: 16,
  wgt_load_nbytes: 256,
  acc_load_nbytes: 0,
  uop_load_nbytes: 8,
  out_store_nbytes: 16,
  gemm_counter: 1,
  alu_counter: 0,
} as const;

/** A [1×16] and W [16×16], int8, fixed patterns with negative values. */
export function vtaCanaryInputs(): { a: Int8Array; w: Int8Array } {
  const a = Int8Array.from({ length: 16 }, (_, i) => (i % 5) - 2);
  const w = Int8Array.from({ length: 256 }, (_, k) => ((Math.floor(k / 16) + 2 * (k % 16)) % 7) - 3);
  return { a, w };
}

/** C[o] = Σ A[i]·W[o][i], clipped to int8 (no shift). */
export function vtaCanaryReference(a: Int8Array, w: Int8Array): Int8Array {
  return Int8Array.from({ length: 16 }, (_, o) => {
    let acc = 0;
    for (let i = 0; i < 16; i++) acc += a[i]! * w[o * 16 + i]!;
    return Math.max(-128, Math.min(127, acc));
  });
}

/** Runs of the canary GEMM per timed repeat. */
const CANARY_NUMBER = 10;

/**
 * Runs the canary on `board` through the path sessions use (load, alloc,
 * invoke), checks the output and the statistics exactly, times it, and
 * resets the board. Runs only on an idle board.
 */
export function runVtaCanary(board: Backend): CanaryResult {
  const module = board.load(decodeBundle(Buffer.from(VTA_CANARY_BUNDLE_BASE64, "base64")), "");
  const fn = module.functions.get(VTA_CANARY_FUNCTION)!;
  const { a, w } = vtaCanaryInputs();
  const arrays = [a, w, new Int8Array(16)].map((data) => {
    const array = board.alloc(data.byteLength);
    array.write(0, new Uint8Array(data.buffer));
    return array;
  });
  try {
    board.clearStats();
    const args: ArgValue[] = arrays.map((array) => ({ kind: "buffer", array }));
    board.invoke(fn, args);
    const out = new Int8Array(Uint8Array.from(arrays[2]!.read(0, 16)).buffer);
    const want = vtaCanaryReference(a, w);
    const bad = out.findIndex((v, i) => v !== want[i]);
    if (bad >= 0) return { ok: false, detail: `gemm C[${bad}] = ${out[bad]}, expected ${want[bad]}` };
    const counters = board.stats().counters;
    for (const [name, value] of Object.entries(VTA_CANARY_STATS)) {
      if (counters[name] !== value) return { ok: false, detail: `gemm ${name} = ${counters[name]}, expected ${value}` };
    }
    const kernelNs = timeCanary((number) => board.timeCalls(fn, args, number), CANARY_NUMBER);
    return { ok: true, detail: "gemm 1×16·16×16 int8 exact, statistics exact", kernelNs };
  } finally {
    board.reset();
  }
}
