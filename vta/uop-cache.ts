/**
 * The micro-op cache of the TVM VTA runtime (`UopQueue`, §7.2 of
 * docs/vta-isa.md): which kernels are resident in uop SRAM, where a newly used kernel
 * goes, and what LOAD UOP that placement needs.
 *
 * * The uop SRAM is filled like a ring: a kernel goes at the fill position
 *   when it fits, otherwise the fill position wraps to 0.
 * * Resident kernels after the insertion point that start below the new end
 *   are evicted.
 * * Each newly placed kernel needs one LOAD UOP of its uops into its range.
 * * At the end of a run (synchronize) the whole cache is invalidated.
 *
 * One deliberate difference: TVM builds the run's uop DMA buffer at
 * synchronize time by concatenating the kernels *then* in the cache list, and
 * computes each LOAD UOP's DRAM offset from the list at the time of the load.
 * Once the ring wraps and evicts within a run, earlier loads then point at the
 * wrong kernels (the spec flags this as a likely bug). Here the DMA buffer is
 * a log: each placement appends the kernel's uops and the load points at that
 * copy. Without eviction — every tutorial, and every program whose kernels fit
 * the uop SRAM together — the log *is* TVM's concatenation, byte for byte.
 */
import type { Uop } from "./isa.ts";
import { VtaRuntimeError } from "./runtime-error.ts";
import type { UopKernel } from "./uop-kernel.ts";

/** The LOAD UOP a placement needs: `x_size = count` uops from DMA element `dramOffset` into SRAM `sramBase`. */
export interface UopPlacement {
  sramBase: number;
  count: number;
  /** Offset in uop elements (4 bytes) inside the run's uop DMA buffer. */
  dramOffset: number;
}

export class UopCache {
  /** Resident kernels, in ring order. */
  private cache: UopKernel[] = [];
  private cacheIdx = 0;
  private sramEnd = 0;
  /** The run's uop DMA buffer, as uops. */
  private log: Uop[] = [];

  constructor(
    /** uop SRAM depth (8192 by default). */
    readonly depth: number,
    /** Most uops the DMA buffer holds (VTA_MAX_XFER / 4). */
    readonly maxDmaUops: number,
  ) {}

  /** uops in this run's DMA buffer so far. */
  get dmaUops(): number {
    return this.log.length;
  }

  /** Whether placing `kernel` now would overflow the DMA buffer (the runtime synchronizes first). */
  needsFlushFor(kernel: UopKernel): boolean {
    return !kernel.cached && this.log.length + kernel.size > this.maxDmaUops;
  }

  /**
   * Makes `kernel` resident. Returns the LOAD UOP it needs, or undefined when it
   * was still resident (no load).
   */
  place(kernel: UopKernel): UopPlacement | undefined {
    if (kernel.cached) return undefined;
    const n = kernel.size;
    if (n > this.depth) throw new VtaRuntimeError("UOP_KERNEL", `a uop kernel of ${n} uops does not fit the ${this.depth}-entry uop buffer`);
    if (n === 0) throw new VtaRuntimeError("UOP_KERNEL", "a uop kernel recorded no uops");
    let begin: number;
    if (this.sramEnd + n > this.depth) {
      this.cacheIdx = 0;
      begin = 0;
      this.sramEnd = n;
    } else {
      begin = this.sramEnd;
      this.sramEnd += n;
    }
    const evictBegin = this.cacheIdx;
    while (this.cacheIdx < this.cache.length && this.cache[this.cacheIdx]!.sramBegin < this.sramEnd) {
      const k = this.cache[this.cacheIdx]!;
      k.sramBegin = 0;
      k.sramEnd = 0;
      this.cacheIdx++;
    }
    kernel.sramBegin = begin;
    kernel.sramEnd = this.sramEnd;
    this.cache.splice(evictBegin, this.cacheIdx - evictBegin, kernel);
    this.cacheIdx = evictBegin + 1;
    const dramOffset = this.log.length;
    for (const u of kernel.uops) this.log.push(u);
    return { sramBase: begin, count: n, dramOffset };
  }

  /** The run's uop DMA buffer. */
  dmaBuffer(): readonly Uop[] {
    return this.log;
  }

  /** End of a run: nothing is resident any more, the DMA buffer starts empty. */
  reset(): void {
    for (const k of this.cache) {
      k.sramBegin = 0;
      k.sramEnd = 0;
    }
    this.cache = [];
    this.cacheIdx = 0;
    this.sramEnd = 0;
    this.log = [];
  }
}
