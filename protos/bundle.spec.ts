/** The module bundle: round trip, and validation that names the bad field. */
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { describe, it } from "node:test";
import {
  BUNDLE_FORMAT,
  BUNDLE_VERSION,
  bundleDigest,
  decodeBundle,
  encodeBundle,
  encodeBundleUnchecked,
  toLaunchConfig,
  validateBundle,
  warmBundleCodec,
  type ModuleBundle,
} from "./bundle.ts";
import { createRequire } from "node:module";
import { fileURLToPath } from "node:url";
import { FarmError } from "./errors.ts";
import type * as Protobuf from "protobufjs";

/** bundle.proto read by protobufjs with none of bundle.ts's canonical rules: to write bytes the encoder never writes. */
const protobuf = createRequire(import.meta.url)("protobufjs") as typeof Protobuf;
const rawRoot = new protobuf.Root();
rawRoot.resolvePath = (_origin, target) => (target.startsWith("farm/") ? fileURLToPath(new URL(target, import.meta.url)) : target);
rawRoot.loadSync(["farm/v1/bundle.proto"], { keepCase: true });
const rawBundle = rawRoot.lookupType("farm.v1.ModuleBundle");

/** A CUDA bundle with every canonical rule at work: an empty value, meta out of order, a 0-d shape, zero shared memory. */
function canonicalCase(): ModuleBundle {
  return {
    format: BUNDLE_FORMAT,
    version: BUNDLE_VERSION,
    target: "cuda",
    targetDetails: { os: "", arch: "sm_90", format: "cubin" },
    binary: Uint8Array.from([0x7f, 0x45, 0x4c, 0x46]),
    functions: [
      {
        name: "f",
        params: [
          { name: "a", kind: "buffer", dtype: "float32", shape: [] },
          { name: "n", kind: "scalar", dtype: "int32" },
        ],
        launch: { grid: [1, 2, 3], block: [4, 1, 1], sharedMemBytes: 0 },
      },
    ],
    meta: { z: "1", a: "2" },
  };
}
/**
 * Its bytes, pinned: a change of encoding changes every module's content
 * address, so it must be deliberate (a new BUNDLE_VERSION). The Python SDK
 * writes the same (python/tests/test_bundle.py).
 */
const CANONICAL_CASE_HEX =
  "0a116b65726e656c6661726d2e62756e646c6510021a0463756461220d0a04617263681205736d5f3930220f0a06666f726d61741205637562696e22040a026f732a047f454c46" +
  "323b0a016612160a016112066275666665721a07666c6f61743332220012120a016e12067363616c61721a05696e7433321a0a0a0301020312030401013a060a01611201323a060a017a120131";
/** A version-1 bundle as kernelfarm's msgpackr encoder wrote it (cpu, x86_64/linux, an ELF magic, one function `f`). */
const MSGPACK_V1_HEX =
  "de0006a6666f726d6174b16b65726e656c6661726d2e62756e646c65a776657273696f6e01a6746172676574a3637075ad74617267657444657461696c73de0002a461726368a6783836" +
  "5f3634a26f73a56c696e7578a662696e617279c4047f454c46a966756e6374696f6e7391de0002a46e616d65a166a6706172616d7390";

function goodBundle(): ModuleBundle {
  return {
    format: BUNDLE_FORMAT,
    version: BUNDLE_VERSION,
    target: "cpu",
    targetDetails: { arch: "x86_64", os: "linux" },
    binary: Uint8Array.from([0x7f, 0x45, 0x4c, 0x46, 1, 2, 3]),
    functions: [
      {
        name: "vadd",
        params: [
          { name: "a", kind: "buffer", dtype: "float32", shape: [4, 4] },
          { name: "b", kind: "buffer", dtype: "float32" },
          { name: "n", kind: "scalar", dtype: "int32" },
        ],
      },
      { name: "nop", params: [] },
    ],
    meta: { compiler: "cc" },
  };
}

/** A copy of the good bundle with `mutate` applied, as a loose record. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- mutations reach deep into the copy (b.functions[1].launch): any keeps them one line each
function broken(mutate: (b: Record<string, any>) => void): Record<string, unknown> {
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- as above
  const b = structuredClone(goodBundle()) as Record<string, any>;
  mutate(b);
  return b;
}

/** Asserts BAD_BUNDLE whose details.field and message name `field`. */
function assertBad(value: unknown, field: string, alsoMatch?: RegExp): void {
  const check = (e: unknown) => {
    assert.ok(e instanceof FarmError, `expected a FarmError, got ${String(e)}`);
    assert.equal(e.code, "BAD_BUNDLE");
    assert.equal(e.details?.field, field);
    assert.ok(e.message.includes(field), `message ${JSON.stringify(e.message)} should name ${field}`);
    if (alsoMatch) assert.match(e.message, alsoMatch);
    return true;
  };
  assert.throws(() => validateBundle(value), check);
  // The same check guards decoding, for a record the schema can hold (a string where bytes go cannot be written at all).
  if (onTheWire(value)) assert.throws(() => decodeBundle(encodeBundleUnchecked(value as ModuleBundle)), check);
}

/** Whether bundle.proto can carry `value`'s mistake: every field of the type its message field has. */
function onTheWire(value: unknown): boolean {
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- the fuzzer's values are of no type: each field is looked at as it is
  const b = value as Record<string, any>;
  const strings = (...v: unknown[]) => v.every((x) => typeof x === "string");
  const record = (r: unknown) => typeof r === "object" && r !== null && Object.values(r).every((x) => typeof x === "string");
  const ints = (a: unknown) => Array.isArray(a) && a.every((d) => Number.isSafeInteger(d) && d >= 0);
  return (
    typeof b === "object" &&
    b !== null &&
    !Array.isArray(b) &&
    strings(b.format, b.target) &&
    Number.isSafeInteger(b.version) &&
    record(b.targetDetails) &&
    b.binary instanceof Uint8Array &&
    (b.meta === undefined || record(b.meta)) &&
    Array.isArray(b.functions) &&
    b.functions.every(
      // eslint-disable-next-line @typescript-eslint/no-explicit-any -- as above
      (f: any) =>
        typeof f === "object" &&
        f !== null &&
        typeof f.name === "string" &&
        Array.isArray(f.params) &&
        // eslint-disable-next-line @typescript-eslint/no-explicit-any -- as above
        f.params.every((p: any) => strings(p.name, p.kind, p.dtype) && (p.shape === undefined || ints(p.shape))) &&
        (f.launch === undefined ||
          (ints(f.launch.grid) && ints(f.launch.block) && Number.isSafeInteger(f.launch.sharedMemBytes) && f.launch.sharedMemBytes >= 0)),
    )
  );
}

describe("module bundle", () => {
  it("round-trips through encode/decode", () => {
    const b = goodBundle();
    const bytes = encodeBundle(b);
    const back = decodeBundle(bytes);
    assert.equal(back.format, BUNDLE_FORMAT);
    assert.equal(back.version, BUNDLE_VERSION);
    assert.equal(back.target, "cpu");
    assert.deepEqual(back.targetDetails, b.targetDetails);
    assert.ok(back.binary instanceof Uint8Array);
    assert.deepEqual([...back.binary], [...b.binary]);
    assert.deepEqual(back.functions, b.functions);
    assert.deepEqual(back.meta, b.meta);
  });

  it("warms its codec on a bundle it accepts: every session worker runs it before it says ready", () => {
    assert.doesNotThrow(() => warmBundleCodec());
  });

  it("is content-addressed: same bundle same digest, different binary different digest", () => {
    const d1 = bundleDigest(encodeBundle(goodBundle()));
    assert.match(d1, /^[0-9a-f]{64}$/);
    assert.equal(bundleDigest(encodeBundle(goodBundle())), d1);
    const other = goodBundle();
    other.binary = Uint8Array.from([9, 9, 9]);
    assert.notEqual(bundleDigest(encodeBundle(other)), d1);
  });

  it("writes the canonical encoding, byte for byte, and reads it back", () => {
    const bytes = encodeBundle(canonicalCase());
    assert.equal(Buffer.from(bytes).toString("hex"), CANONICAL_CASE_HEX);
    assert.deepEqual(decodeBundle(bytes), { ...canonicalCase(), binary: canonicalCase().binary });
    // Key order of a record does not matter: entries are sorted.
    const reordered = canonicalCase();
    reordered.targetDetails = { format: "cubin", os: "", arch: "sm_90" };
    assert.equal(Buffer.from(encodeBundle(reordered)).toString("hex"), CANONICAL_CASE_HEX);
  });

  it("refuses a version-1 (msgpack) bundle, saying to recompile with this SDK", () => {
    assert.throws(
      () => decodeBundle(Buffer.from(MSGPACK_V1_HEX, "hex")),
      (e: unknown) =>
        e instanceof FarmError &&
        e.code === "BAD_BUNDLE" &&
        e.details?.field === "version" &&
        /version is 1, the msgpack encoding/.test(e.message) &&
        /recompile the module with this version of the SDK/.test(e.message),
    );
  });

  it("refuses bytes that decode but are not the canonical encoding", () => {
    const message = (over: Record<string, unknown>) => ({
      format: BUNDLE_FORMAT,
      version: BUNDLE_VERSION,
      target: "cpu",
      binary: Uint8Array.from([1]),
      functions: [{ name: "f" }],
      target_details: [
        { key: "arch", value: "x86_64" },
        { key: "os", value: "linux" },
      ],
      ...over,
    });
    const canonical = rawBundle.encode(message({})).finish();
    assert.equal(decodeBundle(canonical).functions[0]!.name, "f", "the baseline is canonical");
    const cases: Record<string, Uint8Array> = {
      "a default written (protobufjs writes a present 0)": rawBundle
        .encode(
          message({
            functions: [{ name: "f", params: [{ name: "n", kind: "scalar", dtype: "int32", shape: null }], launch: undefined }],
            meta: [{ key: "k", value: "" }],
          }),
        )
        .finish(),
      "entries out of order": rawBundle
        .encode(
          message({
            target_details: [
              { key: "os", value: "linux" },
              { key: "arch", value: "x86_64" },
            ],
          }),
        )
        .finish(),
      "a key twice": rawBundle
        .encode(
          message({
            target_details: [
              { key: "arch", value: "x86_64" },
              { key: "arch", value: "x86_64" },
              { key: "os", value: "linux" },
            ],
          }),
        )
        .finish(),
      "an unknown field": Buffer.concat([canonical, Buffer.from([0x40, 0x01])]),
      "fields out of order": Buffer.concat([canonical.subarray(19), canonical.subarray(0, 19)]),
    };
    for (const [name, bytes] of Object.entries(cases)) {
      assert.throws(
        () => decodeBundle(bytes),
        (e: unknown) => e instanceof FarmError && e.code === "BAD_BUNDLE" && e.details?.field === "(encoding)" && /not the canonical encoding/.test(e.message),
        name,
      );
    }
  });

  it("encodeBundle refuses an invalid bundle", () => {
    const b = goodBundle();
    b.functions = [];
    assert.throws(
      () => encodeBundle(b),
      (e: FarmError) => e.code === "BAD_BUNDLE" && e.details?.field === "functions",
    );
  });

  describe("validateBundle names the bad field", () => {
    it("root that is not a record", () => {
      for (const v of [null, 42, "bundle", [1, 2]]) assertBad(v, "(root)");
    });
    it("wrong format tag", () =>
      assertBad(
        broken((b) => (b.format = "tvm.module")),
        "format",
        /tvm\.module/,
      ));
    it("missing format tag", () =>
      assertBad(
        broken((b) => delete b.format),
        "format",
      ));
    it("wrong version", () =>
      assertBad(
        broken((b) => (b.version = 3)),
        "version",
        /\b3\b.*version 2/,
      ));
    it("unknown target", () =>
      assertBad(
        broken((b) => (b.target = "tpu")),
        "target",
        /tpu.*cpu, cuda, vta/,
      ));
    it("targetDetails that is not a record", () =>
      assertBad(
        broken((b) => (b.targetDetails = null)),
        "targetDetails",
      ));
    it("targetDetails with a non-string value", () =>
      assertBad(
        broken((b) => (b.targetDetails.arch = 64)),
        "targetDetails.arch",
      ));
    it("empty binary", () =>
      assertBad(
        broken((b) => (b.binary = new Uint8Array(0))),
        "binary",
        /empty/,
      ));
    it("binary that is not bytes", () =>
      assertBad(
        broken((b) => (b.binary = "ELF")),
        "binary",
      ));
    it("no functions", () => {
      assertBad(
        broken((b) => (b.functions = [])),
        "functions",
      );
      assertBad(
        broken((b) => delete b.functions),
        "functions",
      );
    });
    it("function that is not a record", () =>
      assertBad(
        broken((b) => (b.functions[1] = 7)),
        "functions[1]",
      ));
    it("bad function name", () => {
      assertBad(
        broken((b) => (b.functions[0].name = "1vadd")),
        "functions[0].name",
        /C identifier/,
      );
      assertBad(
        broken((b) => (b.functions[1].name = "no-dash")),
        "functions[1].name",
        /no-dash/,
      );
      assertBad(
        broken((b) => (b.functions[0].name = "")),
        "functions[0].name",
      );
      assertBad(
        broken((b) => (b.functions[0].name = 3)),
        "functions[0].name",
      );
    });
    it("duplicate function names", () =>
      assertBad(
        broken((b) => (b.functions[1].name = "vadd")),
        "functions[1].name",
        /repeats "vadd"/,
      ));
    it("params that is not a list", () =>
      assertBad(
        broken((b) => (b.functions[1].params = {})),
        "functions[1].params",
      ));
    it("param without a name", () =>
      assertBad(
        broken((b) => delete b.functions[0].params[2].name),
        "functions[0].params[2].name",
      ));
    it("bad param kind", () =>
      assertBad(
        broken((b) => (b.functions[0].params[1].kind = "pointer")),
        "functions[0].params[1].kind",
        /pointer/,
      ));
    it("bad param dtype", () =>
      assertBad(
        broken((b) => (b.functions[0].params[2].dtype = "int128")),
        "functions[0].params[2].dtype",
        /int128/,
      ));
    it("shape on a scalar", () =>
      assertBad(
        broken((b) => (b.functions[0].params[2].shape = [1])),
        "functions[0].params[2].shape",
        /only allowed on buffers/,
      ));
    it("shape that is not positive integers", () => {
      assertBad(
        broken((b) => (b.functions[0].params[0].shape = [4, 0])),
        "functions[0].params[0].shape",
      );
      assertBad(
        broken((b) => (b.functions[0].params[0].shape = [2.5])),
        "functions[0].params[0].shape",
      );
      assertBad(
        broken((b) => (b.functions[0].params[0].shape = "4x4")),
        "functions[0].params[0].shape",
      );
    });
    it("launch on a CPU function", () =>
      assertBad(
        broken((b) => (b.functions[1].launch = { grid: [1, 1, 1], block: [1, 1, 1], sharedMemBytes: 0 })),
        "functions[1].launch",
        /only meaningful for target cuda/,
      ));
  });

  describe("CUDA bundles", () => {
    // eslint-disable-next-line @typescript-eslint/no-explicit-any -- as broken()'s
    const cuda = (mutate: (b: Record<string, any>) => void = () => {}) =>
      broken((b) => {
        b.target = "cuda";
        b.targetDetails = { arch: "sm_90", format: "fatbin", ptx: "compute_90" };
        b.functions[1].launch = { grid: [64, 1, 1], block: [256, 1, 1], sharedMemBytes: 0 };
        mutate(b);
      });
    it("a good one passes and keeps its launch", () => {
      const back = decodeBundle(encodeBundle(cuda() as unknown as ModuleBundle));
      assert.deepEqual(back.functions[1]!.launch, { grid: [64, 1, 1], block: [256, 1, 1], sharedMemBytes: 0 });
      assert.equal(back.functions[0]!.launch, undefined);
    });
    it("arch that is not sm_NN", () =>
      assertBad(
        cuda((b) => (b.targetDetails.arch = "hopper")),
        "targetDetails.arch",
        /sm_90/,
      ));
    it("unknown binary format", () =>
      assertBad(
        cuda((b) => (b.targetDetails.format = "ptx")),
        "targetDetails.format",
        /cubin/,
      ));
    it("launch that is not a record", () =>
      assertBad(
        cuda((b) => (b.functions[1].launch = 5)),
        "functions[1].launch",
      ));
    it("launch with a 2-D grid or a zero block", () => {
      assertBad(
        cuda((b) => (b.functions[1].launch.grid = [64, 1])),
        "functions[1].launch",
        /grid/,
      );
      assertBad(
        cuda((b) => (b.functions[1].launch.block = [0, 1, 1])),
        "functions[1].launch",
        /block/,
      );
    });
    it("launch with negative shared memory", () =>
      assertBad(
        cuda((b) => (b.functions[1].launch.sharedMemBytes = -1)),
        "functions[1].launch",
        /sharedMemBytes/,
      ));
  });

  it("toLaunchConfig pads dimensions and names the caller on a bad one", () => {
    assert.deepEqual(toLaunchConfig({ grid: 8, block: [16, 16] }, "f"), { grid: [8, 1, 1], block: [16, 16, 1], sharedMemBytes: 0 });
    assert.throws(
      () => toLaunchConfig({ grid: [2.5], block: 1 }, "call of saxpy"),
      (e: unknown) => e instanceof FarmError && e.code === "INVALID_ARGUMENT" && /call of saxpy: launch grid/.test(e.message),
    );
  });

  it("decodeBundle of random bytes is BAD_BUNDLE, never another error", () => {
    for (let i = 0; i < 200; i++) {
      const bytes = randomBytes(1 + (i % 64) * 7);
      assert.throws(
        () => decodeBundle(bytes),
        (e: unknown) => e instanceof FarmError && e.code === "BAD_BUNDLE" && /bundle/.test(e.message),
        `random bytes ${bytes.toString("hex")}`,
      );
    }
  });

  it("decodeBundle of truncated bytes is BAD_BUNDLE", () => {
    const bytes = encodeBundle(goodBundle());
    for (const n of [0, 1, 10, bytes.byteLength - 1]) {
      assert.throws(
        () => decodeBundle(bytes.subarray(0, n)),
        (e: unknown) => e instanceof FarmError && e.code === "BAD_BUNDLE",
      );
    }
  });
});
