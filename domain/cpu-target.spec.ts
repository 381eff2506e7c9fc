import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { binaryCpuTarget, hostCpuTarget } from "./cpu-target.ts";

/** The first 20 bytes of an ELF file: class, data (endianness), OS ABI, machine. */
function elf(machine: number, opts: { big?: boolean; osabi?: number } = {}): Uint8Array {
  const b = Buffer.alloc(64);
  b.write("\x7fELF", 0, "latin1");
  b[4] = 2; // ELFCLASS64
  b[5] = opts.big ? 2 : 1;
  b[7] = opts.osabi ?? 0;
  if (opts.big) b.writeUInt16BE(machine, 18);
  else b.writeUInt16LE(machine, 18);
  return b;
}

describe("the target of a CPU module", () => {
  it("is read from an ELF header: machine and OS ABI", () => {
    assert.deepEqual(binaryCpuTarget(elf(62)), { arch: "x86_64", os: "linux" });
    assert.deepEqual(binaryCpuTarget(elf(183, { osabi: 3 })), { arch: "aarch64", os: "linux" });
    assert.deepEqual(binaryCpuTarget(elf(40)), { arch: "arm", os: "linux" });
    assert.deepEqual(binaryCpuTarget(elf(3)), { arch: "i386", os: "linux" });
    assert.deepEqual(binaryCpuTarget(elf(243)), { arch: "riscv64", os: "linux" });
    assert.deepEqual(binaryCpuTarget(elf(21)), { arch: "ppc64le", os: "linux" });
    assert.deepEqual(binaryCpuTarget(elf(21, { big: true })), { arch: "ppc64", os: "linux" });
    assert.deepEqual(binaryCpuTarget(elf(22, { big: true })), { arch: "s390x", os: "linux" });
    assert.deepEqual(binaryCpuTarget(elf(62, { osabi: 9 })), { arch: "x86_64", os: "freebsd" });
  });

  it("is read from a 64-bit Mach-O header", () => {
    const macho = Buffer.alloc(32);
    macho.writeUInt32LE(0xfeedfacf, 0);
    macho.writeUInt32LE(0x0100000c, 4);
    assert.deepEqual(binaryCpuTarget(macho), { arch: "aarch64", os: "darwin" });
  });

  it("is unknown for other formats, machines and truncated headers (the host's is used then)", () => {
    assert.equal(binaryCpuTarget(elf(190)), undefined); // EM_CUDA: no CPU
    assert.equal(binaryCpuTarget(elf(62, { osabi: 97 })), undefined); // ARM's own ABI: not an OS here
    assert.equal(binaryCpuTarget(elf(62).subarray(0, 12)), undefined);
    assert.equal(binaryCpuTarget(Buffer.from("MZ\x90\x00", "latin1")), undefined);
    assert.equal(binaryCpuTarget(new Uint8Array(0)), undefined);
  });

  it("of this machine is named as compilers name it", () => {
    const here = hostCpuTarget();
    assert.equal(here.os, process.platform);
    assert.match(here.arch, /^(x86_64|aarch64|arm|i386|riscv64|ppc64le|s390x|loongarch64)$/);
  });
});
