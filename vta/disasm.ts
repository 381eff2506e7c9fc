/**
 * A VTA program as readable text: a legend of the dependency flags, then per
 * function and run one line per instruction (kind, fields, dependency flags),
 * DRAM addresses named by the buffer they point into, and the micro-ops each
 * LOAD UOP brings in. The legend is in the output because the two-letter
 * flags (`Pp`, `pn`) are unreadable without it.
 */
import { DEFAULT_VTA_HARDWARE, type VtaHardware } from "./config.ts";
import type { VtaBinary } from "./program.ts";
import { FLAG_MEANINGS, formatInsn, runToStream } from "./stream-text.ts";

export interface DisasmOptions {
  /** Only this function. */
  functionName?: string;
  /** Names of each function's buffer parameters, by function: DRAM spaces read `data+12` instead of `arg0+12`. */
  paramNames?: Record<string, readonly string[]>;
  /** Also list the micro-ops loaded by each LOAD UOP. */
  uops?: boolean;
  hardware?: VtaHardware;
}

export function disassemble(binary: VtaBinary, opts: DisasmOptions = {}): string {
  const hw = opts.hardware ?? DEFAULT_VTA_HARDWARE;
  const out: string[] = [
    `; VTA program for ${binary.hardware}`,
    '; columns: index, instruction, its fields (docs/vta-compiler.md, "Reading a disassembly"), dependency flags:',
    ...Object.entries(FLAG_MEANINGS).map(([flag, meaning]) => `;   ${flag}  ${meaning}`),
    ";   modules: load (LOAD INP/WGT) → compute (GEMM, ALU, LOAD UOP/ACC) → store (STORE)",
  ];
  const names = Object.keys(binary.functions).filter((n) => !opts.functionName || n === opts.functionName);
  if (names.length === 0) {
    throw new RangeError(`no function "${opts.functionName}" in this program; it has: ${Object.keys(binary.functions).join(", ")}`);
  }
  for (const name of names) {
    const fn = binary.functions[name]!;
    const params = opts.paramNames?.[name] ?? [];
    fn.runs.forEach((run, r) => {
      const stream = runToStream(run, hw);
      out.push("", `${name}: run ${r}, ${stream.lines.length} instructions, ${run.uops.byteLength / hw.uopElemBytes} micro-ops`);
      stream.lines.forEach((line, i) => {
        const space = line.dram?.space.startsWith("arg") ? (params[Number(line.dram.space.slice(3))] ?? line.dram.space) : line.dram?.space;
        out.push(formatInsn(i, stream.insns[i]!, line.dram ? `${space}+${line.dram.value}` : undefined));
        const uops = stream.uops.get(i);
        if (opts.uops && uops) out.push(`       uops: ${uops.map((u) => `(${u.join(",")})`).join(" ")}`);
      });
    });
  }
  return out.join("\n");
}
