/**
 * What the mmio driver needs from the machine, as interfaces: the registers
 * (a bus of 32-bit loads and stores at physical addresses) and physically
 * contiguous memory the accelerator reaches by DMA. linux.ts implements them
 * on a board (/dev/mem, u-dma-buf or the CMA allocator), model.ts on the
 * register-level device model; the driver cannot tell them apart.
 */

/** 32-bit register access at physical addresses. */
export interface RegisterBus {
  read32(phys: number): number;
  write32(phys: number, value: number): void;
  close(): void;
}

/**
 * A buffer the device reaches at `phys`. `bytes` is the CPU's view: on a
 * board with caches, what the CPU writes reaches the device only after
 * `flushForDevice`, and what the device wrote is seen only after
 * `invalidateForCpu`.
 */
export interface DmaBuffer {
  readonly phys: number;
  readonly nbytes: number;
  readonly bytes: Uint8Array<ArrayBuffer>;
  flushForDevice(offset?: number, length?: number): void;
  invalidateForCpu(offset?: number, length?: number): void;
  free(): void;
}

/** An allocator of physically contiguous DMA buffers. */
export interface DmaMemory {
  /** Which allocator this is, for the board's registration and its errors ("u-dma-buf /dev/udmabuf0", "libcma", "device model"). */
  readonly description: string;
  readonly capacityBytes: number;
  alloc(nbytes: number): DmaBuffer;
  close(): void;
}
