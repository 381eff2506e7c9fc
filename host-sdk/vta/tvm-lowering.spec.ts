/**
 * Where the templates' streams follow TVM's lowering beyond the tutorials
 * (golden.spec.ts holds those): how InjectDMAIntrin folds the contiguous
 * dimensions of an unpadded input copy, and the order TVM's schedules give a
 * matmul's GEMM loops when a tile holds more than one batch block.
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { runToStream } from "../../vta/index.ts";
import { lowerVtaKernel, type VtaKernelSpec } from "./compile.ts";
import type { VtaConv2dSchedule, VtaConv2dWorkload } from "./conv2d.ts";

/** The fields of every instruction of `kind` in the kernel's one run. */
function fieldsOf(spec: VtaKernelSpec, kind: string): string[] {
  const { fn } = lowerVtaKernel(spec);
  assert.equal(fn.runs.length, 1);
  return runToStream(fn.runs[0]!)
    .lines.filter((l) => l.kind === kind)
    .map((l) => l.fields.replace("<dram> ", ""));
}

describe("VTA compiler: input loads fold contiguous dimensions as TVM's InjectDMAIntrin does", () => {
  // 3 input-channel blocks of 10×10, a 3×3 kernel without padding: 8×8 outputs.
  const w: VtaConv2dWorkload = { batch: 1, inChannels: 48, outChannels: 16, height: 10, width: 10, kernelH: 3, kernelW: 3 };
  const conv = (workload: VtaConv2dWorkload, s: Partial<VtaConv2dSchedule>) =>
    fieldsOf({ kind: "conv2d", workload, schedule: { ocBlock: 1, icBlock: 3, virtualThreads: 1, storeGranularity: "row", ...s } }, "LOAD_INP");

  it("a whole unpadded tile whose channel blocks are contiguous in DRAM is one row: y 1 x 300", () => {
    assert.deepEqual(conv(w, { hBlock: 8, wBlock: 8 }), ["sram 0 y 1 x 300 s 300"]);
  });

  it("whole rows fold into x, channel blocks at an even stride into y; a region with two strides loads per block", () => {
    // Rows 0–5 and 4–9 of every block: 60 contiguous elements per block, blocks 100 apart.
    assert.deepEqual(conv(w, { hBlock: 4, wBlock: 8 }), ["sram 0 y 3 x 60 s 100", "sram 0 y 3 x 60 s 100"]);
    // Columns 0–5 and 4–9 of all 10 rows of every block: 30 rows 10 apart.
    assert.deepEqual(conv(w, { hBlock: 8, wBlock: 4 }), ["sram 0 y 30 x 6 s 10", "sram 0 y 30 x 6 s 10"]);
    // A 6×6 window of each block: no 2-D pattern (TVM refuses it), so one load per block.
    const windows = conv(w, { hBlock: 4, wBlock: 4 });
    assert.equal(windows.length, 4 * 3);
    assert.deepEqual(windows.slice(0, 3), ["sram 0 y 6 x 6 s 10", "sram 36 y 6 x 6 s 10", "sram 72 y 6 x 6 s 10"]);
  });

  it("a padded workload loads each block as a padded 2-D region, rows unfolded, as TVM's pad copy does", () => {
    const padded = conv({ ...w, padH: 1, padW: 1 }, { hBlock: 10, wBlock: 10 });
    assert.deepEqual(
      padded,
      [0, 144, 288].map((sram) => `sram ${sram} y 10 x 10 s 10 pad y[1,1] x[1,1]`),
    );
    // Without channel blocks to fold, an unpadded full-width tile still folds its rows.
    assert.deepEqual(conv({ ...w, inChannels: 16 }, { icBlock: 1, hBlock: 4, wBlock: 8 }), ["sram 0 y 1 x 60 s 60", "sram 0 y 1 x 60 s 60"]);
  });
});

describe("VTA compiler: a matmul GEMM's loops are batch, then output channels, as TVM's schedules order them", () => {
  const gemm = (batchBlock: number, inBlock: number, outBlock: number) =>
    fieldsOf(
      {
        kind: "matmul",
        workload: { batch: batchBlock, inFeatures: 16 * inBlock, outFeatures: 16 * outBlock },
        schedule: { batchBlock, inBlock, outBlock, virtualThreads: 1, storeGranularity: "tile" },
      },
      "GEMM",
    );

  it("batch block 4 × 4 output blocks: out 4 over the batch (dst 4, src 1), in 4 over the channels (dst 1, wgt 1)", () => {
    assert.deepEqual(gemm(4, 1, 4), ["uop[1,2) out 4 (4,1,0) in 4 (1,0,1)"]);
    assert.deepEqual(gemm(4, 4, 1), ["uop[1,2) out 4 (1,4,0) in 4 (0,1,1)"]);
  });

  it("with batch, input and output blocks all > 1 TVM's order repeats an accumulator (VerifyDep): the batch goes into the uops", () => {
    const { fn } = lowerVtaKernel({
      kind: "matmul",
      workload: { batch: 4, inFeatures: 64, outFeatures: 64 },
      schedule: { batchBlock: 4, inBlock: 4, outBlock: 4, virtualThreads: 1, storeGranularity: "tile" },
    });
    const s = runToStream(fn.runs[0]!);
    const i = s.lines.findIndex((l) => l.kind === "GEMM");
    assert.equal(s.lines[i]!.fields, "uop[1,5) out 4 (1,0,4) in 4 (0,1,1)");
    assert.deepEqual(s.uops.get(i - 1), [
      [0, 0, 0],
      [4, 4, 0],
      [8, 8, 0],
      [12, 12, 0],
    ]);
  });
});
