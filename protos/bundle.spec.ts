/** The module bundle: round trip, and validation that names the bad field. */
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { describe, it } from "node:test";
import { pack } from "msgpackr";
import { BUNDLE_FORMAT, BUNDLE_VERSION, bundleDigest, decodeBundle, encodeBundle, toLaunchConfig, validateBundle, type ModuleBundle } from "./bundle.ts";
import { FarmError } from "./errors.ts";

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
  // The same check guards decoding of packed bytes.
  assert.throws(() => decodeBundle(pack(value)), check);
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

  it("is content-addressed: same bundle same digest, different binary different digest", () => {
    const d1 = bundleDigest(encodeBundle(goodBundle()));
    assert.match(d1, /^[0-9a-f]{64}$/);
    assert.equal(bundleDigest(encodeBundle(goodBundle())), d1);
    const other = goodBundle();
    other.binary = Uint8Array.from([9, 9, 9]);
    assert.notEqual(bundleDigest(encodeBundle(other)), d1);
  });

  it("encodeBundle refuses an invalid bundle", () => {
    const b = goodBundle();
    b.functions = [];
    assert.throws(() => encodeBundle(b), (e: FarmError) => e.code === "BAD_BUNDLE" && e.details?.field === "functions");
  });

  describe("validateBundle names the bad field", () => {
    it("root that is not a record", () => {
      for (const v of [null, 42, "bundle", [1, 2]]) assertBad(v, "(root)");
    });
    it("wrong format tag", () => assertBad(broken((b) => (b.format = "tvm.module")), "format", /tvm\.module/));
    it("missing format tag", () => assertBad(broken((b) => delete b.format), "format"));
    it("wrong version", () => assertBad(broken((b) => (b.version = 2)), "version", /\b2\b.*version 1/));
    it("unknown target", () => assertBad(broken((b) => (b.target = "tpu")), "target", /tpu.*cpu, cuda, vta/));
    it("targetDetails that is not a record", () => assertBad(broken((b) => (b.targetDetails = null)), "targetDetails"));
    it("targetDetails with a non-string value", () => assertBad(broken((b) => (b.targetDetails.arch = 64)), "targetDetails.arch"));
    it("empty binary", () => assertBad(broken((b) => (b.binary = new Uint8Array(0))), "binary", /empty/));
    it("binary that is not bytes", () => assertBad(broken((b) => (b.binary = "ELF")), "binary"));
    it("no functions", () => {
      assertBad(broken((b) => (b.functions = [])), "functions");
      assertBad(broken((b) => delete b.functions), "functions");
    });
    it("function that is not a record", () => assertBad(broken((b) => (b.functions[1] = 7)), "functions[1]"));
    it("bad function name", () => {
      assertBad(broken((b) => (b.functions[0].name = "1vadd")), "functions[0].name", /C identifier/);
      assertBad(broken((b) => (b.functions[1].name = "no-dash")), "functions[1].name", /no-dash/);
      assertBad(broken((b) => (b.functions[0].name = "")), "functions[0].name");
      assertBad(broken((b) => (b.functions[0].name = 3)), "functions[0].name");
    });
    it("duplicate function names", () => assertBad(broken((b) => (b.functions[1].name = "vadd")), "functions[1].name", /repeats "vadd"/));
    it("params that is not a list", () => assertBad(broken((b) => (b.functions[1].params = {})), "functions[1].params"));
    it("param without a name", () => assertBad(broken((b) => delete b.functions[0].params[2].name), "functions[0].params[2].name"));
    it("bad param kind", () => assertBad(broken((b) => (b.functions[0].params[1].kind = "pointer")), "functions[0].params[1].kind", /pointer/));
    it("bad param dtype", () => assertBad(broken((b) => (b.functions[0].params[2].dtype = "int128")), "functions[0].params[2].dtype", /int128/));
    it("shape on a scalar", () => assertBad(broken((b) => (b.functions[0].params[2].shape = [1])), "functions[0].params[2].shape", /only allowed on buffers/));
    it("shape that is not positive integers", () => {
      assertBad(broken((b) => (b.functions[0].params[0].shape = [4, 0])), "functions[0].params[0].shape");
      assertBad(broken((b) => (b.functions[0].params[0].shape = [2.5])), "functions[0].params[0].shape");
      assertBad(broken((b) => (b.functions[0].params[0].shape = "4x4")), "functions[0].params[0].shape");
    });
    it("launch on a CPU function", () => assertBad(broken((b) => (b.functions[1].launch = { grid: [1, 1, 1], block: [1, 1, 1], sharedMemBytes: 0 })), "functions[1].launch", /only meaningful for target cuda/));
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
      const back = decodeBundle(pack(cuda()));
      assert.deepEqual(back.functions[1]!.launch, { grid: [64, 1, 1], block: [256, 1, 1], sharedMemBytes: 0 });
      assert.equal(back.functions[0]!.launch, undefined);
    });
    it("arch that is not sm_NN", () => assertBad(cuda((b) => (b.targetDetails.arch = "hopper")), "targetDetails.arch", /sm_90/));
    it("unknown binary format", () => assertBad(cuda((b) => (b.targetDetails.format = "ptx")), "targetDetails.format", /cubin/));
    it("launch that is not a record", () => assertBad(cuda((b) => (b.functions[1].launch = 5)), "functions[1].launch"));
    it("launch with a 2-D grid or a zero block", () => {
      assertBad(cuda((b) => (b.functions[1].launch.grid = [64, 1])), "functions[1].launch", /grid/);
      assertBad(cuda((b) => (b.functions[1].launch.block = [0, 1, 1])), "functions[1].launch", /block/);
    });
    it("launch with negative shared memory", () => assertBad(cuda((b) => (b.functions[1].launch.sharedMemBytes = -1)), "functions[1].launch", /sharedMemBytes/));
  });

  it("toLaunchConfig pads dimensions and names the caller on a bad one", () => {
    assert.deepEqual(toLaunchConfig({ grid: 8, block: [16, 16] }, "f"), { grid: [8, 1, 1], block: [16, 16, 1], sharedMemBytes: 0 });
    assert.throws(() => toLaunchConfig({ grid: [2.5], block: 1 }, "call of saxpy"), (e: unknown) => e instanceof FarmError && e.code === "INVALID_ARGUMENT" && /call of saxpy: launch grid/.test(e.message));
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
      assert.throws(() => decodeBundle(bytes.subarray(0, n)), (e: unknown) => e instanceof FarmError && e.code === "BAD_BUNDLE");
    }
  });
});
