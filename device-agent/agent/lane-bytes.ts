/**
 * What the agent believes of its workers' counts of their sessions' lane
 * bytes (worker.proto WorkerLaneBytes), before it tells the tracker
 * (agent.proto SessionBytes).
 *
 * On the direct lane no process but the worker touches the session's bytes
 * (docs/architecture.md, "Lanes, on the board's side"), so its own count is
 * the only one there is; and the worker runs a tenant's code. The pool's
 * machine already believes a report only as the serving worker's own
 * session's; here each one must also follow the last: totals that never
 * decrease, and grow no faster than any lane could carry bytes
 * (MAX_LANE_BYTES_PER_S, with one report interval's slack for a late
 * channel). A report that does not is refused, and the pool treats it as a
 * breach of the channel's protocol. What is believed can still be a
 * worker's lie within those bounds: the figures are shown as its worker
 * reported them, and touch nothing but its own session's and board's counts.
 */

/**
 * Faster than any lane carries a session's bytes: a 200 Gbit/s link, and
 * well above loopback TCP (a few GB/s on one socket).
 */
export const MAX_LANE_BYTES_PER_S = 25e9;
/** Time credited beyond the interval between two reports: the worker reports at most once a second, and the channel may deliver two together. */
export const LANE_BYTES_SLACK_MS = 1000;

interface Ledger {
  sessionId: string;
  toBoard: number;
  fromBoard: number;
  /** When the last report was believed (or the session assigned): performance.now(). */
  at: number;
}

/** Per worker (the pool's id for it): what its current session's lane carried, as far as it is believed. */
export class LaneByteCounts<W = number> {
  private readonly workers = new Map<W, Ledger>();

  /** `worker` was assigned `sessionId` at `now`: its counts start from 0 (a session before it is forgotten). */
  begin(worker: W, sessionId: string, now: number): void {
    this.workers.set(worker, { sessionId, toBoard: 0, fromBoard: 0, at: now });
  }

  /**
   * `worker`'s totals for `sessionId` at `now`: undefined when believed (and
   * kept as the session's), else what is wrong with them.
   */
  report(worker: W, sessionId: string, toBoard: number, fromBoard: number, now: number): string | undefined {
    const last = this.workers.get(worker);
    if (last?.sessionId !== sessionId) return `lane_bytes for session ${sessionId}, not the session it was assigned last`;
    const most = Math.floor((MAX_LANE_BYTES_PER_S * (Math.max(0, now - last.at) + LANE_BYTES_SLACK_MS)) / 1e3);
    for (const [name, value, before] of [
      ["to_board", toBoard, last.toBoard],
      ["from_board", fromBoard, last.fromBoard],
    ] as const) {
      if (!Number.isSafeInteger(value) || value < 0) return `lane_bytes' ${name} ${value} is not a byte count`;
      if (value < before) return `lane_bytes' ${name} went down from ${before} to ${value}`;
      if (value - before > most)
        return `lane_bytes' ${name} grew by ${value - before} bytes in ${Math.round(now - last.at)} ms (no lane carries more than ${most})`;
    }
    this.workers.set(worker, { sessionId, toBoard, fromBoard, at: now });
    return undefined;
  }

  /** The worker is gone. */
  forget(worker: W): void {
    this.workers.delete(worker);
  }
}
