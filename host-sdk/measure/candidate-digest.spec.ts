/** The canonical form both SDKs digest (docs/measure.md, "Resuming a batch"): what it writes, and what changes a digest. */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { candidateDigest, canonicalJson } from "./candidate-digest.ts";

describe("canonicalJson", () => {
  it("sorts keys, drops null and undefined, writes integers as integers and other numbers as their bits", () => {
    assert.equal(
      canonicalJson({ b: 1, a: [1.0, -0, 0.1, 1e-5, "é\n"], c: null, d: undefined, e: true }),
      '{"a":[1,0,"f64:3fb999999999999a","f64:3ee4f8b588e368f1","é\\n"],"b":1,"e":true}',
    );
    assert.equal(canonicalJson(2 ** 53), '"f64:4340000000000000"', "beyond 2^53 an integer is not exact in both languages: its bits");
    assert.throws(() => canonicalJson({ x: Number.NaN }), /NaN has no canonical form/);
    assert.throws(() => canonicalJson({ f: () => 1 }), /a function has no canonical form/);
  });
});

describe("candidateDigest", () => {
  const base = {
    moduleDigest: "ab".repeat(32),
    function: "f",
    args: [
      { input: Float32Array.of(1, 2) },
      { random: { seed: 3 }, shape: [2], dtype: "float32" as const },
      { output: { shape: [2], dtype: "float32" as const } },
      { scalar: 2 },
    ],
  };
  const d0 = candidateDigest(base);

  it("is the same for the same definition, whatever defaults are spelled out", () => {
    assert.match(d0, /^[0-9a-f]{64}$/);
    assert.equal(candidateDigest({ ...base, atol: 0, timeEvaluator: { number: 10, repeat: 3 }, timeoutMs: 10_000 }), d0);
    assert.equal(
      candidateDigest({ ...base, launch: { grid: 1, block: [32] } }),
      candidateDigest({ ...base, launch: { grid: [1, 1, 1], block: [32, 1, 1], sharedMemBytes: 0 } }),
    );
  });

  it("changes with the module, an input's bytes, the seed, a tolerance, a timing option, the timeout", () => {
    const changed = [
      { ...base, moduleDigest: "cd".repeat(32) },
      { ...base, args: [{ input: Float32Array.of(1, 3) }, ...base.args.slice(1)] },
      { ...base, args: [base.args[0]!, { random: { seed: 4 }, shape: [2], dtype: "float32" as const }, ...base.args.slice(2)] },
      { ...base, rtol: 1e-5 },
      { ...base, timeEvaluator: { repeat: 5 } },
      { ...base, timeoutMs: 20_000 },
      { ...base, definition: { source: "x" } },
    ].map(candidateDigest);
    assert.equal(new Set([d0, ...changed]).size, changed.length + 1);
  });

  it("with a definition, needs no module digest", () => {
    assert.equal(
      candidateDigest({ ...base, moduleDigest: undefined, definition: { source: "x", arch: "sm_90" } }),
      candidateDigest({ ...base, moduleDigest: "ef".repeat(32), definition: { arch: "sm_90", source: "x" } }),
    );
    assert.throws(() => candidateDigest({ ...base, moduleDigest: undefined }), /a module digest or a definition is needed/);
  });
});
