/**
 * The pure parts of examples/tune-cuda-conv2d.ts, without a GPU: autotvm's
 * split spaces, the direct and Winograd templates' rules (what is dropped
 * before compiling, and why), the generated sources, the exact host
 * reference, the search that lets both templates share a round — and, where
 * nvcc is here, a reduced space compiled for sm_90, each kernel's ptxas
 * report checked against an H100's launch limits: the host-side
 * INVALID_CONFIG verdict measure() gives before uploading anything.
 */
import assert from "node:assert/strict";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "./helpers/suites.ts";
import {
  CONV_FUNCTION,
  RESNET18_3X3_LAYERS,
  compileDirect,
  convFlops,
  directConfigProblem,
  directLaunch,
  directSharedBytes,
  directSource,
  directSpace,
  directThreads,
  hostConv2d,
  splits,
  type ConvProblem,
  type DirectConfig,
} from "../examples/lib/cuda-conv2d-template.ts";
import {
  WINOGRAD_SPACE,
  compileWinograd,
  winogradConfigProblem,
  winogradLaunch,
  winogradSharedBytes,
  winogradSource,
  winogradThreads,
  winogradTiles,
  type WinogradConfig,
} from "../examples/lib/cuda-winograd-template.ts";
import { Searcher, configKey, spaceSize } from "../examples/lib/search.ts";
import { locateNvcc, nvccVersion } from "../host-sdk/cuda/index.ts";
import { cudaLaunchProblem, randomArray, type CudaLaunchLimits } from "../domain/index.ts";

const skip: string | false = await nvccVersion(await locateNvcc()).then(
  () => false,
  (e: unknown) => (e instanceof Error ? e.message : String(e)),
);
if (skip) console.log(`# SKIP compiling the conv2d configurations: ${skip}`);

/** An H100's limits, as its board registers them. */
const H100: CudaLaunchLimits = {
  maxThreadsPerBlock: 1024,
  maxBlock: [1024, 1024, 64],
  maxGrid: [2147483647, 65535, 65535],
  maxSharedPerBlock: 49152,
  maxSharedPerBlockOptin: 232448,
  maxRegistersPerBlock: 65536,
  warpSize: 32,
};
const SEED4 = RESNET18_3X3_LAYERS["7x7x512"]!;
const L56 = RESNET18_3X3_LAYERS["56x56x64"]!;

const DIRECT: DirectConfig = {
  tile_f: "16x1x8x4",
  tile_y: "1x1x7x1",
  tile_x: "1x1x7x1",
  tile_rc: "64x8",
  tile_ry: "1x3",
  tile_rx: "1x3",
  auto_unroll_max_step: 512,
  unroll_explicit: 1,
  split_k: 4,
};
const WINO: WinogradConfig = { BK: 16, BP: 16, TK: 2, TP: 2, BC: 4, split_c: 8, unroll: 1 };

describe("the CUDA conv2d templates", () => {
  it("split like autotvm's define_split: every ordered factorisation", () => {
    assert.equal(splits(512, 4).length, 220);
    assert.equal(splits(7, 4).length, 4);
    assert.deepEqual(splits(3, 2), [
      [1, 3],
      [3, 1],
    ]);
    assert.ok(splits(56, 4).every((s) => s.reduce((a, b) => a * b) === 56));
    // seed 004's layer: tile_f 220 × tile_y 4 × tile_x 4 × tile_rc 10 × ry 2 × rx 2 × unroll 3 × explicit 2 × split_k 4
    assert.equal(spaceSize(directSpace(SEED4)), 220 * 4 * 4 * 10 * 2 * 2 * 3 * 2 * 4);
  });

  it("the direct template: autotvm's loop structure with the knobs baked in", () => {
    assert.equal(directConfigProblem(DIRECT, SEED4), undefined);
    assert.deepEqual(directLaunch(DIRECT), { grid: [1, 1, 16 * 4], block: [7, 7, 8] });
    assert.equal(directThreads(DIRECT), 392);
    const src = directSource(DIRECT, SEED4);
    assert.match(src, /extern "C" __global__ void __cluster_dims__\(1, 1, SPLIT\)\nconv2d\(/);
    assert.match(src, /#define VF 1\n#define TF 8\n#define IF 4\n/);
    assert.match(src, /#define RCI 8\n#define RYI 3\n#define RXI 3\n#define SPLIT 4\n/);
    // auto_unroll_max_step 512 over a register tile of 4: rx (×3 = 12), ry (×3 = 36) and rc (×8 = 288) all unrolled.
    assert.equal(src.match(/#pragma unroll\n\s+for \(int r[cyx]i = 0/g)?.length, 3);
    // 0: none chosen; unroll_explicit 1 pins them with `unroll 1`, 0 leaves them to nvcc.
    assert.equal(directSource({ ...DIRECT, auto_unroll_max_step: 0 }, SEED4).match(/#pragma unroll 1\n\s+for \(int r[cyx]i/g)?.length, 3);
    assert.doesNotMatch(directSource({ ...DIRECT, auto_unroll_max_step: 0, unroll_explicit: 0 }, SEED4), /#pragma unroll 1\n\s+for \(int r[cyx]i/);
    // split_k 1 is autotvm's template: no cluster, no cooperative groups.
    const plain = directSource({ ...DIRECT, split_k: 1 }, SEED4);
    assert.doesNotMatch(plain, /cluster|cooperative_groups/);
    assert.deepEqual(directLaunch({ ...DIRECT, split_k: 1 }).grid, [1, 1, 16]);
  });

  it("the direct template refuses what cannot run, before compiling, saying why", () => {
    const cases: [Partial<DirectConfig>, RegExp][] = [
      [{ tile_f: "1x1x32x16", tile_y: "1x1x7x1", tile_x: "1x1x7x1" }, /1568 threads per block \(at most 1024\)/],
      [{ tile_f: "1x4x4x32", tile_y: "1x1x1x7", tile_x: "1x1x7x1" }, /896 accumulators per thread/],
      [{ tile_rc: "1x512" }, /bytes of shared memory \(at most 49152\)/],
      [{ tile_f: "4x1x128x1", tile_y: "7x1x1x1", tile_x: "7x1x1x1" }, /tile_f's 128 threads are the block's z dimension \(at most 64\)/],
      [
        { tile_f: "128x1x4x1", tile_y: "7x1x1x1", tile_x: "1x1x7x1", tile_rc: "2x256", tile_ry: "3x1", tile_rx: "3x1", split_k: 4 },
        /split_k 4 does not divide the 2 outer steps of tile_rc 2x256/,
      ],
    ];
    for (const [change, why] of cases) assert.match(directConfigProblem({ ...DIRECT, ...change }, SEED4) ?? "accepted", why, JSON.stringify(change));
    assert.match(directConfigProblem(DIRECT, SEED4, "sm_80")!, /split_k 4 needs thread-block clusters \(sm_90 or later\), not sm_80/);
    assert.equal(directConfigProblem({ ...DIRECT, split_k: 1 }, SEED4, "sm_80"), undefined);
    assert.equal(directSharedBytes(DIRECT), (8 * 9 * 9 + 8 * 9 * 32) * 4);
  });

  it("the Winograd template: F(2×2,3×3) tiles, its rules and its launch", () => {
    assert.deepEqual(winogradTiles(SEED4), { th: 4, tw: 4, tiles: 16 });
    assert.deepEqual(winogradTiles(L56), { th: 28, tw: 28, tiles: 784 });
    assert.equal(winogradConfigProblem(WINO, SEED4), undefined);
    assert.deepEqual(winogradLaunch(WINO, SEED4), { grid: [1, 32, 8], block: 64 });
    assert.equal(winogradThreads(WINO), 64);
    assert.equal(winogradSharedBytes(WINO), 16 * 4 * 32 * 4);
    const cases: [Partial<WinogradConfig>, RegExp][] = [
      [{ BK: 64, TK: 4, TP: 4 }, /256 accumulators per thread/],
      [{ BK: 8, BP: 4, TK: 2, TP: 1 }, /16 threads per block/],
      [{ BP: 64 }, /BP 64 is more than twice the 16 tiles/],
      [{ BC: 32, split_c: 8, BK: 64, BP: 32 }, /bytes of shared memory/],
      [{ BC: 32, split_c: 8, BK: 16, BP: 16, TK: 1, TP: 1 }, /does not divide the 512 input channels|shared memory/],
    ];
    for (const [change, why] of cases) assert.match(winogradConfigProblem({ ...WINO, ...change }, SEED4) ?? "accepted", why, JSON.stringify(change));
    const src = winogradSource(WINO, SEED4);
    assert.match(src, /#define P 16\n#define BK 16\n#define BP 16\n#define TK 2\n#define TP 2\n#define BC 4\n#define SPLIT 8\n/);
    assert.match(winogradSource({ ...WINO, split_c: 1 }, SEED4), /if \(tile >= P\) continue;/);
  });

  it("computes the reference exactly from integer-valued operands (checked against the definition)", () => {
    const p: ConvProblem = { c: 3, h: 5, w: 4, k: 2 };
    const ints = { low: -4, high: 4, integers: true };
    const data = randomArray("float32", p.c * p.h * p.w, { seed: 1, ...ints }) as Float32Array;
    const kernel = randomArray("float32", p.k * p.c * 9, { seed: 2, ...ints }) as Float32Array;
    const out = hostConv2d(data, kernel, p);
    for (let f = 0; f < p.k; f++)
      for (let y = 0; y < p.h; y++)
        for (let x = 0; x < p.w; x++) {
          let s = 0;
          for (let c = 0; c < p.c; c++)
            for (let ry = 0; ry < 3; ry++)
              for (let rx = 0; rx < 3; rx++) {
                const iy = y + ry - 1,
                  ix = x + rx - 1;
                if (iy >= 0 && iy < p.h && ix >= 0 && ix < p.w) s += data[(c * p.h + iy) * p.w + ix]! * kernel[((f * p.c + c) * 3 + ry) * 3 + rx]!;
              }
          assert.equal(out[(f * p.h + y) * p.w + x], s, `out[${f}][${y}][${x}]`);
        }
    assert.equal(convFlops(SEED4), 2 * 512 * 49 * 512 * 9);
  });

  it("two Searchers share a round and never draw a configuration twice", () => {
    const d = new Searcher({ space: directSpace(SEED4), seed: 1, higherIsBetter: true, valid: (c) => directConfigProblem(c, SEED4) === undefined });
    const w = new Searcher({ space: WINOGRAD_SPACE, seed: 2, higherIsBetter: true, valid: (c) => winogradConfigProblem(c, SEED4) === undefined });
    const seen = new Set<string>();
    for (let round = 0; round < 4; round++) {
      const bd = d.propose(6);
      const bw = w.propose(6);
      for (const b of [...bd, ...bw]) {
        assert.ok(!seen.has(configKey(b.config)), "drawn twice");
        seen.add(configKey(b.config));
      }
      assert.ok(bd.every((b) => directConfigProblem(b.config, SEED4) === undefined));
      assert.ok(bw.every((b) => winogradConfigProblem(b.config, SEED4) === undefined));
      if (round >= 2)
        assert.ok(
          [...bd, ...bw].some((b) => b.origin === "mutation"),
          "evolution starts after the random rounds",
        );
      d.record(
        bd,
        bd.map((_, i) => i),
      );
      w.record(
        bw,
        bw.map((_, i) => (i === 0 ? NaN : i)),
      );
    }
    assert.equal(d.trials.length, 24);
    assert.equal(d.best()!.score, 5);
    assert.ok(d.rejected > 0 && w.rejected > 0, "both spaces hold configurations that cannot run");
  });

  describe("compiled with nvcc", { skip }, () => {
    let cache: string;
    before(async () => {
      cache = await mkdtemp(join(tmpdir(), "kfarm-tune-conv2d-test-"));
    });
    after(() => rm(cache, { recursive: true, force: true }));

    it("a reduced space compiles for sm_90, and ptxas's report decides which launches fit an H100 before anything is uploaded", async () => {
      const d = new Searcher({ space: directSpace(SEED4), seed: 7, higherIsBetter: true, valid: (c) => directConfigProblem(c, SEED4) === undefined });
      const w = new Searcher({ space: WINOGRAD_SPACE, seed: 7, higherIsBetter: true, valid: (c) => winogradConfigProblem(c, SEED4) === undefined });
      const configs = [
        ...d.propose(2).map((b) => ({ direct: true, config: b.config as DirectConfig | WinogradConfig })),
        ...w.propose(2).map((b) => ({ direct: false, config: b.config as DirectConfig | WinogradConfig })),
        { direct: true, config: DIRECT },
        { direct: false, config: WINO },
      ];
      const modules = await Promise.all(
        configs.map((x) =>
          x.direct ? compileDirect(x.config as DirectConfig, SEED4, { cache }) : compileWinograd(x.config as WinogradConfig, SEED4, { cache }),
        ),
      );
      modules.forEach((m, i) => {
        const { direct, config } = configs[i]!;
        const where = configKey(config);
        const r = m.resources[CONV_FUNCTION]!;
        assert.equal(m.arch, "sm_90");
        assert.equal(r.sharedMemBytes, direct ? directSharedBytes(config as DirectConfig) : winogradSharedBytes(config as WinogradConfig), where);
        assert.equal(r.spillStoreBytes, 0, `${where} does not spill`);
        const launch = direct ? directLaunch(config as DirectConfig) : winogradLaunch(config as WinogradConfig, SEED4);
        const shape = { grid: [launch.grid].flat(), block: [launch.block].flat(), sharedMemBytes: 0 };
        assert.equal(cudaLaunchProblem(CONV_FUNCTION, r, shape, H100), undefined, `${where}: ${r.registers} registers`);
      });
      // 1024 threads of 28 accumulators each: the template allows it, ptxas gives it more than 64 registers, so it cannot launch.
      const heavy: DirectConfig = {
        tile_f: "1x4x16x1",
        tile_y: "1x7x8x1",
        tile_x: "7x1x8x1",
        tile_rc: "64x1",
        tile_ry: "1x3",
        tile_rx: "1x3",
        auto_unroll_max_step: 1500,
        unroll_explicit: 1,
        split_k: 1,
      };
      assert.equal(directConfigProblem(heavy, L56), undefined);
      const m = await compileDirect(heavy, L56, { cache });
      const r = m.resources[CONV_FUNCTION]!;
      const launch = directLaunch(heavy);
      assert.match(
        cudaLaunchProblem(CONV_FUNCTION, r, { grid: launch.grid as number[], block: launch.block as number[], sharedMemBytes: 0 }, H100) ??
          `fits: ${r.registers} registers`,
        /registers per thread: 1024 threads take \d+ registers, more than the 65536/,
      );
    });
  });
});
