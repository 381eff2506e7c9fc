/** A batch's MeasureReport as the text a tuning script prints: one line for the batch, one per board. */
import type { MeasureReport } from "./types.ts";

const pct = (x: number) => `${(100 * x).toFixed(0)} %`;
const sec = (x: number) => `${x.toFixed(1)} s`;

export function formatReport(r: MeasureReport): string {
  const head =
    `${r.candidates} candidates in ${sec(r.seconds)} (${r.candidatesPerSecond.toFixed(2)}/s${r.reused ? `, ${r.reused} reused from the results file` : ""}); ` +
    `boards busy ${pct(r.busy)}; ${r.compiles.count} compiles (median ${r.compiles.medianSeconds.toFixed(2)} s, slowest ${r.compiles.maxSeconds.toFixed(2)} s) ` +
    `at most ${r.compileParallelism} at once, queue depth ${r.queueDepth}, ${r.inFlightPerBoard} in flight per board`;
  const rows = r.boards.map((b) => {
    const idle = Object.entries(b.idle)
      .filter(([, s]) => s >= 0.05)
      .map(([cause, s]) => `${cause} ${sec(s)}`)
      .join(", ");
    return `  ${b.boards.join(" → ") || "(no board)"}: ${b.candidates} candidates, busy ${pct(b.busy)}, ${b.candidatesPerSecond.toFixed(2)}/s${idle ? `; idle: ${idle}` : ""}`;
  });
  return [head, ...rows].join("\n");
}
