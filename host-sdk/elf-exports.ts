/**
 * What a shared object exports, read from its ELF dynamic symbol table
 * (`.dynsym`): the names `dlsym` finds, which is how a CPU board finds a
 * module's functions. compileCpu checks its `functions` against it. Read
 * here rather than with `nm`, so that nothing beyond the C compiler is
 * needed and a cross compiler's output (32 or 64 bits, either byte order)
 * reads the same. python/kernelfarm/elf_exports.py reads it the same way.
 */

export interface ElfExports {
  /** ET_DYN: a shared object (an executable built as PIE is one too). Not one: the flags stopped before linking (-c). */
  shared: boolean;
  /** Defined, visible functions (STT_FUNC, STT_GNU_IFUNC), in the table's order. */
  functions: string[];
  /** Defined, visible symbols of no type (a label in assembly): dlsym finds them too. */
  untyped: string[];
}

const ET_DYN = 3;
const SHT_DYNSYM = 11;
const STT_NOTYPE = 0;
const STT_FUNC = 2;
const STT_GNU_IFUNC = 10;
const STB_GLOBAL = 1;
const STB_WEAK = 2;
const STB_GNU_UNIQUE = 10;
const STV_DEFAULT = 0;
const STV_PROTECTED = 3;

/** The exports of an ELF file; undefined for bytes that are not ELF (a Mach-O) or whose tables do not read. */
export function elfExports(binary: Uint8Array): ElfExports | undefined {
  if (binary.byteLength < 52 || binary[0] !== 0x7f || binary[1] !== 0x45 || binary[2] !== 0x4c || binary[3] !== 0x46) return undefined;
  const wide = binary[4] === 2; // EI_CLASS: 1 32-bit, 2 64-bit
  const little = binary[5] === 1; // EI_DATA: 1 little-endian, 2 big-endian
  const view = new DataView(binary.buffer, binary.byteOffset, binary.byteLength);
  const u16 = (at: number) => view.getUint16(at, little);
  const u32 = (at: number) => view.getUint32(at, little);
  const addr = (at: number) => (wide ? Number(view.getBigUint64(at, little)) : u32(at));
  try {
    const shared = u16(16) === ET_DYN;
    const shoff = addr(wide ? 0x28 : 0x20);
    const shentsize = u16(wide ? 0x3a : 0x2e);
    const shnum = u16(wide ? 0x3c : 0x30);
    const section = (i: number) => {
      const at = shoff + i * shentsize;
      return {
        type: u32(at + 4),
        offset: addr(at + (wide ? 0x18 : 0x10)),
        size: addr(at + (wide ? 0x20 : 0x14)),
        link: u32(at + (wide ? 0x28 : 0x18)),
        entsize: addr(at + (wide ? 0x38 : 0x24)),
      };
    };
    const result: ElfExports = { shared, functions: [], untyped: [] };
    let tables = 0;
    for (let i = 0; i < shnum; i++) {
      const symtab = section(i);
      if (symtab.type !== SHT_DYNSYM) continue;
      tables++;
      const strtab = section(symtab.link);
      const name = (at: number) => {
        const start = strtab.offset + at;
        const end = binary.indexOf(0, start);
        if (at >= strtab.size || end < 0 || end > strtab.offset + strtab.size) throw new RangeError("a name outside its string table");
        return Buffer.from(binary.buffer, binary.byteOffset + start, end - start).toString("latin1");
      };
      const entsize = symtab.entsize || (wide ? 24 : 16);
      for (let at = symtab.offset; at + entsize <= symtab.offset + symtab.size; at += entsize) {
        const info = binary[at + (wide ? 4 : 12)]!;
        const other = binary[at + (wide ? 5 : 13)]!;
        const shndx = u16(at + (wide ? 6 : 14));
        const bind = info >> 4;
        const type = info & 0xf;
        const visibility = other & 3;
        if (shndx === 0 || ![STB_GLOBAL, STB_WEAK, STB_GNU_UNIQUE].includes(bind) || ![STV_DEFAULT, STV_PROTECTED].includes(visibility)) continue;
        if (type === STT_FUNC || type === STT_GNU_IFUNC) result.functions.push(name(u32(at)));
        else if (type === STT_NOTYPE) result.untyped.push(name(u32(at)));
      }
    }
    // A shared object without the table's section header (stripped of its sections): what it exports is not read here.
    return tables === 0 && shared ? undefined : result;
  } catch (err) {
    if (err instanceof RangeError) return undefined;
    throw err;
  }
}
