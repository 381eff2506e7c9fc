/**
 * measure(): the farm as a measurement service for auto-tuners. Many
 * candidates, one result each — never fewer — with a closed set of outcomes
 * (autotvm's MeasureErrorNo): built on the host ahead of the boards, measured
 * on every matching board at once as a pipeline (host-sdk/measure/pipeline.ts:
 * each board takes the next candidate the moment it can), checked against a
 * reference before and after timing with poisoned outputs, infrastructure
 * failures waited out and measured again, results appended as JSON lines so a
 * restarted batch reuses what is done and still describes its candidate; on
 * request, a result measured while the GPU was throttled (or flagged by the
 * caller's own test) is measured again on the same session.
 */
import { FarmError, checkOptions } from "../../protos/index.ts";
import type { TrackerClient } from "../tracker-client.ts";
import { boardCount } from "./board-count.ts";
import type { BoardSession } from "./board-session.ts";
import { checkCandidate } from "./outcomes.ts";
import { Pipeline } from "./pipeline.ts";
import { Progress } from "./progress.ts";
import { References } from "./references.ts";
import { resolveRemeasure } from "./remeasure.ts";
import { ResultsFile } from "./results-file.ts";
import type { Candidate, CandidateSource, MeasureOptions, MeasureReport, MeasureResult } from "./types.ts";

/**
 * Measures every candidate on the boards of `opts.key`; resolves with one
 * result per candidate, in candidate order (for a source, the order it gave
 * them). Its sessions end with it: a search that measures batch after batch
 * keeps them with a Measurer.
 */
export async function measure(client: TrackerClient, candidates: readonly Candidate[] | CandidateSource, opts: MeasureOptions): Promise<MeasureResult[]> {
  const m = new Measurer(client, opts);
  try {
    return await m.measure(candidates);
  } finally {
    await m.close();
  }
}

/** What may change from one batch of a Measurer to the next: not the boards it holds. */
export type BatchOptions = Omit<MeasureOptions, "key" | "labels" | "boards" | "deadlineMs">;

/**
 * A tuning run's measurement service: batches that keep their sessions, and
 * what is in them (modules, arrays, reference outputs), from one batch to
 * the next. A search that measures a generation at a time then opens each
 * board's session once, and a CPU or CUDA board boots one successor worker
 * for the whole run rather than one per generation. The sessions hold their
 * boards between batches: close() gives them back.
 */
export class Measurer {
  /** Sessions between batches, their boards held. */
  private readonly idle: BoardSession[] = [];
  private readonly references = new References();
  private running = false;
  private closed = false;
  /** How the last batch used the boards (busy fraction, idle time by cause, rate). */
  lastReport?: MeasureReport;

  constructor(
    private readonly client: TrackerClient,
    private readonly opts: MeasureOptions,
  ) {}

  /** One batch (see measure()); `batchOpts` override this Measurer's options for it. */
  async measure(candidates: readonly Candidate[] | CandidateSource, batchOpts: BatchOptions = {}): Promise<MeasureResult[]> {
    if (this.closed) throw new FarmError("INVALID_ARGUMENT", "measure: this Measurer is closed");
    if (this.running) throw new FarmError("INVALID_ARGUMENT", "measure: a Measurer runs one batch at a time; await the previous one");
    this.running = true;
    try {
      // The boards this Measurer holds stay its own, whatever a batch passes.
      const { key, labels, boards, deadlineMs } = this.opts;
      return await this.batch(candidates, { ...this.opts, ...batchOpts, key, labels, boards, deadlineMs });
    } finally {
      this.running = false;
    }
  }

  /** Ends the sessions: their boards go back to the farm. */
  async close(): Promise<void> {
    this.closed = true;
    await Promise.all(this.idle.splice(0).map((s) => s.session.close().catch(() => {})));
  }

  private async batch(candidates: readonly Candidate[] | CandidateSource, opts: MeasureOptions): Promise<MeasureResult[]> {
    const list = isList(candidates) ? candidates : undefined;
    if (list) {
      // A list is checked whole before anything runs: a script's mistake costs no board time.
      const ids = list.map((c, i) => c.id ?? `c${i}`);
      if (new Set(ids).size !== ids.length) throw new FarmError("INVALID_ARGUMENT", "measure: candidate ids must be unique");
      list.forEach((c, i) => checkCandidate(c, ids[i]!));
    }
    // Every numeric option against contract.json's one table, before anything runs (protos/option-limits.ts).
    checkOptions("measure", opts);
    checkOptions("timeEvaluator", opts.timeEvaluator ?? {});
    const remeasure = resolveRemeasure(opts.remeasure);
    const file = ResultsFile.open(opts.resultsFile);
    const total = list?.length ?? (candidates as CandidateSource).total;
    const progress = new Progress(total, opts.progress ?? process.stderr.isTTY === true);
    // Sessions kept from the last batch that are still open count among the key's boards.
    const slots = await boardCount(this.client, opts, list?.length, this.idle.filter((s) => !s.session.isClosed).length);
    let at = 0;
    const source: CandidateSource = list ? { next: () => list[at++], total: list.length } : (candidates as CandidateSource);
    const pipeline = new Pipeline(
      this.client,
      source,
      opts,
      file,
      this.references,
      {
        take: () => this.takeIdle(),
        keep: (s) => {
          // A Measurer closed while its batch ran keeps nothing: the board goes back at once.
          if (this.closed) void s.session.close().catch(() => {});
          else this.idle.push(s);
        },
      },
      {
        record: (r) => {
          progress.done++;
          if (r.outcome !== "OK") progress.failed++;
          progress.draw();
          opts.onResult?.(r);
        },
        running: (delta) => {
          progress.running += delta;
          progress.draw();
        },
      },
      remeasure,
      slots,
    );
    let report: MeasureReport;
    try {
      report = await pipeline.run();
    } finally {
      progress.end();
    }
    if (pipeline.fatal !== undefined) throw pipeline.fatal;
    this.lastReport = report;
    opts.onReport?.(report);
    const n = list?.length ?? pipeline.results.length;
    return Array.from(
      { length: n },
      (_, i) => pipeline.results[i] ?? { index: i, id: list?.[i]?.id ?? `c${i}`, outcome: "INFRA_ERROR", message: "INTERNAL: not measured", attempts: 0 },
    );
  }

  /** A session kept from an earlier batch that is still open, if any. */
  private takeIdle(): BoardSession | undefined {
    for (let s = this.idle.pop(); s; s = this.idle.pop()) {
      if (!s.session.isClosed) return s;
    }
    return undefined;
  }
}

function isList(c: readonly Candidate[] | CandidateSource): c is readonly Candidate[] {
  return Array.isArray(c);
}
