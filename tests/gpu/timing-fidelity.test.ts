/**
 * Timing fidelity on a real GPU: the fidelity workloads (copy, saxpy, tiled
 * GEMM, the ResNet last-layer conv2d) compute the right thing, and the
 * farm's median time of each agrees with a native harness timing the same
 * module with CUDA events, in the same run: within 1 % for kernels ≥ 10 µs.
 * Skipped, with the reason printed, without a GPU.
 */
import assert from "node:assert/strict";
import { after, before, describe, it } from "../helpers/suites.ts";
import type { TrackerClient } from "../../host-sdk/index.ts";
import { compileWorkloads, measureFidelity } from "../../bench/lib/cuda-fidelity.ts";
import { conv2dRef, maxRelError, sgemmRef } from "../../bench/cuda/reference.ts";
import { cudaSkipReason } from "../helpers/gpu.ts";
import { startFarm } from "../helpers/processes.ts";

const skip = await cudaSkipReason();

/** Kernels at or above this time must agree with the native harness within TOLERANCE. */
const FIDELITY_FLOOR_US = 10;
const TOLERANCE = 0.01;

function seeded(n: number, seed: number): Float32Array {
  let x = seed;
  return Float32Array.from({ length: n }, () => {
    x = (x * 1103515245 + 12345) % 2 ** 31;
    return x / 2 ** 31 - 0.5;
  });
}

describe("CUDA timing fidelity", { skip }, () => {
  let farm: Awaited<ReturnType<typeof startFarm>>;
  let client: TrackerClient;

  before(async () => {
    farm = await startFarm(["cuda:0:key=gpu"]);
    client = farm.client;
  });
  after(async () => farm?.stop());

  it("the workloads' kernels compute what the references compute", async () => {
    const arch = (await client.summary()).boards[0]!.labels.arch!;
    const module = await compileWorkloads(arch);
    const s = await client.request("gpu");
    try {
      await s.upload(module);
      const m = await s.loadModule(module.name);
      const [M, N, K] = [128, 192, 64];
      const A = seeded(M * K, 1);
      const B = seeded(K * N, 2);
      const dC = await s.array({ shape: [M * N], dtype: "float32" });
      await m.getFunction("sgemm_tiled").withOptions({ launch: { grid: [N / 64, M / 64], block: [16, 16] } })(await s.array(A), await s.array(B), dC, M, N, K);
      const gemmErr = maxRelError((await dC.toArray()) as Float32Array, sgemmRef(A, B, M, N, K));
      assert.ok(gemmErr < 1e-3, `sgemm max relative error ${gemmErr}`);

      const [C, H, W, KO] = [64, 7, 7, 32];
      const input = seeded(C * H * W, 3);
      const weights = seeded(KO * C * 9, 4);
      const out = await s.array({ shape: [KO * H * W], dtype: "float32" });
      const conv = m
        .getFunction("conv2d_3x3_nchw")
        .withOptions({ launch: { grid: [Math.ceil(KO / 4), Math.ceil(H / 8) * Math.ceil(W / 8)], block: [32, 16] } });
      await conv(await s.array(input), await s.array(weights), out, C, H, W, KO);
      const convErr = maxRelError((await out.toArray()) as Float32Array, conv2dRef(input, weights, C, H, W, KO));
      assert.ok(convErr < 1e-3, `conv2d max relative error ${convErr}`);
    } finally {
      await s.close();
    }
  });

  it(
    `the farm's median agrees with the native harness within ${TOLERANCE * 100} % for kernels ≥ ${FIDELITY_FLOOR_US} µs`,
    { timeout: 20 * 60_000 },
    async () => {
      const run = await measureFidelity(client, "gpu", { log: (l) => console.log(`# ${l}`) });
      try {
        const checked = run.rows.filter((r) => r.nativeUs >= FIDELITY_FLOOR_US);
        assert.ok(checked.length >= 4, `only ${checked.length} workloads ran ≥ ${FIDELITY_FLOOR_US} µs`);
        for (const r of checked) {
          assert.ok(
            Math.abs(r.ratio - 1) <= TOLERANCE,
            `${r.workload.name}: farm ${r.farmUs.toFixed(2)} µs vs native ${r.nativeUs.toFixed(2)} µs (ratio ${r.ratio.toFixed(4)})`,
          );
        }
        for (const r of run.rows) {
          assert.equal(r.conditions.name, r.device, "the timing result names the device the native harness ran on");
          assert.match(r.conditions.sm_clock_mhz ?? "", /^\d+$/);
        }
      } finally {
        await run.dispose();
      }
    },
  );
});
