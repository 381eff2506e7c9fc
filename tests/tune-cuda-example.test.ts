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
  GEMM_FUNCTION, GEMM_SPACE, MAX_STATIC_SHARED_BYTES, NAIVE_GEMM_SOURCE, compileGemm, gemmConfigProblem, gemmLaunch, gemmOperands,
  gemmSharedBytes, gemmSource, gemmThreads, hostGemm, hostGemmParallel, type GemmConfig,
} from "../examples/lib/cuda-gemm-template.ts";
import { configKey, search, seededRandom } from "../examples/lib/search.ts";
import { locateNvcc, nvccVersion } from "../host-sdk/cuda/index.ts";
import { randomArray } from "../protos/index.ts";

/** Why the tests that run nvcc are skipped, or false when nvcc is here. */
const skip: string | false = await nvccVersion(await locateNvcc()).then(
  () => false,
  (e: unknown) => (e instanceof Error ? e.message : String(e)),
);
if (skip) console.log(`# SKIP compiling the GEMM configurations: ${skip}`);

const PROBLEM = { m: 1024, n: 1024, k: 1024 };
const GOOD: GemmConfig = { BM: 64, BN: 64, BK: 8, TM: 4, TN: 4, vec: 4, unroll: 4, layout: "blocked" };

describe("the CUDA GEMM template", () => {
  it("refuses configurations that cannot run, saying why", () => {
    assert.equal(gemmConfigProblem(GOOD, PROBLEM), undefined);
    const cases: [Partial<GemmConfig>, RegExp][] = [
      [{ BM: 256, BN: 256, TM: 2, TN: 2 }, /16384 threads per block/],
      [{ BM: 16, BN: 16, TM: 4, TN: 4 }, /16 threads per block/],
      [{ BM: 256, BN: 256, BK: 32, TM: 16, TN: 16 }, /256 accumulators/],
      [{ BM: 256, BN: 256, BK: 32, TM: 8, TN: 8 }, new RegExp(`${(256 * 32 + 32 * 256) * 4} bytes of shared memory \\(at most ${MAX_STATIC_SHARED_BYTES}\\)`)],
      [{ BM: 64, TM: 3 as never }, /the thread tile 3×4 does not divide the block tile 64×64/],
    ];
    for (const [change, why] of cases) assert.match(gemmConfigProblem({ ...GOOD, ...change }, PROBLEM) ?? "accepted", why, JSON.stringify(change));
    assert.match(gemmConfigProblem(GOOD, { m: 1000, n: 1024, k: 1024 })!, /does not divide the problem 1000×1024×1024/);
    assert.equal(gemmConfigProblem({ ...GOOD, BM: 256, BN: 128, BK: 32, TM: 8, TN: 8 }, PROBLEM), undefined, "48 KiB of shared memory is allowed");
  });

  it("generates one extern \"C\" kernel with the knobs baked in, launched with one thread per TM×TN tile", () => {
    const src = gemmSource(GOOD);
    assert.match(src, /extern "C" __global__ void __launch_bounds__\(THREADS\)\ngemm\(/);
    assert.match(src, /#define BM 64\n#define BN 64\n#define BK 8\n#define TM 4\n#define TN 4\n#define VEC 4\n/);
    assert.match(src, /#pragma unroll 4\n/);
    assert.deepEqual(gemmLaunch(GOOD, PROBLEM), { grid: [16, 16], block: 256 });
    assert.equal(gemmThreads(GOOD), 256);
    assert.match(NAIVE_GEMM_SOURCE, /extern "C" __global__ void gemm\(/);
  });

  it("computes the reference exactly from integer-valued operands", async () => {
    const p = { m: 3, n: 5, k: 7 };
    const [sa, sb] = gemmOperands(p, 1);
    assert.deepEqual([sa.shape, sb.shape], [[3, 7], [7, 5]]);
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
            assert.deepEqual(m.functions.map((f) => f.name), [GEMM_FUNCTION]);
            assert.equal(m.functions[0]!.launch, undefined, "launched at call time");
            assert.equal(r.sharedMemBytes, gemmSharedBytes(c), where);
            assert.ok(r.sharedMemBytes <= MAX_STATIC_SHARED_BYTES, where);
            assert.ok(r.registers > 0 && r.registers <= 255, where);
            assert.ok(r.registers * gemmThreads(c) <= 65536, `${where}: ${r.registers} registers × ${gemmThreads(c)} threads fit the register file (__launch_bounds__)`);
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
