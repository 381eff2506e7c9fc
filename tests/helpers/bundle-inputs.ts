/**
 * Inputs for fuzzing module bundles (tests/fuzz/): random bytes, a real
 * bundle with bytes flipped, inserted or cut, and msgpack records with
 * bundle-like fields of any type; and what a refusal of one must look like.
 */
import assert from "node:assert/strict";
import fc from "fast-check";
import { pack, unpack } from "msgpackr";
import { FarmError } from "../../protos/index.ts";

/** A value of any type, or (half the time) one a bundle field could hold. */
const anyValue = fc.oneof(
  fc.anything({ withBigInt: true, withTypedArray: true, withNullPrototype: true, withMap: true, withSet: true, withDate: true, maxDepth: 3 }),
  fc.constantFrom("kernelfarm.bundle", 1, "cpu", "cuda", "vta", "sm_90", "cubin", "x86_64", "linux", "float32", "buffer", "scalar", 2n ** 63n, -1, 0, 1.5, "", "__proto__"),
);

const param = fc.record(
  { name: fc.oneof(fc.string(), anyValue), kind: fc.oneof(fc.constantFrom("buffer", "scalar"), anyValue), dtype: fc.oneof(fc.constantFrom("float32", "int32", "uint8"), anyValue), shape: fc.oneof(fc.array(fc.integer()), anyValue) },
  { requiredKeys: [] },
);
const launch = fc.record({ grid: fc.oneof(fc.array(fc.integer(), { maxLength: 4 }), anyValue), block: fc.oneof(fc.array(fc.integer(), { maxLength: 4 }), anyValue), sharedMemBytes: fc.oneof(fc.integer(), anyValue) }, { requiredKeys: [] });
const fn = fc.record({ name: fc.oneof(fc.stringMatching(/^[A-Za-z_][A-Za-z0-9_]{0,8}$/), anyValue), params: fc.oneof(fc.array(param, { maxLength: 4 }), anyValue), launch: fc.oneof(launch, anyValue) }, { requiredKeys: [] });

/** A record with the bundle's fields, each valid-looking or of any type, some missing. */
export const illTypedBundle = fc
  .record(
    {
      format: fc.oneof(fc.constant("kernelfarm.bundle"), anyValue),
      version: fc.oneof(fc.constant(1), anyValue),
      target: fc.oneof(fc.constantFrom("cpu", "cuda", "vta"), anyValue),
      targetDetails: fc.oneof(fc.dictionary(fc.string(), fc.oneof(fc.string(), anyValue), { maxKeys: 4 }), anyValue),
      binary: fc.oneof(fc.uint8Array({ minLength: 1, maxLength: 64 }), anyValue),
      functions: fc.oneof(fc.array(fn, { maxLength: 3 }), anyValue),
      meta: fc.oneof(fc.dictionary(fc.string(), fc.string(), { maxKeys: 3 }), anyValue),
    },
    { requiredKeys: [] },
  )
  .map((r) => {
    try {
      return pack(r) as Uint8Array;
    } catch {
      return new Uint8Array(0); // a value msgpackr cannot pack: the empty input
    }
  });

/** `good` with flips, insertions and cuts (msgpack lengths and types changed, fields cut short). */
export function mutated(good: Uint8Array): fc.Arbitrary<Uint8Array> {
  const edit = fc.oneof(
    fc.record({ at: fc.nat(), byte: fc.integer({ min: 0, max: 255 }), how: fc.constant("set" as const) }),
    fc.record({ at: fc.nat(), byte: fc.integer({ min: 0, max: 255 }), how: fc.constant("insert" as const) }),
    fc.record({ at: fc.nat(), byte: fc.constant(0), how: fc.constant("cut" as const) }),
  );
  return fc.array(edit, { minLength: 1, maxLength: 6 }).map((edits) => {
    let b = Buffer.from(good);
    for (const e of edits) {
      const at = e.at % (b.length + 1);
      if (e.how === "set" && at < b.length) b[at] = e.byte;
      else if (e.how === "insert") b = Buffer.concat([b.subarray(0, at), Buffer.from([e.byte]), b.subarray(at)]);
      else b = b.subarray(0, at);
    }
    return new Uint8Array(b);
  });
}

/**
 * `good` with one field of its record replaced by a value of any type, or
 * removed; the binary kept (a load then fails, if at all, for the record's sake).
 */
export function fieldSwapped(good: Uint8Array): fc.Arbitrary<Uint8Array> {
  const record = unpack(good) as Record<string, unknown>;
  return fc.tuple(fc.constantFrom(...Object.keys(record), "functions.0.name", "functions.0.params", "functions.0.params.0.dtype", "functions.0.params.0.kind"), fc.option(anyValue, { nil: undefined })).map(([path, value]) => {
    const copy = unpack(good) as Record<string, unknown>;
    const keys = path.split(".");
    let at: Record<string, unknown> = copy;
    for (const k of keys.slice(0, -1)) at = at[k] as Record<string, unknown>;
    if (value === undefined) delete at[keys.at(-1)!];
    else at[keys.at(-1)!] = value;
    try {
      return pack(copy) as Uint8Array;
    } catch {
      return new Uint8Array(0);
    }
  });
}

/** Every kind of input, from the real bundle `good`. */
export function bundleInputs(good: Uint8Array): fc.Arbitrary<Uint8Array> {
  return fc.oneof(fc.uint8Array({ maxLength: 512 }), mutated(good), fieldSwapped(good), illTypedBundle);
}

/** A refusal of a bad bundle: BAD_BUNDLE naming the field, the foreign format, or that msgpack failed. */
export function checkRefusal(err: unknown): void {
  assert.ok(err instanceof FarmError, `not a FarmError: ${(err as Error)?.stack ?? String(err)}`);
  assert.equal(err.code, "BAD_BUNDLE", err.message);
  const named = typeof err.details?.field === "string" || typeof err.details?.format === "string" || /msgpack decoding failed/.test(err.message);
  assert.ok(named, `the refusal names no field: ${err.message}`);
}
