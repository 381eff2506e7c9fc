/** elfExports on ELF files built here, of both classes and byte orders (the real compilers' output: compile-cpu.spec.ts). */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { elfExports } from "./elf-exports.ts";

interface Sym {
  name: string;
  bind: number;
  type: number;
  visibility?: number;
  defined?: boolean;
}

/** A minimal ELF: a header and three sections (none, .dynsym, .dynstr), or no section headers at all. */
function elf(wide: boolean, little: boolean, symbols: readonly Sym[], opts: { type?: number; sections?: boolean } = {}): Uint8Array {
  const ehsize = wide ? 64 : 52;
  const symsize = wide ? 24 : 16;
  const shsize = wide ? 64 : 40;
  const names: number[] = [];
  let strtab = "\0";
  for (const s of symbols) {
    names.push(strtab.length);
    strtab += `${s.name}\0`;
  }
  const strOff = ehsize;
  const symOff = strOff + strtab.length;
  const symBytes = (symbols.length + 1) * symsize;
  const shOff = symOff + symBytes;
  const out = new Uint8Array(shOff + 3 * shsize);
  const v = new DataView(out.buffer);
  const u16 = (at: number, x: number) => v.setUint16(at, x, little);
  const u32 = (at: number, x: number) => v.setUint32(at, x, little);
  const word = (at: number, x: number) => (wide ? v.setBigUint64(at, BigInt(x), little) : v.setUint32(at, x, little));
  out.set([0x7f, 0x45, 0x4c, 0x46, wide ? 2 : 1, little ? 1 : 2, 1]);
  u16(16, opts.type ?? 3);
  u16(18, wide ? 62 : 3);
  u32(20, 1);
  if (opts.sections !== false) {
    word(wide ? 0x28 : 0x20, shOff);
    u16(wide ? 0x3a : 0x2e, shsize);
    u16(wide ? 0x3c : 0x30, 3);
  }
  out.set(Buffer.from(strtab, "latin1"), strOff);
  symbols.forEach((s, i) => {
    const at = symOff + (i + 1) * symsize;
    u32(at, names[i]!);
    out[at + (wide ? 4 : 12)] = (s.bind << 4) | s.type;
    out[at + (wide ? 5 : 13)] = s.visibility ?? 0;
    u16(at + (wide ? 6 : 14), s.defined === false ? 0 : 9);
  });
  const section = (i: number, type: number, offset: number, size: number, link: number, entsize: number) => {
    const at = shOff + i * shsize;
    u32(at + 4, type);
    word(at + (wide ? 0x18 : 0x10), offset);
    word(at + (wide ? 0x20 : 0x14), size);
    u32(at + (wide ? 0x28 : 0x18), link);
    word(at + (wide ? 0x38 : 0x24), entsize);
  };
  section(1, 11, symOff, symBytes, 2, symsize);
  section(2, 3, strOff, strtab.length, 0, 0);
  return out;
}

const [GLOBAL, WEAK, LOCAL] = [1, 2, 0];
const [NOTYPE, OBJECT, FUNC, IFUNC] = [0, 1, 2, 10];
const SYMBOLS: Sym[] = [
  { name: "vadd", bind: GLOBAL, type: FUNC },
  { name: "resolved", bind: GLOBAL, type: IFUNC },
  { name: "weak", bind: WEAK, type: FUNC },
  { name: "protected", bind: GLOBAL, type: FUNC, visibility: 3 },
  { name: "label", bind: GLOBAL, type: NOTYPE },
  { name: "imported", bind: GLOBAL, type: FUNC, defined: false },
  { name: "local", bind: LOCAL, type: FUNC },
  { name: "hidden", bind: GLOBAL, type: FUNC, visibility: 2 },
  { name: "table", bind: GLOBAL, type: OBJECT },
];

describe("elfExports", () => {
  for (const [wide, little] of [
    [true, true],
    [true, false],
    [false, true],
    [false, false],
  ] as const) {
    it(`reads the defined, visible functions of a ${wide ? 64 : 32}-bit ${little ? "little" : "big"}-endian shared object`, () => {
      assert.deepEqual(elfExports(elf(wide, little, SYMBOLS)), {
        shared: true,
        functions: ["vadd", "resolved", "weak", "protected"],
        untyped: ["label"],
      });
    });
  }

  it("says when the object is not a shared one (-c), and reads nothing it cannot", () => {
    assert.deepEqual(elfExports(elf(true, true, [], { type: 1 })), { shared: false, functions: [], untyped: [] });
    assert.equal(elfExports(elf(true, true, SYMBOLS, { sections: false })), undefined, "no section headers: not read");
    assert.equal(elfExports(new Uint8Array([0xcf, 0xfa, 0xed, 0xfe, 7, 0, 0, 1])), undefined, "a Mach-O");
    assert.equal(elfExports(elf(true, true, SYMBOLS).subarray(0, 300)), undefined, "cut short");
  });
});
