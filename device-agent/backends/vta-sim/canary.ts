/**
 * The vta-sim board's canary: a 1×16 · 16×16 int8 GEMM (one VTA block, so
 * the packed layouts equal the plain ones), checked element by element
 * against a reference and against TVM's simulator statistics exactly.
 *
 * The agent may not import the host compiler, so the module is kept here
 * encoded: `vtaMatmul({ batch: 1, inFeatures: 16, outFeatures: 16 })`.
 * tests/vta-canary.test.ts recompiles it and fails if it differs;
 * `KFARM_UPDATE_FIXTURES=1` there rewrites this constant.
 */
export const VTA_CANARY_BUNDLE_BASE64 =
  "3gAHpmZvcm1hdLFrZXJuZWxmYXJtLmJ1bmRsZad2ZXJzaW9uAaZ0YXJnZXSjdnRhrXRhcmdldERldGFpbHPeAAGoaGFyZHdhcmW4MXgxNl9pOHc4YTMyXzE1XzE1XzE4XzE3pmJpbmFyecUBXt4AAqhoYXJkd2FyZbgxeDE2X2k4dzhhMzJfMTVfMTVfMThfMTepZnVuY3Rpb25z3gABpm1hdG11bN4AAaRydW5zkd4AA6VpbnNuc8SgAAAAAAAAAAABAAEAAQAAAKIAIAAIAAIAAAAAAAAAAAAQAQAAAAAAAAEAAQABAAAAwAAAAAAAAAABAAEAAQAAAAgEAAQAAAAAAQABAAEAAABCAUAACAACAAAAAAAAAAAAKQIAAAAAAAABAAEAAQAAAEABAAAAAAAAAAAAAAAAAAAYAAAAAAAAAAAAAAAAAAAAAwAAAAAAAAAAAAAAAAAAAKR1b3BzxAgAAAAAAAAAAKtyZWxvY2F0aW9uc5XeAAKkaW5zbgCmYnVmZmVy/94AAqRpbnNuAqZidWZmZXIA3gACpGluc24DpmJ1ZmZlcgHeAAKkaW5zbgSmYnVmZmVy/94AAqRpbnNuBqZidWZmZXICqWZ1bmN0aW9uc5HeAAKkbmFtZaZtYXRtdWymcGFyYW1zk94ABKRuYW1loUGka2luZKZidWZmZXKlZHR5cGWkaW50OKVzaGFwZZQBAQEQ3gAEpG5hbWWhV6RraW5kpmJ1ZmZlcqVkdHlwZaRpbnQ4pXNoYXBllAEBEBDeAASkbmFtZaFDpGtpbmSmYnVmZmVypWR0eXBlpGludDilc2hhcGWUAQEBEKRtZXRh3gACqGNvbXBpbGVyrmtlcm5lbGZhcm0tdnRhp2tlcm5lbHPZhVt7Im5hbWUiOiJtYXRtdWwiLCJraW5kIjoibWF0bXVsIiwic2NoZWR1bGUiOnsiYmF0Y2hCbG9jayI6MSwiaW5CbG9jayI6MSwib3V0QmxvY2siOjEsInZpcnR1YWxUaHJlYWRzIjoxLCJzdG9yZUdyYW51bGFyaXR5IjoidGlsZSJ9fV0=";

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
