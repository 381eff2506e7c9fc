/**
 * What the tracker remembers of each board beyond its agent's attachment: its
 * health (state, counters, reason, the last canary and a bounded history of
 * transitions: tracker/health.ts, where an operator's quarantine lives too)
 * and an operator's drain (who and why).
 *
 * Kept by board id, `<agent name>/<board name>`. Both names are the agent's
 * own — its `--name` or its token's name, and the board's `name=` (else its
 * kind and index) — so the id is the same when the agent re-attaches and when
 * the tracker restarts; nothing random goes into it. An agent with neither
 * `--name` nor a token is named `<host>-<pid>`, a new name at each of *its*
 * starts: what is remembered of its boards then waits for boards that never
 * come back, and is forgotten FORGET_AFTER_MS after they left — unless an
 * operator's drain or quarantine holds it, which `kfarm board restore` ends
 * (commands work on remembered boards that are not attached).
 *
 * Always in memory, so a board whose agent re-attaches (a network blip, the
 * agent restarted) comes back as it left; in the state file
 * (tracker/state-store.ts) with `--state-dir`, so the same holds across the
 * tracker's restarts.
 */
import { BOARD_KIND, TVM_BOARD_KIND, type BoardInfo, type BoardKindName } from "../protos/index.ts";
import { CanaryDrift, type CanaryRecord } from "./canary-drift.ts";
import { BoardHealth, HEALTH_STATES, type HealthChange, type HealthRecord } from "./health.ts";
import { TVM_FARM_BOARD_KIND, standingInfo, type Board } from "./registry.ts";
import type { StateStore } from "./state-store.ts";

/** A board that left this long ago is forgotten, unless an operator's command holds it. */
export const FORGET_AFTER_MS = 30 * 24 * 3600_000;

/** One board as the state file keeps it. */
export interface BoardMemo {
  key: string;
  kind: BoardKindName;
  /** When its agent last attached it or it left (the tracker's clock). */
  seenAt: number;
  /** Board.drain: why an operator drained it; "" when not. */
  drain: string;
  health: HealthRecord;
}

/** The state file's document (its version is the store's). */
export interface TrackerState {
  boards: Record<string, BoardMemo>;
}

/** What a command acts on: a board, attached or remembered. */
export type BoardStanding = Pick<Board, "id" | "key" | "kind" | "health" | "drain">;

export class BoardMemory {
  private readonly state: TrackerState;

  constructor(
    private readonly store: StateStore<TrackerState> | undefined,
    /** Whether a board of that id is attached now (never forgotten then). */
    private readonly attached: (id: string) => boolean,
  ) {
    this.state = store?.document ?? emptyState();
  }

  /** An agent registers `boards`: each takes the health and drain remembered for its id. */
  recall(boards: Iterable<Board>): void {
    this.forgetStale();
    for (const board of boards) {
      const memo = this.state.boards[board.id];
      if (memo) {
        board.health = BoardHealth.restore(memo.health);
        board.drain = memo.drain;
      }
      this.state.boards[board.id] = this.memoOf(board);
    }
    this.store?.changed();
  }

  /**
   * The board's health or drain may have changed: remember it. Only a change
   * that decides something is written at once; the times of the last canary
   * ride along with the next write (a board whose canaries keep passing
   * costs no writes).
   */
  remember(board: BoardStanding): void {
    const before = this.state.boards[board.id];
    const memo = this.memoOf(board, before?.seenAt);
    this.state.boards[board.id] = memo;
    if (!before || decisive(before) !== decisive(memo)) this.store?.changed();
  }

  /** The board's agent went: when, for forgetting it one day. */
  left(board: Board): void {
    const memo = this.state.boards[board.id];
    if (memo) memo.seenAt = Date.now();
  }

  /**
   * When the last remembered kernelfarm board of `key` that is not attached
   * left (ms since the epoch); undefined when none is remembered. TVM
   * servers' boards and kernelfarm's tvm boards serve TVM clients only: they
   * do not count.
   */
  lastLeft(key: string): number | undefined {
    let last: number | undefined;
    for (const [id, memo] of Object.entries(this.state.boards)) {
      if (memo.key !== key || memo.kind === TVM_BOARD_KIND || memo.kind === TVM_FARM_BOARD_KIND || this.attached(id)) continue;
      if (last === undefined || memo.seenAt > last) last = memo.seenAt;
    }
    return last;
  }

  /** A remembered board that is not attached, for an operator's command. */
  absent(id: string): BoardStanding | undefined {
    const memo = this.state.boards[id];
    if (!memo || this.attached(id)) return undefined;
    return { id, key: memo.key, kind: memo.kind, health: BoardHealth.restore(memo.health), drain: memo.drain };
  }

  /** Ids of remembered boards that are not attached. */
  absentIds(): string[] {
    return Object.keys(this.state.boards)
      .filter((id) => !this.attached(id))
      .sort();
  }

  /** A remembered board that is not attached, as BoardCommand replies show it. */
  describeAbsent(board: BoardStanding): BoardInfo {
    return {
      id: board.id,
      key: board.key,
      kind: board.kind,
      agent_name: board.id.slice(0, board.id.lastIndexOf("/")),
      state: "absent",
      ...standingInfo(board),
    };
  }

  /** Resolves once what is remembered is on disk (at once without a state file). */
  flush(): Promise<void> {
    return this.store?.flush() ?? Promise.resolve();
  }

  private memoOf(board: BoardStanding, seenAt = Date.now()): BoardMemo {
    return { key: board.key, kind: board.kind, seenAt, drain: board.drain, health: board.health.snapshot() };
  }

  private forgetStale(): void {
    const before = Date.now() - FORGET_AFTER_MS;
    for (const [id, memo] of Object.entries(this.state.boards)) {
      if (memo.seenAt < before && !memo.drain && !memo.health.held && !this.attached(id)) delete this.state.boards[id];
    }
  }
}

/**
 * The memo less what changes without deciding anything (when it was last
 * seen, when its canary last ran, its canary's timings and how far the
 * baseline is learned): the baseline once learned decides, and so does a
 * slow verdict (through the state and its reason).
 */
function decisive(memo: BoardMemo): string {
  const { seenAt: _seen, health, ...rest } = memo;
  const { lastCanaryAt: _ran, agentCanaryAt: _agentRan, canary, ...decides } = health;
  return JSON.stringify([rest, decides, canary.baselineNs, canary.slow]);
}

export function emptyState(): TrackerState {
  return { boards: {} };
}

/** The state file's document, checked field by field: a damaged one is named, never half used. */
export function parseTrackerState(content: Record<string, unknown>): TrackerState {
  const boards = content.boards;
  if (!isObject(boards)) throw new Error(`"boards" must be an object of board id → record`);
  const state = emptyState();
  for (const [id, raw] of Object.entries(boards)) state.boards[id] = parseMemo(raw, `boards[${JSON.stringify(id)}]`);
  return state;
}

function parseMemo(raw: unknown, at: string): BoardMemo {
  if (!isObject(raw)) throw new Error(`${at} must be an object`);
  const h = raw.health;
  if (!isObject(h)) throw new Error(`${at}.health must be an object`);
  const state = h.state;
  if (!HEALTH_STATES.includes(state as HealthRecord["state"]))
    throw new Error(`${at}.health.state must be one of ${HEALTH_STATES.join(", ")}, got ${JSON.stringify(state)}`);
  if (!Array.isArray(h.history)) throw new Error(`${at}.health.history must be an array`);
  return {
    key: field(raw, "key", "string", at),
    kind: BOARD_KIND.parse(field(raw, "kind", "string", at), `${at}.kind`),
    seenAt: field(raw, "seenAt", "number", at),
    drain: field(raw, "drain", "string", at),
    health: {
      state: state as HealthRecord["state"],
      reason: field(h, "reason", "string", `${at}.health`),
      lastError: field(h, "lastError", "string", `${at}.health`),
      lastCanary: field(h, "lastCanary", "string", `${at}.health`),
      lastCanaryAt: field(h, "lastCanaryAt", "number", `${at}.health`),
      agentCanaryAt: field(h, "agentCanaryAt", "number", `${at}.health`),
      failures: field(h, "failures", "number", `${at}.health`),
      passes: field(h, "passes", "number", `${at}.health`),
      held: field(h, "held", "boolean", `${at}.health`),
      history: h.history.map((c, i) => parseChange(c, `${at}.health.history[${i}]`)),
      // Absent from the files of trackers before canary timings: nothing learned yet.
      canary: h.canary === undefined ? new CanaryDrift().snapshot() : parseCanary(h.canary, `${at}.health.canary`),
    },
  };
}

function parseCanary(raw: unknown, at: string): CanaryRecord {
  if (!isObject(raw)) throw new Error(`${at} must be an object`);
  if (!Array.isArray(raw.timings)) throw new Error(`${at}.timings must be an array`);
  return {
    timings: raw.timings.map((t, i) => {
      if (!isObject(t)) throw new Error(`${at}.timings[${i}] must be an object`);
      return { at: field(t, "at", "number", `${at}.timings[${i}]`), ns: field(t, "ns", "number", `${at}.timings[${i}]`) };
    }),
    baselineNs: field(raw, "baselineNs", "number", at),
    baselineRuns: field(raw, "baselineRuns", "number", at),
    slow: field(raw, "slow", "boolean", at),
  };
}

function parseChange(raw: unknown, at: string): HealthChange {
  if (!isObject(raw)) throw new Error(`${at} must be an object`);
  for (const end of ["from", "to"] as const) {
    if (!HEALTH_STATES.includes(raw[end] as HealthRecord["state"]))
      throw new Error(`${at}.${end} must be one of ${HEALTH_STATES.join(", ")}, got ${JSON.stringify(raw[end])}`);
  }
  return {
    at: field(raw, "at", "number", at),
    from: raw.from as HealthChange["from"],
    to: raw.to as HealthChange["to"],
    reason: field(raw, "reason", "string", at),
  };
}

function field<K extends "string" | "number" | "boolean">(
  o: Record<string, unknown>,
  name: string,
  type: K,
  at: string,
): K extends "string" ? string : K extends "number" ? number : boolean {
  const v = o[name];
  if (typeof v !== type || (type === "number" && !Number.isFinite(v))) throw new Error(`${at}.${name} must be a ${type}, got ${JSON.stringify(v)}`);
  return v as K extends "string" ? string : K extends "number" ? number : boolean;
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}
