/**
 * The simulator's DRAM: a page-based flat memory, as TVM's functional
 * simulator has it. Buffers are whole 4 KiB pages; the physical address of
 * page `p` is `(p + 1) << 12`, so address 0 is never valid and every buffer is
 * page aligned (which makes `phys / elem_bytes` an integer for every element
 * size that divides a page).
 *
 * Each buffer owns its bytes (its own ArrayBuffer, so typed views of any
 * element width are aligned); the DRAM maps physical addresses to buffers.
 */
import { FarmError } from "../../../protos/index.ts";
import type { DeviceArray } from "../backend.ts";

export const PAGE_BYTES = 4096;

/** One placed buffer: a function argument array or a run's micro-op buffer. */
export class DramBuffer implements DeviceArray {
  /** The buffer's bytes; `byteLength` is `nbytes` rounded up to whole pages. */
  readonly bytes: Uint8Array;
  /** The same bytes as int8, int32 and uint32 lanes (little-endian, as VTA's DRAM is). */
  readonly i8: Int8Array;
  readonly i32: Int32Array;
  readonly u32: Uint32Array;
  private freed = false;

  /** @internal created by Dram.alloc */
  constructor(
    private readonly dram: Dram,
    /** Physical byte address of the first byte. */
    readonly phys: number,
    readonly nbytes: number,
    readonly pages: number,
  ) {
    this.bytes = new Uint8Array(pages * PAGE_BYTES);
    this.i8 = new Int8Array(this.bytes.buffer);
    this.i32 = new Int32Array(this.bytes.buffer);
    this.u32 = new Uint32Array(this.bytes.buffer);
  }

  get firstPage(): number {
    return this.phys / PAGE_BYTES - 1;
  }

  write(offset: number, data: Uint8Array): void {
    if (offset < 0 || offset + data.byteLength > this.nbytes) {
      throw new FarmError("BAD_ARGUMENTS", `write of ${data.byteLength} bytes at offset ${offset} overruns a ${this.nbytes}-byte VTA DRAM buffer`);
    }
    this.bytes.set(data, offset);
  }

  read(offset: number, length: number): Uint8Array {
    return this.bytes.subarray(offset, offset + length);
  }

  free(): void {
    if (this.freed) return;
    this.freed = true;
    this.dram.release(this);
  }
}

/** Flat paged memory of `capacityBytes`; first-fit page allocation. */
export class Dram {
  readonly capacityPages: number;
  /** Placed buffers, sorted by physical address. */
  private readonly buffers: DramBuffer[] = [];

  constructor(readonly capacityBytes: number) {
    this.capacityPages = Math.floor(capacityBytes / PAGE_BYTES);
  }

  /** Bytes currently placed (whole pages). */
  get usedBytes(): number {
    let pages = 0;
    for (const b of this.buffers) pages += b.pages;
    return pages * PAGE_BYTES;
  }

  get bufferCount(): number {
    return this.buffers.length;
  }

  /** Places a zeroed buffer of `nbytes` (at least one page) at the lowest free pages. */
  alloc(nbytes: number): DramBuffer {
    if (!Number.isInteger(nbytes) || nbytes < 0) throw new FarmError("BAD_ARGUMENTS", `cannot allocate ${nbytes} bytes of VTA DRAM`);
    const pages = Math.max(1, Math.ceil(nbytes / PAGE_BYTES));
    let page = 0;
    let at = 0;
    for (; at < this.buffers.length; at++) {
      const b = this.buffers[at]!;
      if (b.firstPage - page >= pages) break;
      page = b.firstPage + b.pages;
    }
    if (page + pages > this.capacityPages) {
      throw new FarmError(
        "OUT_OF_MEMORY",
        `VTA DRAM has no ${pages} free contiguous pages for ${nbytes} bytes (capacity ${this.capacityBytes} bytes, ${this.usedBytes} in use)`,
      );
    }
    const buffer = new DramBuffer(this, (page + 1) * PAGE_BYTES, nbytes, pages);
    this.buffers.splice(at, 0, buffer);
    return buffer;
  }

  /** @internal called by DramBuffer.free */
  release(buffer: DramBuffer): void {
    const i = this.buffers.indexOf(buffer);
    if (i >= 0) this.buffers.splice(i, 1);
  }

  /** The placed buffer holding physical byte `phys`, if any. */
  find(phys: number): DramBuffer | undefined {
    let lo = 0;
    let hi = this.buffers.length - 1;
    while (lo <= hi) {
      const mid = (lo + hi) >> 1;
      const b = this.buffers[mid]!;
      if (phys < b.phys) hi = mid - 1;
      else if (phys >= b.phys + b.pages * PAGE_BYTES) lo = mid + 1;
      else return b;
    }
    return undefined;
  }

  /** Frees every buffer (between sessions). */
  clear(): void {
    this.buffers.length = 0;
  }
}
