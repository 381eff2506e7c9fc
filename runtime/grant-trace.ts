/**
 * Timestamps on a session grant's path, one per step and process, for
 * bench/ab/timeline.ts (BENCHMARKS.md: where an idle grant's time goes). Off
 * unless $KFARM_TRACE_DIR names a folder: then each mark is a JSON line
 * `{"at": ms since the epoch, "step": …}` appended to PID.jsonl there, by
 * the one clock every process of a host reads. Nothing else reads it.
 */
import { appendFileSync } from "node:fs";
import { join } from "node:path";

const dir = process.env.KFARM_TRACE_DIR;
const file = dir ? join(dir, `${process.pid}.jsonl`) : undefined;

/** Marks `step` now (a no-op unless tracing). */
export function traceGrant(step: string): void {
  if (!file) return;
  try {
    appendFileSync(file, `${JSON.stringify({ at: performance.timeOrigin + performance.now(), step })}\n`);
  } catch {
    // A process that may not write there (a sandboxed worker) marks nothing: the timeline shows the gap.
  }
}
