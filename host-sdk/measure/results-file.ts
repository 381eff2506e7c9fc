/**
 * measure()'s results file: one JSON line per candidate, appended as each
 * finishes, read back on resume. A line is reused only for the candidate it
 * describes (its id and its digest, host-sdk/measure/candidate-digest.ts) and only
 * when final; the rules are docs/measure.md's "Resuming a batch", shared
 * with the Python SDK.
 */
import { appendFileSync, existsSync, readFileSync, truncateSync } from "node:fs";
import { throttledOf } from "../../domain/index.ts";
import { MEASURE_OUTCOMES, type MeasureResult } from "./types.ts";

/** What a resume does with a candidate: reuse its line, or measure it (saying why, when it had a line). */
export type Resumption = { reuse: MeasureResult } | { measuredAgain?: string };

export class ResultsFile {
  /** The last line per candidate id. */
  private readonly lines = new Map<string, MeasureResult>();

  private constructor(private readonly path: string | undefined) {}

  /**
   * Reads `path` (absent: nothing to resume, nothing written) and cuts off a
   * torn last line — a crash mid-write — so that the next record starts a
   * line of its own instead of being glued to the fragment and lost with it.
   */
  static open(path: string | undefined): ResultsFile {
    const file = new ResultsFile(path);
    if (!path || !existsSync(path)) return file;
    const text = readFileSync(path, "utf8");
    const end = text.lastIndexOf("\n") + 1;
    if (end < text.length) truncateSync(path, Buffer.byteLength(text.slice(0, end)));
    for (const line of text.slice(0, end).split("\n")) {
      const r = parseLine(line);
      if (r) file.lines.set(r.id, r);
    }
    return file;
  }

  /** Whether candidate `id`, whose definition has `digest`, is done; otherwise why it is measured again. */
  resume(id: string, digest: string | undefined): Resumption {
    const line = this.lines.get(id);
    if (!line) return {};
    if (line.outcome === "INFRA_ERROR") return { measuredAgain: "the earlier result was INFRA_ERROR, which is never final" };
    if (!line.digest) return { measuredAgain: "the earlier line has no digest" };
    if (digest === undefined) return { measuredAgain: "its module could not be built to compare its digest" };
    if (line.digest !== digest) return { measuredAgain: `its definition changed (digest ${line.digest.slice(0, 12)} → ${digest.slice(0, 12)})` };
    return { reuse: line };
  }

  append(r: MeasureResult): void {
    if (this.path) appendFileSync(this.path, `${JSON.stringify(r)}\n`);
    this.lines.set(r.id, r);
  }
}

function parseLine(line: string): MeasureResult | undefined {
  if (!line.trim()) return undefined;
  let r: MeasureResult;
  try {
    r = JSON.parse(line) as MeasureResult;
  } catch {
    return undefined; // not a line of ours: its candidate, if any, is measured again
  }
  if (typeof r !== "object" || r === null || typeof r.id !== "string" || !(MEASURE_OUTCOMES as readonly string[]).includes(r.outcome)) return undefined;
  // A line written without the flag (an older SDK's) still has the conditions it comes from.
  const throttled = r.outcome === "OK" ? (r.throttled ?? throttledOf(r.conditions)) : undefined;
  return throttled === undefined ? r : { ...r, throttled };
}
