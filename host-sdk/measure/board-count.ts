/**
 * How many boards a batch will use, asked of the tracker before the
 * pipeline starts: the pipeline runs one board loop per board, so this is
 * also how many sessions it asks for at once.
 */
import { FarmError } from "../../protos/index.ts";
import type { TrackerClient } from "../tracker-client.ts";
import { backoff } from "./backoff.ts";
import { HOPELESS } from "./outcomes.ts";
import { DEFAULT_INFRA_DEADLINE_MS, type MeasureOptions } from "./types.ts";

/** What the count needs of the tracker: its list of boards. */
export type BoardLister = Pick<TrackerClient, "summary">;

/**
 * The boards of the key (and labels) the tracker lists, at most `boards`
 * and one per candidate (`candidates`, when known). `kept`: sessions still
 * open from the Measurer's last batch, which count once — they are among the
 * key's boards, and a tracker that does not answer leaves the batch with
 * them. A key no board serves is waited for up to `deadlineMs` of the
 * tracker answering (its agents may be restarting), then refused with
 * NO_BOARD; a tracker that does not answer is waited out with backoff like
 * any outage, up to `infraDeadlineMs`, after which the batch goes on with
 * one board's worth of sessions and the pipeline records what it cannot
 * measure.
 */
export async function boardCount(client: BoardLister, opts: MeasureOptions, candidates: number | undefined, kept: number): Promise<number> {
  const limit = Math.max(1, Math.min(opts.boards ?? Infinity, candidates ?? Infinity));
  if (kept > 0) return Math.min(limit, Math.max(kept, await matching(client, opts).catch(() => kept)));
  const waitMs = opts.deadlineMs ?? 60_000;
  let noBoardSince: number | undefined;
  let outageSince: number | undefined;
  for (let failures = 0; ; failures++) {
    let n: number;
    try {
      n = await matching(client, opts);
      outageSince = undefined;
    } catch (err) {
      const e = FarmError.from(err);
      if (HOPELESS.has(e.code)) throw e;
      outageSince ??= Date.now();
      if (Date.now() - outageSince > (opts.infraDeadlineMs ?? DEFAULT_INFRA_DEADLINE_MS)) return Math.min(limit, opts.boards ?? 1);
      await backoff(failures);
      continue;
    }
    if (n > 0) return Math.min(limit, n);
    noBoardSince ??= Date.now();
    if (Date.now() - noBoardSince >= waitMs) {
      const keys = [...new Set((await client.summary()).boards.map((b) => b.key))].sort();
      const selector = opts.labels && Object.keys(opts.labels).length ? ` with labels ${JSON.stringify(opts.labels)}` : "";
      throw new FarmError(
        "NO_BOARD",
        `measure: no board serves key "${opts.key}"${selector} (waited ${waitMs} ms for one to attach); the farm serves ${keys.length ? `keys ${keys.join(", ")}` : "no boards at all"}`,
      );
    }
    // Looked again at most 2 s apart: a board that attaches is used within that.
    await backoff(Math.min(failures, 3));
  }
}

/** The boards the tracker lists for the key whose labels include the batch's. */
async function matching(client: BoardLister, opts: MeasureOptions): Promise<number> {
  const summary = await client.summary({ key: opts.key });
  return summary.boards.filter((b) => b.key === opts.key && Object.entries(opts.labels ?? {}).every(([k, v]) => b.labels[k] === v)).length;
}
