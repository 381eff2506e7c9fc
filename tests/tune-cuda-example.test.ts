/**
 * The pure parts of examples/tune-cuda-gemm.ts, without a GPU: the knob
 * space's filter refuses what cannot run before anything is compiled, and the
 * configurations the search draws compile with nvcc (when it is here) into a
 * `gemm` kernel whose resources fit the launch.
 */
import assert from "node:assert/strict";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "./helpers/suites.ts";
import {
  GEMM_FUNCTION,
  GEMM_SPACE,
  MAX_STATIC_SHARED_BYTES,
  NAIVE_GEMM_SOURCE,
  compileGemm,
  gemmConfigProblem,
  gemmLaunch,
  gemmOperands,
  gemmSharedBytes,
  gemmSource,
  gemmThreads,
  gemmWarpTile,
  hostGemm,
  hostGemmParallel,
  type GemmConfig,
} from "../examples/lib/cuda-gemm-template.ts";
import { configKey, search } from "../examples/lib/search.ts";
import { locateNvcc, nvccVersion } from "../host-sdk/cuda/index.ts";
import { randomArray } from "../domain/index.ts";

/** Why the tests that run nvcc are skipped, or false when nvcc is here. */
const skip: string | false = await nvccVersion(await locateNvcc()).then(
  () => false,
  (e: unknown) => (e instanceof Error ? e.message : String(e)),
);
if (skip) console.log(`# SKIP compiling the GEMM configurations: ${skip}`);

const PROBLEM = { m: 1024, n: 1024, k: 1024 };
const GOOD: GemmConfig = { BM: 128, BN: 128, BK: 8, TM: 8, TN: 8, warp_y: 4, buffers: 2, min_blocks: 2, pad: 4 };

describe("the CUDA GEMM template", () => {
  it("refuses configurations that cannot run, saying why", () => {
    assert.equal(gemmConfigProblem(GOOD, PROBLEM), undefined);
    const cases: [Partial<GemmConfig>, RegExp][] = [
      [{ BN: 32 }, /the warp tile 32×64 \(thread tile 8×8, 4×8 lanes\) does not divide the block tile 128×32/],
      [{ BM: 256, BN: 256, TM: 4, TN: 4 }, /4096 threads per block \(at most 1024\)/],
      [{ BM: 256, BN: 256, TM: 16, TN: 16 }, /256 accumulators per thread \(at most 128\)/],
      [{ BM: 64, BN: 32, TM: 4, TN: 4, warp_y: 8 }, /the 64 float4 loads of a slice of B do not divide among 128 threads/],
      [
        { BK: 32, BM: 256, BN: 256, TM: 16, warp_y: 2 },
        new RegExp(`${2 * 32 * (256 + 4 + 256) * 4} bytes of shared memory \\(at most ${MAX_STATIC_SHARED_BYTES}\\)`),
      ],
    ];
    for (const [change, why] of cases) assert.match(gemmConfigProblem({ ...GOOD, ...change }, PROBLEM) ?? "accepted", why, JSON.stringify(change));
    assert.match(gemmConfigProblem(GOOD, { m: 1000, n: 1024, k: 1024 })!, /does not divide the problem 1000×1024×1024/);
    assert.match(gemmConfigProblem(GOOD, { m: 1024, n: 1026, k: 1024 })!, /does not divide the problem 1024×1026×1024/);
    assert.equal(gemmConfigProblem({ ...GOOD, BK: 32, BM: 64, BN: 64, TM: 4, TN: 8, warp_y: 4, pad: 0 }, PROBLEM), undefined, "a 32-deep slice in two buffers");
  });

  it('generates one extern "C" kernel with the knobs baked in, launched with one thread per TM×TN tile', () => {
    const src = gemmSource(GOOD);
    assert.match(src, /extern "C" __global__ void __launch_bounds__\(THREADS, 2\)\ngemm\(/);
    assert.match(
      src,
      /#define BM 128\n#define BN 128\n#define BK 8\n#define TM 8\n#define TN 8\n#define WM 32\n#define WN 64\n#define WY 4\n#define WX 8\n#define APAD 4\n#define BUFFERS 2\n#define THREADS 256\n/,
    );
    assert.match(src, /if \(next\) load\(k0 \+ BK\);/, "two buffers: the next slice is loaded while this one is computed");
    assert.doesNotMatch(gemmSource({ ...GOOD, buffers: 1 }), /next/, "one buffer: load, compute, in turn");
    assert.deepEqual(gemmWarpTile({ ...GOOD, warp_y: 8 }), [64, 32]);
    assert.deepEqual(gemmLaunch(GOOD, PROBLEM), { grid: [8, 8], block: 256 });
    assert.equal(gemmThreads(GOOD), 256);
    assert.equal(gemmSharedBytes(GOOD), 2 * 8 * (128 + 4 + 128) * 4);
    assert.match(NAIVE_GEMM_SOURCE, /extern "C" __global__ void gemm\(/);
  });

  it("computes the reference exactly from integer-valued operands", async () => {
    const p = { m: 3, n: 5, k: 7 };
    const [sa, sb] = gemmOperands(p, 1);
    assert.deepEqual(
      [sa.shape, sb.shape],
      [
        [3, 7],
        [7, 5],
      ],
    );
    const a = randomArray("float32", p.m * p.k, sa.random) as Float32Array;
    const b = randomArray("float32", p.k * p.n, sb.random) as Float32Array;
    assert.ok([...a, ...b].every((x) => Number.isInteger(x) && x >= -4 && x <= 4));
    const c = hostGemm(a, b, p);
    assert.deepEqual(await hostGemmParallel(a, b, p, 2), c, "the reference on worker threads is the same");
    for (let i = 0; i < p.m; i++) {
      for (let j = 0; j < p.n; j++) {
        let s = 0;
        for (let k = 0; k < p.k; k++) s += a[i * p.k + k]! * b[k * p.n + j]!;
        assert.equal(c[i * p.n + j], s);
      }
    }
  });

  describe("compiled with nvcc", { skip }, () => {
    let cache: string;
    before(async () => {
      cache = await mkdtemp(join(tmpdir(), "kfarm-tune-cuda-test-"));
    });
    after(() => rm(cache, { recursive: true, force: true }));

    it("6 configurations drawn by the search compile after the invalid ones were dropped; their resources fit the launch", async () => {
      const compiled: GemmConfig[] = [];
      const { trials, rejected } = await search({
        space: GEMM_SPACE,
        total: 6,
        batchSize: 6,
        seed: 20,
        higherIsBetter: true,
        valid: (c) => gemmConfigProblem(c, PROBLEM) === undefined,
        evaluate: async (configs) => {
          compiled.push(...configs);
          const modules = await Promise.all(configs.map((c) => compileGemm(c, { cache })));
          return modules.map((m, i) => {
            const c = configs[i]!;
            const r = m.resources[GEMM_FUNCTION]!;
            const where = configKey(c);
            assert.equal(m.target, "cuda");
            assert.equal(m.arch, "sm_90");
            assert.deepEqual(
              m.functions.map((f) => f.name),
              [GEMM_FUNCTION],
            );
            assert.equal(m.functions[0]!.launch, undefined, "launched at call time");
            assert.equal(r.sharedMemBytes, gemmSharedBytes(c), where);
            assert.ok(r.sharedMemBytes <= MAX_STATIC_SHARED_BYTES, where);
            assert.ok(r.registers > 0 && r.registers <= 255, where);
            assert.ok(
              r.registers * gemmThreads(c) <= 65536,
              `${where}: ${r.registers} registers × ${gemmThreads(c)} threads fit the register file (__launch_bounds__)`,
            );
            return r.registers;
          });
        },
      });
      assert.equal(trials.length, 6);
      assert.ok(rejected > 0, "the space has configurations that cannot run, and the search met some");
      for (const c of compiled) assert.equal(gemmConfigProblem(c, PROBLEM), undefined, `${configKey(c)} was compiled although invalid`);
      const naive = await compileGemm("naive", { cache });
      assert.equal(naive.resources[GEMM_FUNCTION]!.sharedMemBytes, 0);
    });
  });
});
