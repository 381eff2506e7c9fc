/**
 * The VTA functional simulator: DRAM, SRAMs, the three modules with their
 * dependency-token FIFOs, statistics and the cycle estimate.
 *
 * **Scheduling** (deterministic; TVM's simulator starts at a time-seeded
 * random module, §6): the fetch routing puts each instruction in the queue
 * of its module (load: LOAD INP/WGT; store: STORE; compute: the rest). The
 * scheduler visits load, compute, store in turn, and each runs its queue in
 * order until its next instruction needs a token that is not there. A pass in
 * which no module moves, before FINISH has run, is a deadlock and fails naming
 * each waiting instruction and its queue. When FINISH runs, load and store
 * finish what they can; an instruction left over after that fails too. For a
 * program whose tokens order every conflicting access (as the runtime's are),
 * the results do not depend on this order.
 *
 * Tokens persist across the runs of a call, as in TVM (a run may push a token
 * the next run pops). A call must end with every FIFO empty: a token left
 * after its last FINISH would be popped by a later call out of its order and
 * make it compute wrong results without an error (TVM's first-call stream,
 * trailingPops "carry", does this), so such a call fails naming each queue and
 * its count. After any failure the FIFOs are emptied so the session can go on.
 */
import { FarmError } from "../../../protos/index.ts";
import { DEFAULT_VTA_HARDWARE, UOP_BUFFER, type VtaBinary, type VtaHardware } from "../../../vta/index.ts";
import { Dram, type DramBuffer } from "./dram.ts";
import {
  ABSOLUTE,
  KIND,
  MODULE_NAMES,
  checkArgumentSizes,
  checkRunShape,
  decodeRun,
  popFlagName,
  runLabel,
  type BufferNeed,
  type DecodedInsn,
  type DecodedRun,
  type ParamInfo,
} from "../vta-board/decode.ts";
import { Executor } from "./execute.ts";
import { createCore, type Core, type GemmEngine } from "./core.ts";
import { VtaCounters } from "../vta-board/stats.ts";
import { resolveTiming, type TimingModel } from "../vta-board/timing.ts";
import { QUEUE_NAMES, QUEUE_ROUTES, TokenQueues } from "../vta-board/tokens.ts";

/** Default simulated DRAM: 1 GiB (the Pynq board has 512 MiB). */
export const DEFAULT_VTA_SIM_MEMORY_BYTES = 1 << 30;

export interface VtaSimulatorOptions {
  hardware?: VtaHardware;
  /** DRAM capacity in bytes. */
  memoryBytes?: number;
  /** The compute core's engine (GEMM, reset, ALU); default wasm-simd where supported. */
  engine?: GemmEngine;
  timing?: Partial<TimingModel>;
}

/** A function decoded for this simulator: its runs, their micro-op buffers placed in DRAM. */
export interface VtaProgram {
  readonly name: string;
  readonly params: readonly ParamInfo[];
  readonly runs: readonly PlacedRun[];
  /** The first error in its instruction streams: raised when it is called. */
  readonly error: FarmError | undefined;
  /** Per parameter: the most DRAM any run touches, and where. */
  readonly needs: ReadonlyMap<number, BufferNeed & { run: number }>;
}

interface PlacedRun extends DecodedRun {
  readonly uopBuffer: DramBuffer | undefined;
}

/** What one call did, for callers that want more than the cumulative stats. */
export interface CallReport {
  /** Estimated cycles of this call (all its runs). */
  cycles: number;
  runs: number;
  instructions: number;
}

export class VtaSimulator {
  readonly hw: VtaHardware;
  readonly dram: Dram;
  readonly core: Core;
  readonly tokens = new TokenQueues();
  readonly counters = new VtaCounters();
  readonly timing: TimingModel;
  private readonly executor: Executor;
  private decodedRuns = 0;

  constructor(opts: VtaSimulatorOptions = {}) {
    if (new Uint8Array(new Uint32Array([1]).buffer)[0] !== 1) throw new FarmError("INTERNAL", "the VTA simulator needs a little-endian host");
    this.hw = opts.hardware ?? DEFAULT_VTA_HARDWARE;
    const hw = this.hw;
    if (hw.inpWidth !== 8 || hw.wgtWidth !== 8 || hw.accWidth !== 32) {
      throw new FarmError(
        "INVALID_ARGUMENT",
        `the VTA simulator supports int8 inputs and weights with int32 accumulators; ${hw.name} has i${hw.inpWidth}w${hw.wgtWidth}a${hw.accWidth}`,
      );
    }
    this.dram = new Dram(opts.memoryBytes ?? DEFAULT_VTA_SIM_MEMORY_BYTES);
    this.core = createCore(hw, opts.engine);
    this.timing = resolveTiming(opts.timing);
    this.executor = new Executor(hw, this.core, this.counters);
  }

  /**
   * Runs that `prepare` decoded since the simulator was made or reset. Only
   * `prepare` decodes: calls execute the decoded program, so this moves with
   * module loads and never with calls.
   */
  get runsDecoded(): number {
    return this.decodedRuns;
  }

  /**
   * Decodes function `name` of `binary` (whose hardware the caller checked)
   * and places its micro-op buffers in DRAM. Structural faults throw
   * LOAD_ERROR; faults of the instruction streams are kept in `error`.
   */
  prepare(binary: VtaBinary, name: string, params?: readonly ParamInfo[]): VtaProgram {
    const fn = binary.functions[name];
    if (typeof fn !== "object" || fn === null || !Array.isArray(fn.runs)) {
      throw new FarmError("LOAD_ERROR", `VTA binary has no function "${name}" (it has: ${Object.keys(binary.functions).join(", ") || "none"})`);
    }
    fn.runs.forEach((run, r) => checkRunShape(run, runLabel(name, r)));
    const ps = params ?? inferParams(fn.runs);
    const runs: PlacedRun[] = [];
    const needs = new Map<number, BufferNeed & { run: number }>();
    let error: FarmError | undefined;
    try {
      fn.runs.forEach((run, r) => {
        this.decodedRuns++;
        const decoded = decodeRun(this.hw, this.timing, run, r, name, ps);
        let uopBuffer: DramBuffer | undefined;
        if (decoded.uops.byteLength > 0) {
          uopBuffer = this.dram.alloc(decoded.uops.byteLength);
          uopBuffer.bytes.set(decoded.uops);
        }
        runs.push({ ...decoded, uopBuffer });
        for (const [p, n] of decoded.needs) {
          const prev = needs.get(p);
          if (!prev || n.bytes > prev.bytes) needs.set(p, { ...n, run: r });
        }
      });
    } catch (err) {
      if (!(err instanceof FarmError) || err.code !== "RUNTIME_ERROR") throw err;
      error = err;
    }
    return { name, params: ps, runs, error, needs };
  }

  /** Frees the DRAM a program holds (its micro-op buffers). */
  release(program: VtaProgram): void {
    for (const r of program.runs) r.uopBuffer?.free();
  }

  /**
   * Calls a prepared function: `args[p]` is the DRAM buffer of buffer
   * parameter p. Every run executes in turn.
   */
  call(program: VtaProgram, args: readonly (DramBuffer | undefined)[]): CallReport {
    if (program.error) throw program.error;
    checkArgumentSizes(
      program,
      args.map((b) => b?.nbytes),
    );
    const report: CallReport = { cycles: 0, runs: 0, instructions: 0 };
    for (const run of program.runs) {
      try {
        this.execRun(program, run, args, report);
      } catch (err) {
        this.tokens.clear();
        throw err;
      }
    }
    const left = this.tokens.counts();
    if (Object.values(left).some((n) => n > 0)) {
      this.tokens.clear();
      throw tokensLeftError(program.name, left);
    }
    return report;
  }

  /**
   * Executes one instruction stream whose DRAM addresses are all physical, as
   * the hardware runs what a driver relocated and placed in its instruction
   * buffer: every access must lie in some placed buffer, micro-ops included.
   * Tokens stay in their FIFOs afterwards, as in the hardware. The device
   * model's entry point (backends/vta-mmio/model.ts); `what` names the stream
   * in errors.
   */
  runStream(insns: Uint8Array, what: string): CallReport {
    const decoded = decodeRun(this.hw, this.timing, { insns, uops: new Uint8Array(0), relocations: [] }, 0, what, []);
    const report: CallReport = { cycles: 0, runs: 0, instructions: 0 };
    try {
      this.execRun({ name: what }, { ...decoded, uopBuffer: undefined }, ANY_PLACED, report);
    } catch (err) {
      this.tokens.clear();
      throw err;
    }
    return report;
  }

  /** Zeroes SRAMs, tokens and counters, and frees all DRAM (between sessions). */
  reset(): void {
    this.core.srams.clear();
    this.tokens.clear();
    this.counters.clear();
    this.dram.clear();
    this.decodedRuns = 0;
  }

  /** Finds the argument or micro-op buffer (with ANY_PLACED: any placed buffer) an absolute DRAM range lies in. */
  private resolveAbsolute(d: DecodedInsn, run: PlacedRun, args: readonly (DramBuffer | undefined)[] | typeof ANY_PLACED, where: string): DramBuffer {
    const buf = this.dram.find(d.dramFirstByte);
    const placed = buf !== undefined && (args === ANY_PLACED || buf === run.uopBuffer || args.includes(buf));
    if (!buf || !placed || d.dramEndByte > buf.phys + buf.nbytes) {
      const hex = (n: number) => `0x${n.toString(16)}`;
      throw new FarmError(
        "RUNTIME_ERROR",
        `VTA ${where}, instruction ${d.index} (${d.label}): DRAM bytes [${hex(d.dramFirstByte)}, ${hex(d.dramEndByte)}) (dram_base ${d.dramBase}, ${d.ySize} rows of ${d.xSize}, stride ${d.xStride}) lie outside the buffers placed for this call`,
        { details: { instruction: d.index } },
      );
    }
    return buf;
  }

  private execRun(program: Pick<VtaProgram, "name">, run: PlacedRun, args: readonly (DramBuffer | undefined)[] | typeof ANY_PLACED, report: CallReport): void {
    const where = runLabel(program.name, run.index);
    const insns = run.insns;
    const queues = run.queues;
    const tokens = this.tokens;
    const exec = this.executor;
    const ptr = [0, 0, 0];
    const freeAt = [0, 0, 0];
    const busy = [0, 0, 0];
    tokens.rebase();
    let finished = false;
    let executed = 0;
    for (;;) {
      let progressed = false;
      for (let m = 0; m < 3; m++) {
        if (finished && m === 1) continue;
        const q = queues[m]!;
        let p = ptr[m]!;
        while (p < q.length) {
          const d = insns[q[p]!]!;
          if ((d.pop0 >= 0 && tokens.count(d.pop0) === 0) || (d.pop1 >= 0 && tokens.count(d.pop1) === 0)) break;
          let start = freeAt[m]!;
          if (d.pop0 >= 0) start = Math.max(start, tokens.pop(d.pop0));
          if (d.pop1 >= 0) start = Math.max(start, tokens.pop(d.pop1));
          if (d.buffer === ABSOLUTE) {
            const buf = this.resolveAbsolute(d, run, args, where);
            exec.exec(d, buf, d.dramFirstByte - buf.phys, where);
          } else if (d.buffer === UOP_BUFFER) {
            exec.exec(d, run.uopBuffer, d.dramFirstByte, where);
          } else {
            exec.exec(d, d.buffer >= 0 && args !== ANY_PLACED ? args[d.buffer] : undefined, d.dramFirstByte, where);
          }
          const end = start + d.cycles;
          freeAt[m] = end;
          busy[m]! += d.cycles;
          if (d.push0 >= 0) tokens.push(d.push0, end);
          if (d.push1 >= 0) tokens.push(d.push1, end);
          p++;
          executed++;
          progressed = true;
          if (d.kind === KIND.FINISH) {
            finished = true;
            break;
          }
        }
        ptr[m] = p;
      }
      if (finished && !progressed) break;
      if (!progressed) throw this.deadlock(where, run, ptr);
    }
    const left = [0, 1, 2].filter((m) => ptr[m]! < queues[m]!.length);
    if (left.length > 0) {
      const waits = left.map((m) => this.describeWait(run, m, ptr[m]!)).join("; ");
      throw new FarmError(
        "RUNTIME_ERROR",
        `VTA ${where}: FINISH ran while instructions were still pending — ${waits}. FINISH must wait (by popping tokens) for every module to finish`,
      );
    }
    const cycles = Math.max(freeAt[0]!, freeAt[1]!, freeAt[2]!);
    const c = this.counters;
    c.cycle_count += cycles;
    c.load_busy_cycles += busy[0]!;
    c.compute_busy_cycles += busy[1]!;
    c.store_busy_cycles += busy[2]!;
    c.runs++;
    c.instructions += executed;
    report.cycles += cycles;
    report.runs++;
    report.instructions += executed;
  }

  private describeWait(run: DecodedRun, m: number, p: number): string {
    const q = run.queues[m]!;
    if (p >= q.length) return `the ${MODULE_NAMES[m]} module has run all its instructions`;
    const d = run.insns[q[p]!]!;
    const missing = [d.pop0, d.pop1].filter((x) => x >= 0 && this.tokens.count(x) === 0);
    if (missing.length === 0) return `the ${MODULE_NAMES[m]} module has instruction ${d.index} (${d.label}) left`;
    return `the ${MODULE_NAMES[m]} module waits at instruction ${d.index} (${d.label}) for a token on ${missing.map((x) => `${QUEUE_NAMES[x]} [${popFlagName(d, x)}]`).join(" and ")}, which is empty`;
  }

  private deadlock(where: string, run: DecodedRun, ptr: number[]): FarmError {
    const waits = [0, 1, 2].map((m) => this.describeWait(run, m, ptr[m]!)).join("; ");
    const first = [0, 1, 2]
      .map((m) => run.queues[m]![ptr[m]!])
      .filter((x): x is number => x !== undefined)
      .sort((a, b) => a - b)[0];
    return new FarmError("RUNTIME_ERROR", `VTA ${where}: dependency-token deadlock before FINISH — ${waits}`, { details: { instruction: first ?? -1 } });
  }
}

/** A call whose last FINISH left tokens in the FIFOs (`left`: count by queue name). */
export function tokensLeftError(fnName: string, left: Readonly<Record<string, number>>): FarmError {
  const queues = Object.entries(left).filter(([, n]) => n > 0);
  return new FarmError(
    "RUNTIME_ERROR",
    `VTA function "${fnName}": its last FINISH left dependency tokens behind — ${queues.map(([q, n]) => `${n} on ${q} (${QUEUE_ROUTES[q as keyof typeof QUEUE_ROUTES]})`).join(", ")}; a later call would pop them out of its order and compute wrong results. A call must pop every token it pushes by its last FINISH (compileVta's trailingPops "commit", the default, does; "carry" reproduces TVM's first call, which does not)`,
    { details: { tokens: Object.fromEntries(queues) } },
  );
}

/** `args` of a stream whose addresses are physical: any placed buffer may be addressed. */
const ANY_PLACED = Symbol("any placed buffer");

/** Without a function table: every parameter a relocation names is a buffer. */
function inferParams(runs: readonly { relocations: readonly { buffer: number }[] }[]): ParamInfo[] {
  let n = 0;
  for (const r of runs) for (const rel of r.relocations) n = Math.max(n, rel.buffer + 1);
  return Array.from({ length: n }, (_, i) => ({ name: `arg${i}`, kind: "buffer" as const }));
}
