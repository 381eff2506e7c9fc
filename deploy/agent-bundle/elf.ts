/**
 * Just enough of ELF for the agent bundle: which machine a binary is for, its
 * dynamic loader (PT_INTERP) and the shared libraries it names (DT_NEEDED).
 * Little-endian only (x86-64, arm64, armhf). The build uses it to carry the
 * libraries Debian's node needs, and to leave out native files a bundle's
 * node cannot load (another machine's, or musl builds).
 */
import { closeSync, openSync, readSync } from "node:fs";

export const EM_ARM = 40;
export const EM_X86_64 = 62;
export const EM_AARCH64 = 183;

export interface ElfInfo {
  readonly machine: number;
  readonly bits: 32 | 64;
  /** The program's dynamic loader, e.g. /lib/ld-linux-aarch64.so.1; none for libraries and static programs. */
  readonly interpreter?: string;
  /** Sonames of the shared libraries it needs, in order. */
  readonly needed: readonly string[];
}

const PT_LOAD = 1;
const PT_DYNAMIC = 2;
const PT_INTERP = 3;
const DT_NULL = 0;
const DT_NEEDED = 1;
const DT_STRTAB = 5;

/** The ELF facts of `path`, or undefined if it is not a little-endian ELF file. */
export function readElf(path: string): ElfInfo | undefined {
  const fd = openSync(path, "r");
  try {
    const read = (offset: number, length: number): Buffer => {
      const buf = Buffer.alloc(length);
      const n = readSync(fd, buf, 0, length, offset);
      if (n !== length) throw new Error(`${path}: truncated ELF file (wanted ${length} bytes at ${offset})`);
      return buf;
    };
    const ident = Buffer.alloc(64);
    if (readSync(fd, ident, 0, 64, 0) < 52 || ident.readUInt32BE(0) !== 0x7f454c46 || ident[5] !== 1) return undefined;
    const bits = ident[4] === 2 ? 64 : 32;
    const word = (b: Buffer, at: number) => (bits === 64 ? Number(b.readBigUInt64LE(at)) : b.readUInt32LE(at));
    const machine = ident.readUInt16LE(18);
    const phoff = word(ident, bits === 64 ? 32 : 28);
    const phentsize = ident.readUInt16LE(bits === 64 ? 54 : 42);
    const phnum = ident.readUInt16LE(bits === 64 ? 56 : 44);
    const table = read(phoff, phentsize * phnum);
    const segments = Array.from({ length: phnum }, (_, i) => {
      const at = i * phentsize;
      // Elf64_Phdr: type flags offset vaddr paddr filesz …; Elf32_Phdr: type offset vaddr paddr filesz …
      return bits === 64
        ? { type: table.readUInt32LE(at), offset: word(table, at + 8), vaddr: word(table, at + 16), filesz: word(table, at + 32) }
        : { type: table.readUInt32LE(at), offset: word(table, at + 4), vaddr: word(table, at + 8), filesz: word(table, at + 16) };
    });
    const interp = segments.find((s) => s.type === PT_INTERP);
    const interpreter = interp ? read(interp.offset, interp.filesz).toString("latin1").replace(/\0.*$/s, "") : undefined;
    const dynamic = segments.find((s) => s.type === PT_DYNAMIC);
    const needed: string[] = [];
    if (dynamic) {
      const entries = read(dynamic.offset, dynamic.filesz);
      const size = bits === 64 ? 16 : 8;
      const tags: Array<[tag: number, value: number]> = [];
      for (let at = 0; at + size <= entries.length; at += size) {
        const tag = word(entries, at);
        if (tag === DT_NULL) break;
        tags.push([tag, word(entries, at + size / 2)]);
      }
      // DT_STRTAB is an address: find the file offset through the loadable segment that holds it.
      const strtab = tags.find(([t]) => t === DT_STRTAB)?.[1];
      const load = strtab === undefined ? undefined : segments.find((s) => s.type === PT_LOAD && s.vaddr <= strtab && strtab < s.vaddr + s.filesz);
      if (strtab !== undefined && !load) throw new Error(`${path}: DT_STRTAB 0x${strtab.toString(16)} is in no loadable segment`);
      const string = (at: number): string => {
        const out: number[] = [];
        for (let pos = load!.offset + strtab! - load!.vaddr + at; ; pos += 64) {
          const chunk = Buffer.alloc(64);
          const n = readSync(fd, chunk, 0, 64, pos);
          const end = chunk.subarray(0, n).indexOf(0);
          if (end >= 0) return Buffer.from([...out, ...chunk.subarray(0, end)]).toString("latin1");
          if (n < 64) throw new Error(`${path}: unterminated string in the dynamic string table`);
          out.push(...chunk);
        }
      };
      for (const [tag, value] of tags) if (tag === DT_NEEDED) needed.push(string(value));
    }
    return { machine, bits, ...(interpreter !== undefined ? { interpreter } : {}), needed };
  } finally {
    closeSync(fd);
  }
}

/** Whether an ELF file is linked against musl (its loader, or its libc: `libc.musl-ARCH.so.1`, or plain `libc.so`), which glibc cannot load. */
export function isMusl(elf: ElfInfo): boolean {
  return /ld-musl-/.test(elf.interpreter ?? "") || elf.needed.some((n) => n.startsWith("libc.musl-") || n === "libc.so");
}
