/** The paged DRAM: placement at (page + 1) << 12, first fit, reuse, capacity. */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { FarmError } from "../../../protos/index.ts";
import { Dram, PAGE_BYTES } from "./dram.ts";

describe("VTA DRAM", () => {
  it("places buffers on whole pages, page p at physical address (p + 1) << 12", () => {
    const dram = new Dram(16 * PAGE_BYTES);
    const a = dram.alloc(1);
    const b = dram.alloc(PAGE_BYTES + 1);
    const c = dram.alloc(0);
    assert.deepEqual([a.phys, b.phys, c.phys], [PAGE_BYTES, 2 * PAGE_BYTES, 4 * PAGE_BYTES]);
    assert.deepEqual([a.nbytes, b.nbytes, b.pages], [1, PAGE_BYTES + 1, 2]);
    assert.equal(dram.find(2 * PAGE_BYTES + 5000), b);
    assert.equal(dram.find(PAGE_BYTES - 1), undefined);
    assert.equal(dram.usedBytes, 4 * PAGE_BYTES);
  });

  it("reuses freed pages first fit, and refuses what does not fit with OUT_OF_MEMORY", () => {
    const dram = new Dram(4 * PAGE_BYTES);
    const a = dram.alloc(PAGE_BYTES);
    const b = dram.alloc(2 * PAGE_BYTES);
    dram.alloc(PAGE_BYTES);
    assert.throws(
      () => dram.alloc(1),
      (e: FarmError) => e.code === "OUT_OF_MEMORY" && /capacity/.test(e.message),
    );
    b.free();
    const small = dram.alloc(10);
    assert.equal(small.phys, b.phys);
    const again = dram.alloc(PAGE_BYTES);
    assert.equal(again.phys, b.phys + PAGE_BYTES);
    a.free();
    assert.equal(dram.find(a.phys), undefined);
  });

  it("bounds host writes to the buffer's bytes and zeroes new buffers", () => {
    const dram = new Dram(4 * PAGE_BYTES);
    const a = dram.alloc(8);
    assert.ok(a.read(0, 8).every((v) => v === 0));
    a.write(4, new Uint8Array([1, 2, 3, 4]));
    assert.deepEqual([...a.read(0, 8)], [0, 0, 0, 0, 1, 2, 3, 4]);
    assert.throws(
      () => a.write(5, new Uint8Array(4)),
      (e: FarmError) => e.code === "BAD_ARGUMENTS",
    );
  });
});
