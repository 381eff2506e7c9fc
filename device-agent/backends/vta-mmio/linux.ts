/**
 * The device layer on a Zynq board running Linux: VTA's registers through
 * `mmap` of /dev/mem, and physically contiguous DMA buffers from the u-dma-buf
 * kernel module (/dev/udmabufN, sub-allocated here in pages) or from the CMA
 * allocator of the Pynq image (libcma's cma_alloc). Which allocator serves the
 * board is chosen by `dma=` (auto: the u-dma-buf region udmabuf0 if it exists,
 * else libcma; cma; or a region's name) and said in the board's stats and in every error.
 *
 * Cached buffers are flushed before the device reads them and invalidated
 * after it writes them: u-dma-buf through its sysfs sync files, libcma through
 * cma_flush_cache / cma_invalidate_cache.
 *
 * Not yet run on a board: `npm run test:pynq` on one is what would prove it
 * (README, "VTA on FPGA boards"). Registers are read and written as elements
 * of a Uint32Array over the mapping, which V8 compiles to single 32-bit loads
 * and stores.
 */
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import koffi from "koffi";
import { FarmError } from "../../../protos/index.ts";
import type { DmaBuffer, DmaMemory, RegisterBus } from "./bus.ts";
import { MODULES, VTA_IP_REG_MAP_RANGE, type VtaTarget } from "./registers.ts";

const PAGE = 4096;
const PROT_READ_WRITE = 0x3;
const MAP_SHARED = 0x1;
/** O_RDWR | O_SYNC (Linux's generic and ARM values): register pages mapped uncached. */
const O_RDWR_SYNC = 0x2 | 0x101000;
const ERRNO_NAMES: Record<number, string> = { 1: "EPERM", 2: "ENOENT", 11: "EAGAIN", 12: "ENOMEM", 13: "EACCES", 16: "EBUSY", 19: "ENODEV", 22: "EINVAL" };

type Native = (...args: unknown[]) => unknown;

/** libc's open/mmap/munmap/flock, loaded once. */
let libc: Record<string, Native> | undefined;
function c(): Record<string, Native> {
  if (libc) return libc;
  const lib = koffi.load("libc.so.6");
  libc = {
    open: lib.func("open", "int", ["const char *", "int"]) as Native,
    close: lib.func("close", "int", ["int"]) as Native,
    // mmap64: a 64-bit offset on 32-bit ARM too, where physical addresses above 2 GiB would not fit off_t.
    mmap: lib.func("mmap64", "void *", ["void *", "size_t", "int", "int", "int", "int64_t"]) as Native,
    munmap: lib.func("munmap", "int", ["void *", "size_t"]) as Native,
    flock: lib.func("flock", "int", ["int", "int"]) as Native,
  };
  return libc;
}

function errnoText(): string {
  const e = koffi.errno();
  return `${ERRNO_NAMES[e] ?? "errno"} ${e}`;
}

/** open(2) through libc, so that the descriptor can be mapped. */
function openDevice(path: string, flags: number, what: string, hint: string): number {
  const fd = c().open!(path, flags) as number;
  if (fd < 0) throw new FarmError("DEVICE_ERROR", `cannot open ${path} for ${what} (${errnoText()}): ${hint}`);
  return fd;
}

/** Maps `length` bytes of `fd` at `offset`; the mapping as an ArrayBuffer and its unmapper. */
function mapDevice(fd: number, offset: number, length: number, what: string): { view: ArrayBuffer; unmap: () => void } {
  const ptr = c().mmap!(null, length, PROT_READ_WRITE, MAP_SHARED, fd, offset);
  if (ptr === null || koffi.address(ptr) === 0xffffffffffffffffn || koffi.address(ptr) === 0xffffffffn) {
    throw new FarmError(
      "DEVICE_ERROR",
      `cannot map ${length} bytes at 0x${offset.toString(16)} for ${what} (${errnoText()}); a kernel driver may have claimed the range (CONFIG_IO_STRICT_DEVMEM) or the address is wrong for this board`,
    );
  }
  return { view: koffi.view(ptr, length), unmap: () => void c().munmap!(ptr, length) };
}

/** VTA's four register windows through /dev/mem. */
export class DevMemBus implements RegisterBus {
  private readonly words: Uint32Array;
  private readonly base: number;
  private readonly unmap: () => void;
  private readonly fd: number;

  constructor(target: VtaTarget, path = "/dev/mem") {
    this.base = target.baseAddress;
    const length = MODULES.length * VTA_IP_REG_MAP_RANGE;
    this.fd = openDevice(
      path,
      O_RDWR_SYNC,
      `VTA's registers at 0x${this.base.toString(16)}`,
      "the agent needs root (or CAP_SYS_RAWIO) on the board, and a kernel with /dev/mem",
    );
    try {
      const m = mapDevice(this.fd, this.base, length, `VTA's registers (${target.name})`);
      this.words = new Uint32Array(m.view);
      this.unmap = m.unmap;
    } catch (err) {
      c().close!(this.fd);
      throw err;
    }
  }

  read32(phys: number): number {
    return this.words[this.index(phys)]!;
  }

  write32(phys: number, value: number): void {
    this.words[this.index(phys)] = value;
  }

  close(): void {
    this.unmap();
    c().close!(this.fd);
  }

  private index(phys: number): number {
    const off = phys - this.base;
    if (off < 0 || off >= this.words.byteLength || off % 4 !== 0) {
      throw new FarmError("INTERNAL", `register 0x${phys.toString(16)} is outside VTA's mapped windows at 0x${this.base.toString(16)}`);
    }
    return off / 4;
  }
}

/** First-fit page allocation inside one contiguous region (u-dma-buf's). */
class Pages {
  private readonly used: { first: number; pages: number }[] = [];

  constructor(readonly capacityPages: number) {}

  take(pages: number): number | undefined {
    let page = 0;
    let at = 0;
    for (; at < this.used.length; at++) {
      const u = this.used[at]!;
      if (u.first - page >= pages) break;
      page = u.first + u.pages;
    }
    if (page + pages > this.capacityPages) return undefined;
    this.used.splice(at, 0, { first: page, pages });
    return page;
  }

  give(first: number): void {
    const i = this.used.findIndex((u) => u.first === first);
    if (i >= 0) this.used.splice(i, 1);
  }
}

/**
 * A u-dma-buf region (https://github.com/ikwzm/udmabuf): /dev/NAME mapped
 * cached, its physical address and size from /sys/class/u-dma-buf/NAME, and
 * cache maintenance through its sync_* files. Locked with flock so that two
 * agents cannot share it.
 */
export class UdmabufMemory implements DmaMemory {
  readonly description: string;
  readonly capacityBytes: number;
  private readonly phys: number;
  private readonly region: ArrayBuffer;
  private readonly pages: Pages;
  private readonly sys: string;
  private readonly fd: number;
  private readonly unmap: () => void;

  constructor(name: string) {
    const dev = `/dev/${name}`;
    this.sys = `/sys/class/u-dma-buf/${name}`;
    if (!existsSync(dev) || !existsSync(this.sys)) {
      throw new FarmError(
        "DEVICE_ERROR",
        `no u-dma-buf region ${name}: ${dev} or ${this.sys} is missing; load the module (modprobe u-dma-buf udmabuf0=SIZE) or give the board dma=cma`,
      );
    }
    this.phys = Number(readFileSync(`${this.sys}/phys_addr`, "utf8").trim());
    this.capacityBytes = Number(readFileSync(`${this.sys}/size`, "utf8").trim());
    this.fd = openDevice(dev, 0x2, `DMA buffers`, "the agent needs read and write access to the u-dma-buf device");
    if ((c().flock!(this.fd, 2 | 4) as number) !== 0) {
      c().close!(this.fd);
      throw new FarmError("DEVICE_ERROR", `${dev} is busy: another process holds it (another agent for this board?) (${errnoText()})`);
    }
    const m = mapDevice(this.fd, 0, this.capacityBytes, `the u-dma-buf region ${name}`);
    this.region = m.view;
    this.unmap = m.unmap;
    this.pages = new Pages(Math.floor(this.capacityBytes / PAGE));
    this.description = `u-dma-buf ${dev} (${this.capacityBytes} bytes at 0x${this.phys.toString(16)})`;
  }

  alloc(nbytes: number): DmaBuffer {
    const pages = Math.max(1, Math.ceil(nbytes / PAGE));
    const first = this.pages.take(pages);
    if (first === undefined) throw new FarmError("OUT_OF_MEMORY", `${this.description} has no ${pages} free contiguous pages for ${nbytes} bytes`);
    const offset = first * PAGE;
    const sync = (direction: 1 | 2, file: "sync_for_device" | "sync_for_cpu", off: number, len: number) => {
      writeFileSync(`${this.sys}/sync_offset`, String(offset + off));
      writeFileSync(`${this.sys}/sync_size`, String(len));
      writeFileSync(`${this.sys}/sync_direction`, String(direction));
      writeFileSync(`${this.sys}/${file}`, "1");
    };
    return {
      phys: this.phys + offset,
      nbytes,
      bytes: new Uint8Array(this.region, offset, nbytes),
      flushForDevice: (off = 0, len = nbytes - off) => sync(1, "sync_for_device", off, len),
      invalidateForCpu: (off = 0, len = nbytes - off) => sync(2, "sync_for_cpu", off, len),
      free: () => this.pages.give(first),
    };
  }

  close(): void {
    this.unmap();
    c().close!(this.fd);
  }
}

/** The Pynq image's contiguous-memory allocator, libcma (each buffer at most 32 MiB, VTA_MAX_XFER). */
export class CmaMemory implements DmaMemory {
  readonly description = "libcma (the Pynq image's CMA allocator)";
  readonly capacityBytes: number;
  private readonly f: Record<string, Native>;

  constructor(library = "libcma.so") {
    let lib: ReturnType<typeof koffi.load>;
    try {
      lib = koffi.load(library);
    } catch (err) {
      throw new FarmError(
        "DEVICE_ERROR",
        `cannot load ${library} (${(err as Error).message}): the board image has no libcma; install it (Pynq images ship it) or load u-dma-buf and give dma=udmabuf0`,
      );
    }
    this.f = {
      alloc: lib.func("cma_alloc", "void *", ["uint32_t", "uint32_t"]) as Native,
      phys: lib.func("cma_get_phy_addr", "unsigned long", ["void *"]) as Native,
      free: lib.func("cma_free", "void", ["void *"]) as Native,
      flush: lib.func("cma_flush_cache", "void", ["void *", "unsigned int", "int"]) as Native,
      invalidate: lib.func("cma_invalidate_cache", "void", ["void *", "unsigned int", "int"]) as Native,
      available: lib.func("cma_pages_available", "uint32_t", []) as Native,
    };
    this.capacityBytes = (this.f.available!() as number) * PAGE;
  }

  alloc(nbytes: number): DmaBuffer {
    const size = Math.max(PAGE, Math.ceil(nbytes / PAGE) * PAGE);
    const ptr = this.f.alloc!(size, 1);
    if (ptr === null)
      throw new FarmError("OUT_OF_MEMORY", `libcma could not allocate ${size} contiguous bytes (${this.capacityBytes} bytes were available at start)`);
    const phys = Number(this.f.phys!(ptr));
    let freed = false;
    return {
      phys,
      nbytes,
      bytes: new Uint8Array(koffi.view(ptr, size), 0, nbytes),
      flushForDevice: (off = 0, len = nbytes - off) => void this.f.flush!(ptr, phys + off, len),
      invalidateForCpu: (off = 0, len = nbytes - off) => void this.f.invalidate!(ptr, phys + off, len),
      free: () => {
        if (!freed) this.f.free!(ptr);
        freed = true;
      },
    };
  }

  close(): void {}
}

/** The allocator `dma` names: `auto`, `cma`, or the name of a u-dma-buf region (`udmabuf0`). */
export function openDmaMemory(dma: string): DmaMemory {
  if (dma === "cma") return new CmaMemory();
  if (dma !== "auto") {
    if (!/^[A-Za-z0-9_-]+$/.test(dma)) throw new FarmError("INVALID_ARGUMENT", `dma=${dma}: give auto, cma, or the name of a u-dma-buf region (udmabuf0)`);
    return new UdmabufMemory(dma);
  }
  if (existsSync("/dev/udmabuf0")) return new UdmabufMemory("udmabuf0");
  try {
    return new CmaMemory();
  } catch (err) {
    throw new FarmError("DEVICE_ERROR", `no DMA allocator found: /dev/udmabuf0 is missing and ${(err as Error).message}`);
  }
}

/** The board's registers and memory (backend.ts calls this for a target, not for the model). */
export function openBoard(target: VtaTarget, dma: string): { bus: RegisterBus; memory: DmaMemory } {
  const memory = openDmaMemory(dma);
  try {
    return { bus: new DevMemBus(target), memory };
  } catch (err) {
    memory.close();
    throw err;
  }
}
