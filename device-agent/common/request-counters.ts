/** What a worker counts on the request path for its agent's metrics. */
import type { FarmErrorCode } from "../../protos/index.ts";

/** Counts since the last `take()`: what a worker reports to its agent's metrics. */
export interface RequestCounts {
  calls: number;
  timeEvaluations: number;
  /** Failed calls and time evaluations, by FarmError code. */
  errors: Partial<Record<FarmErrorCode, number>>;
}

/**
 * Calls, time evaluations and their errors, counted on the request path with
 * an integer increment each (no allocation); `take()` hands over what
 * accumulated and starts again from zero.
 */
export class RequestCounters {
  calls = 0;
  timeEvaluations = 0;
  private errors: Partial<Record<FarmErrorCode, number>> = {};
  private anyError = false;

  /** A call or time evaluation failed with `code`. */
  failed(code: FarmErrorCode): void {
    this.errors[code] = (this.errors[code] ?? 0) + 1;
    this.anyError = true;
  }

  /** What was counted since the last take, and zero again; undefined when nothing was. */
  take(): RequestCounts | undefined {
    if (this.calls === 0 && this.timeEvaluations === 0 && !this.anyError) return undefined;
    const counts = { calls: this.calls, timeEvaluations: this.timeEvaluations, errors: this.errors };
    this.calls = 0;
    this.timeEvaluations = 0;
    if (this.anyError) {
      this.errors = {};
      this.anyError = false;
    }
    return counts;
  }
}
