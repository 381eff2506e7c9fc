/**
 * The worker's reports of its session's lane bytes to its agent (worker.proto
 * WorkerLaneBytes): on the direct lane no other process touches them, so the
 * farm's byte counts for it are these (docs/architecture.md, "Lanes, on the
 * board's side"). They cost the lane nothing: the socket counts what it
 * reads and writes anyway (bytesRead, bytesWritten), and a timer reads them
 * at most once a second, reporting only what changed, and once more at the
 * session's end, before its "ended".
 */
import type { WorkerToAgent } from "../../protos/index.ts";

/** Totals since the lane came: host → board (what this end read) and board → host (what it wrote). */
export interface LaneByteTotals {
  toBoard: number;
  fromBoard: number;
}

/** How often a serving worker reports its lane's bytes while they change: the live view refreshes once a second. */
export const LANE_BYTES_REPORT_MS = 1000;

export class LaneBytesReporter {
  private sent: LaneByteTotals = { toBoard: 0, fromBoard: 0 };
  private readonly timer: NodeJS.Timeout;

  constructor(
    private readonly sessionId: string,
    /** The lane's totals now; undefined: not this worker's to count (relay, grpc). */
    private readonly read: () => LaneByteTotals | undefined,
    private readonly tell: (msg: WorkerToAgent) => void,
    intervalMs = LANE_BYTES_REPORT_MS,
  ) {
    this.timer = setInterval(() => this.report(), intervalMs);
  }

  /** The last report (if anything changed since the one before), and no more: the session is over. */
  finish(): void {
    clearInterval(this.timer);
    this.report();
  }

  private report(): void {
    const now = this.read();
    if (!now || (now.toBoard === this.sent.toBoard && now.fromBoard === this.sent.fromBoard)) return;
    this.sent = { toBoard: now.toBoard, fromBoard: now.fromBoard };
    this.tell({ lane_bytes: { session_id: this.sessionId, to_board: now.toBoard, from_board: now.fromBoard } });
  }
}
