/**
 * The one-line-per-instruction text form of a VTA instruction stream, as the
 * golden streams of tests/fixtures/vta-golden/ are written (see its README):
 *
 * ```
 *     6  LOAD_INP sram 0 ?+256 y 8 x 14 s 14 pad y[1,0] x[1,1]      pn
 *    11  GEMM uop[28,154) out 8 (98,0,9) in 7 (14,16,0)               Pp
 *   106  ALU SHR imm 8 uop[280,281) out 1 (0,0) in 784 (1,1)
 * uops@10: (0,0,0) (1,1,0) ...
 * ```
 *
 * `formatInsn` writes it (a readable disassembly), `parseStreamText` reads it,
 * and `runToStreamLines` turns a compiled run into the same records, so two
 * streams can be compared field by field, DRAM bases relative to each buffer.
 */
import { DEFAULT_VTA_HARDWARE, type VtaHardware } from "./config.ts";
import { ALU_OP, MEM, OPCODE, decodeInsn, decodeUop, type Insn } from "./isa.ts";
import { STAGE, memStage } from "./insn-queue.ts";
import { UOP_BUFFER, type VtaRun } from "./program.ts";

/** One instruction of a stream in text form. */
export interface StreamLine {
  index: number;
  /** LOAD_UOP, LOAD_INP, LOAD_WGT, LOAD_ACC, LOAD_ACC_8BIT, STORE, GEMM, GEMM_RESET, ALU, NOP_MEMORY, NOP_COMPUTE, NOP_STORE, FINISH. */
  kind: string;
  /** The fields after the kind, single-spaced, with the DRAM base written as `<dram>`. */
  fields: string;
  /** Dependency flags in the order pp, pn, Pp, Pn, comma-separated ("" for none). */
  flags: string;
  /** DRAM base of a LOAD / STORE: the address space it is in ("uop", "?" in golden files, "arg<k>" for a parameter) and the element address. */
  dram?: { space: string; value: number };
}

export interface ParsedStream {
  lines: StreamLine[];
  /** Micro-ops loaded by the LOAD UOP at each instruction index, as [dst, src, wgt] (ALU uops: [dst, src]). */
  uops: Map<number, number[][]>;
}

const ALU_NAMES: Record<number, string> = { [ALU_OP.MIN]: "MIN", [ALU_OP.MAX]: "MAX", [ALU_OP.ADD]: "ADD", [ALU_OP.SHR]: "SHR", [ALU_OP.MUL]: "MUL" };
const MEM_NAMES: Record<number, string> = {
  [MEM.UOP]: "UOP",
  [MEM.WGT]: "WGT",
  [MEM.INP]: "INP",
  [MEM.ACC]: "ACC",
  [MEM.OUT]: "OUT",
  [MEM.ACC_8BIT]: "ACC_8BIT",
};
const FLAG_ORDER = [
  ["popPrev", "pp"],
  ["popNext", "pn"],
  ["pushPrev", "Pp"],
  ["pushNext", "Pn"],
] as const;

/**
 * What each dependency flag of a line means, for a reader of the disassembly
 * (docs/vta-isa.md §3: the modules are load, compute and store, in that
 * order; "prev" and "next" are the neighbouring modules of the instruction's own).
 */
export const FLAG_MEANINGS: Readonly<Record<(typeof FLAG_ORDER)[number][1], string>> = {
  pp: "pop_prev: waits for, and takes, a token from the previous module",
  pn: "pop_next: waits for, and takes, a token from the next module",
  Pp: "push_prev: gives the previous module a token when done",
  Pn: "push_next: gives the next module a token when done",
};

/** The kind of an instruction in the golden-file vocabulary. */
export function insnKind(insn: Insn): string {
  switch (insn.opcode) {
    case OPCODE.LOAD:
      if (insn.xSize === 0) return memStage(insn.memoryType) === STAGE.COMPUTE ? "NOP_COMPUTE" : "NOP_MEMORY";
      return `LOAD_${MEM_NAMES[insn.memoryType] ?? insn.memoryType}`;
    case OPCODE.STORE:
      return insn.xSize === 0 ? "NOP_STORE" : "STORE";
    case OPCODE.GEMM:
      return insn.resetReg ? "GEMM_RESET" : "GEMM";
    case OPCODE.ALU:
      return "ALU";
    case OPCODE.FINISH:
      return "FINISH";
  }
}

export function insnFlags(insn: Insn): string {
  return FLAG_ORDER.filter(([f]) => insn[f])
    .map(([, s]) => s)
    .join(",");
}

/** The fields of an instruction, with the DRAM base as `<dram>`. */
export function insnFields(insn: Insn): string {
  switch (insn.opcode) {
    case OPCODE.LOAD:
    case OPCODE.STORE: {
      if (insn.xSize === 0) return "";
      const pad = insn.yPad0 || insn.yPad1 || insn.xPad0 || insn.xPad1 ? ` pad y[${insn.yPad0},${insn.yPad1}] x[${insn.xPad0},${insn.xPad1}]` : "";
      return `sram ${insn.sramBase} <dram> y ${insn.ySize} x ${insn.xSize} s ${insn.xStride}${pad}`;
    }
    case OPCODE.GEMM:
      return (
        `uop[${insn.uopBgn},${insn.uopEnd}) out ${insn.iterOut} (${insn.dstFactorOut},${insn.srcFactorOut},${insn.wgtFactorOut})` +
        ` in ${insn.iterIn} (${insn.dstFactorIn},${insn.srcFactorIn},${insn.wgtFactorIn})`
      );
    case OPCODE.ALU:
      return (
        `${ALU_NAMES[insn.aluOpcode] ?? insn.aluOpcode}${insn.useImm ? ` imm ${insn.imm}` : ""}` +
        ` uop[${insn.uopBgn},${insn.uopEnd}) out ${insn.iterOut} (${insn.dstFactorOut},${insn.srcFactorOut})` +
        ` in ${insn.iterIn} (${insn.dstFactorIn},${insn.srcFactorIn})`
      );
    case OPCODE.FINISH:
      return "";
  }
}

/** One line of disassembly: index, kind, fields (DRAM as `dram`), flags. */
export function formatInsn(index: number, insn: Insn, dram = "?+" + ("dramBase" in insn ? insn.dramBase : 0)): string {
  const body = `${insnKind(insn)} ${insnFields(insn).replace("<dram>", dram)}`.trim();
  return `${String(index).padStart(5)}  ${body.padEnd(90)} ${insnFlags(insn)}`.trimEnd();
}

/** A compiled run as stream lines (DRAM spaces `uop` and `arg<k>`), plus its LOAD UOPs' micro-ops. */
export function runToStream(run: VtaRun, hw: VtaHardware = DEFAULT_VTA_HARDWARE): ParsedStream & { insns: Insn[] } {
  const n = run.insns.byteLength / hw.insnBytes;
  const reloc = new Map(run.relocations.map((r) => [r.insn, r.buffer]));
  const uopWords = new DataView(run.uops.buffer, run.uops.byteOffset, run.uops.byteLength);
  const insns: Insn[] = [];
  const lines: StreamLine[] = [];
  const uops = new Map<number, number[][]>();
  for (let i = 0; i < n; i++) {
    const insn = decodeInsn(run.insns, i * hw.insnBytes, hw);
    insns.push(insn);
    const line: StreamLine = { index: i, kind: insnKind(insn), fields: insnFields(insn), flags: insnFlags(insn) };
    if ((insn.opcode === OPCODE.LOAD || insn.opcode === OPCODE.STORE) && insn.xSize !== 0) {
      const buffer = reloc.get(i);
      line.dram = { space: buffer === UOP_BUFFER ? "uop" : buffer === undefined ? "?" : `arg${buffer}`, value: insn.dramBase };
      if (insn.opcode === OPCODE.LOAD && insn.memoryType === MEM.UOP) {
        const list: number[][] = [];
        for (let k = 0; k < insn.xSize; k++) {
          const u = decodeUop(uopWords.getUint32((insn.dramBase + k) * 4, true), hw);
          list.push([u.dst, u.src, u.wgt]);
        }
        uops.set(i, list);
      }
    }
    lines.push(line);
  }
  return { lines, uops, insns };
}

/** Reads the text form (golden files): instruction lines and `uops@I:` lines. */
export function parseStreamText(text: string): ParsedStream {
  const lines: StreamLine[] = [];
  const uops = new Map<number, number[][]>();
  for (const [lineNo, raw] of text.split("\n").entries()) {
    const line = raw.trim();
    if (!line) continue;
    const u = /^uops@(\d+):\s*(.*)$/.exec(line);
    if (u) {
      const list = [...u[2]!.matchAll(/\(([-\d,\s]+)\)/g)].map((m) => m[1]!.split(",").map((v) => Number(v.trim())));
      uops.set(Number(u[1]), list);
      continue;
    }
    const m = /^(\d+)\s+([A-Z_0-9]+)\s*(.*)$/.exec(line);
    if (!m) throw new SyntaxError(`stream text line ${lineNo + 1}: cannot read ${JSON.stringify(raw)}`);
    const tokens = m[3]!.split(/\s+/).filter(Boolean);
    let flags = "";
    if (tokens.length && /^(pp|pn|Pp|Pn)(,(pp|pn|Pp|Pn))*$/.test(tokens[tokens.length - 1]!)) flags = canonicalFlags(tokens.pop()!);
    let dram: StreamLine["dram"];
    const fields = tokens
      .map((t) => {
        const d = /^([A-Za-z?][\w?]*)\+(\d+)$/.exec(t);
        if (!d) return t;
        dram = { space: d[1]!, value: Number(d[2]) };
        return "<dram>";
      })
      .join(" ");
    lines.push({ index: Number(m[1]), kind: m[2]!, fields, flags, ...(dram ? { dram } : {}) });
  }
  return { lines, uops };
}

function canonicalFlags(s: string): string {
  const set = new Set(s.split(","));
  return FLAG_ORDER.map(([, f]) => f)
    .filter((f) => set.has(f))
    .join(",");
}

/**
 * The DRAM base of each line relative to the first base seen in the same
 * address space (`keyOf` picks the space; default: the line's own). Golden
 * files do not name buffers (`?+N`), so callers key those by kind.
 */
export function relativeDram(lines: readonly StreamLine[], keyOf: (l: StreamLine) => string = (l) => l.dram?.space ?? ""): (number | undefined)[] {
  const first = new Map<string, number>();
  return lines.map((l) => {
    if (!l.dram) return undefined;
    const key = keyOf(l);
    if (!first.has(key)) first.set(key, l.dram.value);
    return l.dram.value - first.get(key)!;
  });
}
