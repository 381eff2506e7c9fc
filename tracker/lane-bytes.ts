/**
 * The bytes of sessions' lanes, per session and per board, whatever the lane:
 * the tracker counts the relay and grpc lanes' itself, as it carries them
 * (tracker/relay.ts, the data port's sockets); a direct lane's bytes never
 * reach it, so those are as the session's worker counted them, reported
 * through its agent (agent.proto SessionBytes; the agent bounds them:
 * device-agent/agent/lane-bytes.ts). One source per lane: a report for a
 * session whose lane is not direct is ignored, so no session is counted twice.
 *
 * An agent's report is believed only for a session on one of its own boards,
 * and only as that session's: it moves nothing but that session's figures and
 * so its board's.
 */
import type { SessionBytes__Output } from "../protos/gen/farm/v1/SessionBytes.ts";
import type { LaneBytes } from "./lease.ts";
import type { Agent, Board, BoardLease } from "./registry.ts";

/**
 * Applies agent `agent`'s SessionBytes to `lease` (the session it names, if
 * the tracker still holds it): undefined when applied or when there is
 * nothing to apply it to (the session is over, or on a lane the tracker
 * counts), else why the report is refused, for the log.
 */
export function applySessionBytes(agent: Agent, lease: BoardLease | undefined, report: SessionBytes__Output): string | undefined {
  // Over already (its last report came after its end), or another agent's: not this report's to change.
  if (!lease || lease.board.agent !== agent) return lease ? `session ${report.session_id} is not on one of its boards` : undefined;
  if (lease.lane !== "direct") return undefined;
  const { to_board: toBoard, from_board: fromBoard } = report;
  if (!isByteCount(toBoard) || !isByteCount(fromBoard)) return `session ${report.session_id}'s bytes ${toBoard}/${fromBoard} are not byte counts`;
  const before = lease.directBytes;
  if (before && (toBoard < before.toBoard || fromBoard < before.fromBoard))
    return `session ${report.session_id}'s bytes went down (${before.toBoard}/${before.fromBoard} to ${toBoard}/${fromBoard})`;
  lease.directBytes = { toBoard, fromBoard };
  return undefined;
}

function isByteCount(n: number): boolean {
  return Number.isSafeInteger(n) && n >= 0;
}

/**
 * Bytes now: each board's since it attached (its running session's so far
 * included), and each running session's so far — what the live view shows
 * per board and per session while sessions run (tracker/live/protocol.ts).
 */
export interface BytesNow {
  boards: Record<string, LaneBytes>;
  sessions: Record<string, LaneBytes>;
}

export function bytesNow(boards: Iterable<Pick<Board, "id" | "bytes" | "lease">>): BytesNow {
  const out: BytesNow = { boards: {}, sessions: {} };
  for (const b of boards) {
    out.boards[b.id] = boardBytes(b);
    if (b.lease) out.sessions[b.lease.id] = b.lease.relayed;
  }
  return out;
}

/** A board's bytes since it attached: its ended sessions' and, live, its running session's so far. */
export function boardBytes(board: Pick<Board, "bytes" | "lease">): LaneBytes {
  const running = board.lease?.relayed ?? { toBoard: 0, fromBoard: 0 };
  return { toBoard: board.bytes.toBoard + running.toBoard, fromBoard: board.bytes.fromBoard + running.fromBoard };
}
