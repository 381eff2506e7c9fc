/**
 * The target of a CPU module: `arch` as compilers name it (`uname -m`:
 * x86_64, aarch64, arm, i386, riscv64, ppc64le, s390x, loongarch64) and `os`
 * as Node names it (linux, darwin, freebsd, win32). A CPU board loads a
 * module only if both match its own, so a module cross-compiled for another
 * machine is refused TARGET_MISMATCH naming both, not dlopen's "cannot open
 * shared object file".
 *
 * The host compiler writes the target it read from the binary it built (the
 * ELF or Mach-O header): a cross compiler (`cc: "aarch64-linux-gnu-gcc"`),
 * `clang --target`, or `-m32` are labelled by what they produced, not by the
 * machine that ran them. python/kernelfarm/bundle.py reads it the same way.
 */

export interface CpuTarget {
  arch: string;
  os: string;
}

/** Node's process.arch → the compilers' name (the names ELF headers map to below). */
const NODE_ARCH: Record<string, string> = {
  x64: "x86_64",
  arm64: "aarch64",
  arm: "arm",
  ia32: "i386",
  riscv64: "riscv64",
  ppc64: "ppc64le",
  s390x: "s390x",
  loong64: "loongarch64",
};

/** The machine running this process. */
export function hostCpuTarget(): CpuTarget {
  return { arch: NODE_ARCH[process.arch] ?? process.arch, os: process.platform };
}

/** ELF e_machine → arch (EM_* of elf.h). */
const ELF_MACHINE: Record<number, string> = { 3: "i386", 40: "arm", 62: "x86_64", 183: "aarch64", 243: "riscv64", 22: "s390x", 258: "loongarch64" };
const EM_PPC64 = 21;
/** ELF EI_OSABI → os; 0 (System V) and 3 (GNU) are what Linux toolchains write. */
const ELF_OSABI: Record<number, string> = { 0: "linux", 3: "linux", 9: "freebsd" };
/** Mach-O cputype (64-bit) → arch. */
const MACHO_CPU: Record<number, string> = { 0x01000007: "x86_64", 0x0100000c: "aarch64" };

/**
 * The target a shared object was built for, read from its header; undefined
 * for a format or machine not known here (the host's target is the fallback).
 */
export function binaryCpuTarget(binary: Uint8Array): CpuTarget | undefined {
  const view = new DataView(binary.buffer, binary.byteOffset, binary.byteLength);
  if (binary.byteLength >= 20 && view.getUint32(0) === 0x7f454c46) {
    const little = binary[5] === 1; // EI_DATA: 1 little-endian, 2 big-endian
    const machine = view.getUint16(18, little);
    const os = ELF_OSABI[binary[7]!];
    const arch = machine === EM_PPC64 ? (little ? "ppc64le" : "ppc64") : ELF_MACHINE[machine];
    return arch && os ? { arch, os } : undefined;
  }
  // MH_MAGIC_64, as stored little-endian (both Apple CPUs are).
  if (binary.byteLength >= 8 && view.getUint32(0, true) === 0xfeedfacf) {
    const arch = MACHO_CPU[view.getUint32(4, true)];
    return arch ? { arch, os: "darwin" } : undefined;
  }
  return undefined;
}
