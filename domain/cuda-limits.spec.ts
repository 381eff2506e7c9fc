import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { blockRegisters, cudaLaunchLimitsFromWire, cudaLaunchLimitsToWire, cudaLaunchProblem, type CudaLaunchLimits } from "./cuda-limits.ts";

/** An H100's, as its driver reports them. */
const H100: CudaLaunchLimits = {
  maxThreadsPerBlock: 1024,
  maxBlock: [1024, 1024, 64],
  maxGrid: [2147483647, 65535, 65535],
  maxSharedPerBlock: 49152,
  maxSharedPerBlockOptin: 232448,
  maxRegistersPerBlock: 65536,
  warpSize: 32,
};
const launch = (block: number[], sharedMemBytes = 0, grid = [1, 1, 1]) => ({ grid, block, sharedMemBytes });

describe("CUDA launch limits", () => {
  it("travel typed in the registration and come back", () => {
    const wire = cudaLaunchLimitsToWire(H100);
    assert.deepEqual(wire.max_block, [1024, 1024, 64]);
    assert.equal(wire.max_registers_per_block, 65536);
    assert.deepEqual(cudaLaunchLimitsFromWire({ ...wire, max_block: [...wire.max_block!], max_grid: [...wire.max_grid!] } as never), H100);
    // A board that does not say them (another kind), or says them wrong: no limits, the board decides.
    assert.equal(cudaLaunchLimitsFromWire(undefined), undefined);
    assert.equal(cudaLaunchLimitsFromWire(null), undefined);
    const full = { ...wire, max_block: [1024, 1024, 64], max_grid: [2147483647, 65535, 65535] } as Parameters<typeof cudaLaunchLimitsFromWire>[0] & object;
    assert.equal(cudaLaunchLimitsFromWire({ ...full, warp_size: 0 }), undefined, "a limit left out (proto3's 0)");
    assert.equal(cudaLaunchLimitsFromWire({ ...full, max_block: [1024, 1024] }), undefined, "two dimensions of three");
    assert.equal(cudaLaunchLimitsFromWire({ ...full, max_grid: [1, 0, 1] }), undefined, "a zero dimension");
  });

  it("allocate registers per warp in units of 256", () => {
    assert.equal(blockRegisters(32, 70, 32), 2304);
    assert.equal(blockRegisters(1024, 64, 32), 65536);
    assert.equal(blockRegisters(1000, 64, 32), 65536, "a partial warp takes a whole warp's registers");
    assert.equal(blockRegisters(256, 255, 32), 65536);
  });

  it("accept what launches and name the figure and limit of what does not", () => {
    const ok = { registers: 64, sharedMemBytes: 48 * 1024 };
    assert.equal(cudaLaunchProblem("k", ok, launch([32, 32, 1]), H100), undefined, "1024 threads at 64 registers fill the register file exactly");
    assert.equal(
      cudaLaunchProblem("k", { registers: 32, sharedMemBytes: 1024 }, launch([128, 1, 1], 200 * 1024), H100),
      undefined,
      "dynamic shared memory up to the opt-in limit",
    );
    const cases: [Parameters<typeof cudaLaunchProblem>[1], ReturnType<typeof launch>, RegExp][] = [
      [
        { registers: 65, sharedMemBytes: 0 },
        launch([1024, 1, 1]),
        /^kernel k uses 65 registers per thread: 1024 threads take 73728 registers, more than the 65536 a block may have$/,
      ],
      [{ registers: 8, sharedMemBytes: 0 }, launch([64, 32, 1]), /^block 64×32×1 = 2048 threads, more than the 1024/],
      [{ registers: 8, sharedMemBytes: 0 }, launch([1, 1, 128]), /^block 1×1×128: z is 128, at most 64$/],
      [{ registers: 8, sharedMemBytes: 0 }, launch([32, 1, 1], 0, [1, 70000, 1]), /^grid 1×70000×1: y is 70000, at most 65535$/],
      [{ registers: 8, sharedMemBytes: 49153 }, launch([32, 1, 1]), /declares 49153 bytes of static shared memory, more than the 49152 allowed/],
      [
        { registers: 8, sharedMemBytes: 4096 },
        launch([32, 1, 1], 229 * 1024),
        /needs 238592 bytes of shared memory per block \(4096 static \+ 234496 dynamic\), more than the 232448/,
      ],
    ];
    for (const [r, l, why] of cases) assert.match(cudaLaunchProblem("k", r, l, H100) ?? "accepted", why);
  });
});
