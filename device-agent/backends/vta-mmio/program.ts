/**
 * A VTA function prepared for a board driven through its registers: each run
 * decoded and checked once (the simulator's decoder: the same checks and the
 * same errors as on a simulator board), its micro-ops placed in a DMA buffer,
 * its instruction stream kept with the micro-op addresses already physical,
 * and the list of instructions whose DRAM address is patched per call with
 * the physical address of the argument they name. TVM's seven statistics are
 * counted from the stream here, once: the hardware has no counters.
 */
import { FarmError } from "../../../protos/index.ts";
import { UOP_BUFFER, insnLayouts, type VtaBinary, type VtaHardware } from "../../../vta/index.ts";
import { ABSOLUTE, KIND, checkRunShape, runLabel, decodeRun, type BufferNeed, type ParamInfo } from "../vta-board/decode.ts";
import { tokensLeftError } from "../vta-sim/simulator.ts";
import { VtaCounters, countStatically } from "../vta-board/stats.ts";
import type { TimingModel } from "../vta-board/timing.ts";
import { QUEUE_NAMES } from "../vta-board/tokens.ts";
import type { DmaBuffer, DmaMemory } from "./bus.ts";

/** An instruction whose dram_base becomes `dramBase + phys / elemBytes` of argument `param`. */
interface Patch {
  readonly insn: number;
  readonly param: number;
  readonly dramBase: number;
  readonly elemBytes: number;
}

export interface MmioRun {
  readonly index: number;
  /** The stream with micro-op addresses physical; argument addresses still offsets. */
  readonly insns: Uint8Array;
  readonly count: number;
  readonly patches: readonly Patch[];
  readonly uopBuffer: DmaBuffer | undefined;
}

export interface MmioProgram {
  readonly name: string;
  readonly params: readonly ParamInfo[];
  readonly runs: readonly MmioRun[];
  /** The first error of its instruction streams: raised when it is called, as on a simulator board. */
  readonly error: FarmError | undefined;
  /** Per parameter: the most DRAM any run touches, and where. */
  readonly needs: ReadonlyMap<number, BufferNeed & { run: number }>;
  /** Parameters the streams read or write (flushed before a call), and those they store into (invalidated after). */
  readonly touched: readonly number[];
  readonly stored: readonly number[];
  /** What one call adds to TVM's counters. */
  readonly counters: Readonly<VtaCounters>;
}

/**
 * Prepares function `name` of `binary` (whose hardware the caller checked).
 * Structural faults throw LOAD_ERROR; faults of the streams are kept in `error`.
 */
export function prepareMmioProgram(
  hw: VtaHardware,
  timing: TimingModel,
  memory: DmaMemory,
  binary: VtaBinary,
  name: string,
  params: readonly ParamInfo[],
): MmioProgram {
  const fn = binary.functions[name];
  if (typeof fn !== "object" || fn === null || !Array.isArray(fn.runs)) {
    throw new FarmError("LOAD_ERROR", `VTA binary has no function "${name}" (it has: ${Object.keys(binary.functions).join(", ") || "none"})`);
  }
  fn.runs.forEach((run, r) => checkRunShape(run, runLabel(name, r)));
  const runs: MmioRun[] = [];
  const needs = new Map<number, BufferNeed & { run: number }>();
  const touched = new Set<number>();
  const stored = new Set<number>();
  const counters = new VtaCounters();
  const net = [0, 0, 0, 0];
  let error: FarmError | undefined;
  try {
    fn.runs.forEach((run, r) => {
      const decoded = decodeRun(hw, timing, run, r, name, params);
      const where = runLabel(name, r);
      const relocated = new Map(run.relocations.map((rel) => [rel.insn, rel.buffer]));
      const insns = Uint8Array.from(run.insns);
      const patches: Patch[] = [];
      let uopBuffer: DmaBuffer | undefined;
      if (run.uops.byteLength > 0) {
        uopBuffer = memory.alloc(run.uops.byteLength);
        uopBuffer.bytes.set(run.uops);
        uopBuffer.flushForDevice();
      }
      runs.push({ index: r, insns, count: decoded.insns.length, patches, uopBuffer });
      for (const d of decoded.insns) {
        for (const q of [d.pop0, d.pop1]) if (q >= 0) net[q]!--;
        for (const q of [d.push0, d.push1]) if (q >= 0) net[q]!++;
        if (d.buffer === ABSOLUTE) {
          throw new FarmError(
            "RUNTIME_ERROR",
            `VTA ${where}, instruction ${d.index} (${d.label}): its DRAM address ${d.dramBase} has no relocation; on a board every DRAM address must name an argument or the micro-op buffer`,
            { details: { instruction: d.index } },
          );
        }
        const buffer = relocated.get(d.index);
        if (buffer === undefined || d.ySize === 0 || d.xSize === 0) continue;
        if (buffer === UOP_BUFFER) {
          writeDramBase(dramBaseField(hw), insns, d.index, d.dramBase + uopBuffer!.phys / hw.uopElemBytes);
        } else {
          patches.push({ insn: d.index, param: buffer, dramBase: d.dramBase, elemBytes: d.dramElemBytes });
          touched.add(buffer);
          if (d.kind === KIND.STORE) stored.add(buffer);
        }
      }
      for (const [p, n] of decoded.needs) {
        const prev = needs.get(p);
        if (!prev || n.bytes > prev.bytes) needs.set(p, { ...n, run: r });
      }
      countStatically(hw, decoded.insns, counters);
    });
    if (net.some((n) => n > 0)) error = tokensLeftError(name, Object.fromEntries(QUEUE_NAMES.map((q, i) => [q, net[i]!])));
  } catch (err) {
    if (!(err instanceof FarmError) || err.code !== "RUNTIME_ERROR") {
      for (const run of runs) run.uopBuffer?.free();
      throw err;
    }
    error = err;
  }
  return { name, params, runs, error, needs, touched: [...touched], stored: [...stored], counters };
}

/** Writes run `run`'s stream into `out` with every argument address physical (`phys[p]`: argument p's buffer address). */
export function relocateRun(hw: VtaHardware, run: MmioRun, phys: readonly number[], out: Uint8Array): void {
  out.set(run.insns);
  const field = dramBaseField(hw);
  for (const p of run.patches) writeDramBase(field, out, p.insn, p.dramBase + phys[p.param]! / p.elemBytes);
}

/** Where dram_base lies in a LOAD/STORE instruction of `hw`. */
function dramBaseField(hw: VtaHardware): { lo: number; width: number } {
  return insnLayouts(hw).mem.find((f) => f.name === "dramBase")!;
}

/**
 * Sets the dram_base field of LOAD/STORE instruction `index` in `out`, bit by
 * bit span (it straddles bytes: bits 26–57 of the default layout), leaving
 * every other field as it is. A relocation per instruction per call: this
 * costs a few dozen nanoseconds, where decoding and re-encoding the whole
 * instruction cost microseconds.
 */
function writeDramBase(field: { lo: number; width: number }, out: Uint8Array, index: number, value: number): void {
  if (!Number.isInteger(value) || value < 0 || value >= 2 ** field.width) {
    throw new FarmError(
      "RUNTIME_ERROR",
      `VTA instruction ${index}: its DRAM address ${value} (in elements) does not fit the ${field.width}-bit dram_base field; the buffer lies too high in physical memory`,
    );
  }
  let bit = field.lo;
  let done = 0;
  while (done < field.width) {
    const at = index * 16 + (bit >> 3);
    const shift = bit & 7;
    const n = Math.min(8 - shift, field.width - done);
    const mask = ((1 << n) - 1) << shift;
    out[at] = (out[at]! & ~mask) | (((value >>> done) & ((1 << n) - 1)) << shift);
    bit += n;
    done += n;
  }
}

export function releaseMmioProgram(program: MmioProgram): void {
  for (const run of program.runs) run.uopBuffer?.free();
}
