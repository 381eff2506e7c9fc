/**
 * Inputs for fuzzing module bundles (tests/fuzz/): random bytes, a real
 * bundle with bytes flipped, inserted or cut, bundles whose fields hold odd
 * values of their type (any string, any number), and protobuf field soup
 * (any field number, any wire type); and what a refusal of one must look like.
 */
import assert from "node:assert/strict";
import { createRequire } from "node:module";
import fc from "fast-check";
import { FarmError } from "../../protos/index.ts";
import { decodeBundle, encodeBundleUnchecked, type ModuleBundle } from "../../protos/bundle.ts";
import type * as Protobuf from "protobufjs";

const protobuf = createRequire(import.meta.url)("protobufjs") as typeof Protobuf;

/** A string a bundle field could hold, or any string. */
const anyString = fc.oneof(
  fc.string(),
  fc.constantFrom("kernelfarm.bundle", "cpu", "cuda", "vta", "sm_90", "cubin", "x86_64", "linux", "float32", "buffer", "scalar", "", "__proto__"),
);
/** A number as a uint32 or uint64 field holds it. */
const anyCount = fc.oneof(fc.constantFrom(0, 1, 2, 3, 0x7fffffff, 0x80000000, 2 ** 32 - 1), fc.nat(), fc.maxSafeNat());
const dims = fc.array(anyCount, { maxLength: 4 });
const stringRecord = fc.dictionary(anyString, anyString, { maxKeys: 4 });

const param = fc.record(
  { name: anyString, kind: anyString, dtype: anyString, shape: fc.option(dims, { nil: undefined }) },
  { requiredKeys: ["name", "kind", "dtype"] },
);
const launch = fc.record({ grid: dims, block: dims, sharedMemBytes: anyCount });
const fn = fc.record(
  {
    name: fc.oneof(fc.stringMatching(/^[A-Za-z_][A-Za-z0-9_]{0,8}$/), anyString),
    params: fc.array(param, { maxLength: 4 }),
    launch: fc.option(launch, { nil: undefined }),
  },
  { requiredKeys: ["name", "params"] },
);

/** A bundle whose every field holds a value of its type, valid-looking or not. */
export const oddBundle = fc
  .record(
    {
      format: fc.oneof(fc.constant("kernelfarm.bundle"), anyString),
      version: fc.oneof(fc.constant(2), anyCount),
      target: fc.oneof(fc.constantFrom("cpu", "cuda", "vta"), anyString),
      targetDetails: stringRecord,
      binary: fc.uint8Array({ maxLength: 64 }),
      functions: fc.array(fn, { maxLength: 3 }),
      meta: fc.option(stringRecord, { nil: undefined }),
    },
    { requiredKeys: ["format", "version", "target", "targetDetails", "binary", "functions"] },
  )
  .map((r) => encodeBundleUnchecked(r as unknown as ModuleBundle));

/** Protobuf fields of any number and wire type, nested at times: what a foreign or corrupt writer could produce. */
export const protobufSoup = fc
  .array(
    fc.record({
      field: fc.integer({ min: 1, max: 12 }),
      wire: fc.constantFrom(0, 1, 2, 3, 4, 5),
      value: fc.maxSafeNat(),
      bytes: fc.uint8Array({ maxLength: 24 }),
    }),
    { maxLength: 8 },
  )
  .map((fields) => {
    const w = protobuf.Writer.create();
    for (const f of fields) {
      w.uint32((f.field << 3) | f.wire);
      if (f.wire === 0) w.uint64(f.value);
      else if (f.wire === 1) w.fixed64(f.value);
      else if (f.wire === 2) w.bytes(f.bytes);
      else if (f.wire === 5) w.fixed32(f.value >>> 0);
    }
    return w.finish();
  });

/** `good` with flips, insertions and cuts (protobuf tags, lengths and values changed, fields cut short). */
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
 * `good` with one field replaced by another value of its type, or removed;
 * the binary kept (a load then fails, if at all, for the record's sake).
 */
export function fieldSwapped(good: Uint8Array): fc.Arbitrary<Uint8Array> {
  const paths = [
    "format",
    "version",
    "target",
    "targetDetails",
    "functions",
    "meta",
    "functions.0.name",
    "functions.0.params",
    "functions.0.params.0.dtype",
    "functions.0.params.0.kind",
    "functions.0.params.0.shape",
  ];
  const values = fc.oneof(anyString, anyCount, stringRecord, dims, fc.array(fn, { maxLength: 2 }), fc.array(param, { maxLength: 2 }));
  return fc.tuple(fc.constantFrom(...paths), fc.option(values, { nil: undefined })).map(([path, value]) => {
    const copy = decodeBundle(good) as unknown as Record<string, unknown>;
    const keys = path.split(".");
    let at: Record<string, unknown> = copy;
    for (const k of keys.slice(0, -1)) at = at[k] as Record<string, unknown>;
    if (value === undefined) delete at[keys.at(-1)!];
    else at[keys.at(-1)!] = value;
    try {
      return encodeBundleUnchecked(copy as unknown as ModuleBundle);
    } catch {
      return new Uint8Array(0); // a value of another field's type, which the schema cannot hold: the empty input
    }
  });
}

/** Every kind of input, from the real bundle `good`. */
export function bundleInputs(good: Uint8Array): fc.Arbitrary<Uint8Array> {
  return fc.oneof(fc.uint8Array({ maxLength: 512 }), mutated(good), fieldSwapped(good), oddBundle, protobufSoup);
}

/** A refusal of a bad bundle: BAD_BUNDLE naming the field, the foreign format, or that protobuf decoding failed. */
export function checkRefusal(err: unknown): void {
  assert.ok(err instanceof FarmError, `not a FarmError: ${(err as Error)?.stack ?? String(err)}`);
  assert.equal(err.code, "BAD_BUNDLE", err.message);
  const named = typeof err.details?.field === "string" || typeof err.details?.format === "string" || /protobuf decoding failed/.test(err.message);
  assert.ok(named, `the refusal names no field: ${err.message}`);
}
