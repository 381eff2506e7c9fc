/**
 * The live view's feed protocol (`ws://TRACKER_HTTP/feed`, docs/live-view.md).
 *
 * Every message the tracker sends is one binary WebSocket frame holding one
 * plain msgpack value (msgpackr `pack` with `useRecords: false`: maps,
 * arrays, strings, numbers, booleans, nil — no extensions). A client is sent
 * a `snapshot` first, then `event` / `events` deltas as the farm changes and
 * a `sample` of the chart series every second. A `snapshot` may come again at
 * any time (after a flood was coalesced): it replaces everything.
 *
 * A client may send `{ kind: "ping" }` (msgpack, binary) and gets a `pong`;
 * anything else is answered with an `error` and otherwise ignored.
 */
import type { SummaryReply__Output } from "../../protos/index.ts";
import type { FarmEvent } from "../events.ts";
import type { BytesNow } from "../lane-bytes.ts";

export const FEED_PATH = "/feed";

/** A session that ended, as the recent-sessions list keeps it. */
export interface EndedSession {
  session: string;
  board: string;
  key: string;
  client: string;
  /** "OK" for a clean close, else the FarmError code. */
  reason: string;
  message?: string;
  endedAt: number;
  durationMs: number;
  bytesToBoard?: number;
  bytesFromBoard?: number;
  /** The lane it had (direct | relay | grpc), or "none" when it never opened one. */
  lane?: string;
}

/** One key over one sampling interval. */
export interface KeySample {
  /** Requests waiting at the end of the interval. */
  pending: number;
  /** The most requests waiting at any moment of the interval. */
  peakPending: number;
  /** Busy boards, averaged over the interval (0.5: one board busy half the time). */
  busy: number;
  /** Boards of the key attached at the end of the interval. */
  total: number;
}

export interface SeriesSample {
  /** End of the interval, tracker clock, ms since the epoch. */
  at: number;
  keys: Record<string, KeySample>;
}

/** The last failure of a board: a session that ended with an error, or why it left. */
export interface BoardIssue {
  reason: string;
  message?: string;
  at: number;
  session?: string;
}

export interface FeedStats {
  /** Feed clients connected now. */
  clients: number;
  /** Clients dropped because they did not read fast enough, since the tracker started. */
  dropped: number;
}

export interface FeedSnapshot {
  kind: "snapshot";
  at: number;
  /** What the Summary RPC returns: queues, boards, agents, version, uptime. */
  summary: SummaryReply__Output;
  /** The most recently ended sessions, newest first. */
  sessions: EndedSession[];
  /** Last failure per board id (boards attached now). */
  boardIssues: Record<string, BoardIssue>;
  series: { intervalMs: number; samples: SeriesSample[] };
  feed: FeedStats;
  /** Bytes per attached board since it attached and per running session so far (tracker/lane-bytes.ts); a session's final figures are in its `ended` event. */
  bytes: BytesNow;
}

export type FeedMessage =
  | FeedSnapshot
  | { kind: "event"; event: FarmEvent }
  /** Several events of one flush window, in order (superseded board/queue states coalesced). */
  | { kind: "events"; events: FarmEvent[] }
  | { kind: "sample"; sample: SeriesSample; feed: FeedStats; bytes: BytesNow }
  | { kind: "pong"; at: number }
  | { kind: "error"; message: string };

export type FeedRequest = { kind: "ping" };
