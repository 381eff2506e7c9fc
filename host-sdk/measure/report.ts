/** How a batch used the farm, built from its boards' clocks and the pipeline's counts when it ends (formatReport prints it). */
import type { BoardReport, IdleTime, MeasureReport } from "./types.ts";

/** What the report is made of. */
export interface ReportInput {
  /** The batch's wall-clock seconds. */
  seconds: number;
  /** Each board loop: the boards it used, the candidates measured there, and its clock. */
  loops: readonly { boards: string[]; candidates: number; clock: { readonly busySeconds: number; readonly idle: IdleTime } }[];
  /** Results recorded by this batch, and those reused from the results file. */
  recorded: number;
  reused: number;
  /** Seconds per host compile, in any order. */
  compileSeconds: readonly number[];
  compileParallelism: number;
  queueDepth: number;
  inFlight: number;
}

export function buildReport(r: ReportInput): MeasureReport {
  const { seconds } = r;
  const boards: BoardReport[] = r.loops.map((l) => ({
    boards: l.boards,
    candidates: l.candidates,
    busy: seconds > 0 ? l.clock.busySeconds / seconds : 0,
    idle: { ...l.clock.idle },
    candidatesPerSecond: seconds > 0 ? l.candidates / seconds : 0,
  }));
  const sorted = [...r.compileSeconds].sort((a, b) => a - b);
  return {
    seconds,
    candidates: r.recorded,
    reused: r.reused,
    candidatesPerSecond: seconds > 0 ? r.recorded / seconds : 0,
    busy: boards.length ? boards.reduce((s, b) => s + b.busy, 0) / boards.length : 0,
    compileParallelism: r.compileParallelism,
    queueDepth: r.queueDepth,
    inFlightPerBoard: r.inFlight,
    // The upper median: with an even count, the larger of the middle two.
    compiles: { count: sorted.length, medianSeconds: sorted[Math.floor(sorted.length / 2)] ?? 0, maxSeconds: sorted.at(-1) ?? 0 },
    boards,
  };
}
