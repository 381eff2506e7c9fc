/**
 * Fuzz: the module bundle decoder (protos/bundle.ts), in process, with many
 * inputs — random bytes, real bundles (compileCpu) with bytes flipped,
 * inserted or cut, bundles whose fields hold odd values of their type, and
 * protobuf field soup. Every input decodes to a bundle that validates, or is
 * refused with BAD_BUNDLE naming the field (or the foreign format, or that
 * protobuf decoding failed) — never another error — and the decoder still
 * decodes a good bundle after it.
 */
import assert from "node:assert/strict";
import { before, describe, it } from "node:test";
import { compileCpu } from "../../host-sdk/index.ts";
import { decodeBundle, FarmError, validateBundle } from "../../protos/index.ts";
import { encodeBundleUnchecked, type ModuleBundle } from "../../protos/bundle.ts";
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

  it("a 64-bit field beyond 2^53 is refused, not read back as another number", () => {
    // protobufjs reads a uint64 as the nearest JavaScript number, which past 2^53 is not the one written: refused, as Python refuses it.
    // eslint-disable-next-line @typescript-eslint/no-explicit-any -- reaching into a decoded bundle to break one field
    const bundle = decodeBundle(good) as unknown as Record<string, any>;
    bundle.functions[0].params[0].shape = [2 ** 60];
    assert.throws(
      () => decodeBundle(encodeBundleUnchecked(bundle as ModuleBundle)),
      (e: unknown) => e instanceof FarmError && e.code === "BAD_BUNDLE" && e.details?.field === "functions[0].params[0].shape",
    );
  });
});
