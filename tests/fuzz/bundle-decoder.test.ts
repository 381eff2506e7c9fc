/**
 * Fuzz: the module bundle decoder (protos/bundle.ts), in process, with many
 * inputs — random bytes, real bundles (compileCpu) with bytes flipped,
 * inserted or cut, and msgpack records with bundle-like fields of any type.
 * Every input decodes to a bundle that validates, or is refused with
 * BAD_BUNDLE naming the field (or the foreign format, or that msgpack
 * failed) — never another error — and the decoder still decodes a good
 * bundle after it (msgpackr keeps state between calls).
 */
import assert from "node:assert/strict";
import { before, describe, it } from "node:test";
import { pack } from "msgpackr";
import { compileCpu } from "../../host-sdk/index.ts";
import { decodeBundle, FarmError, validateBundle } from "../../protos/index.ts";
import { fuzz } from "../helpers/fuzz.ts";
import { bundleInputs, checkRefusal } from "../helpers/bundle-inputs.ts";

describe("fuzz: the bundle decoder", () => {
  let good: Uint8Array;
  before(async () => {
    good = (await compileCpu("void f(float* a, int n) { for (int i = 0; i < n; i++) a[i] += 1; }", { functions: { f: ["float32* a", "int32 n"] } })).bytes;
  });

  /** One input: a bundle that validates, or the right refusal; and the decoder still works. */
  function check(bytes: Uint8Array): void {
    try {
      validateBundle(decodeBundle(bytes));
    } catch (err) {
      checkRefusal(err);
    }
    assert.equal(decodeBundle(good).functions[0]!.name, "f", "the decoder still decodes a good bundle");
  }

  it("decodes or refuses with BAD_BUNDLE naming the field, for random, mutated and ill-typed bundles", async () => {
    const n = await fuzz("bundle decoder", { runs: 20_000, seconds: 8 }, bundleInputs(good), (bytes) => check(bytes));
    assert.ok(n > 0);
  });

  it("regressions the fuzzer found, kept", () => {
    // A version (or any field) msgpack carries as a 64-bit integer decodes to a bigint, which JSON cannot quote: was a TypeError.
    for (const field of ["version", "format", "target"]) {
      const bytes = pack({ format: "kernelfarm.bundle", version: 1, target: "cpu", targetDetails: {}, binary: new Uint8Array(1), functions: [], [field]: 2n ** 63n });
      assert.throws(() => decodeBundle(bytes), (e: unknown) => e instanceof FarmError && e.code === "BAD_BUNDLE" && (e.details?.field as string) === field);
    }
    // …and nested in a list, as the fuzzer first met it (format: [bigint]).
    check(pack({ format: [2n ** 63n], version: 1, target: "cpu", targetDetails: {}, binary: new Uint8Array(1), functions: [] }));
  });
});
