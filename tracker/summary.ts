/**
 * The Summary RPC's content (TVM's query_rpc_tracker: per key total / free /
 * pending; per board agent, key, labels, state, session) and its text table.
 */
import { FARM_VERSION, encodeBoardEntry, encodeSummaryReply } from "../protos/index.ts";
import type { BoardInfo__Output } from "../protos/index.ts";
import type { SummaryReply, SummaryReply__Output } from "../protos/index.ts";
import { CANARY_BASELINE_RUNS, formatNs } from "./canary-drift.ts";
import { boardFacts, boardState, describeBoard, type Board, type BoardState, type Registry } from "./registry.ts";
import type { Scheduler } from "./scheduler.ts";

/** The summary's boards, of every key or of one, in id order. */
function listedBoards(registry: Registry, key: string): readonly Board[] {
  const sorted = registry.boardsById();
  return key ? sorted.filter((b) => b.key === key) : sorted;
}

/** Boards and free boards of each key, counted as the summary lists them (each board is read once per call). */
class QueueTally {
  private readonly counts = new Map<string, { total: number; free: number }>();

  /** `keys`: listed even with no board (a key whose requests wait). */
  constructor(keys: readonly string[]) {
    for (const k of keys) this.counts.set(k, { total: 0, free: 0 });
  }

  add(board: Board, state: BoardState): void {
    let c = this.counts.get(board.key);
    if (!c) this.counts.set(board.key, (c = { total: 0, free: 0 }));
    c.total++;
    if (state === "free") c.free++;
  }

  queues(scheduler: Scheduler): SummaryReply["queues"] {
    return [...this.counts.keys()]
      .sort()
      .map((k) => ({ key: k, total: this.counts.get(k)!.total, free: this.counts.get(k)!.free, pending: scheduler.pendingOf(k) }));
  }
}

/** The summary without its boards: queues, agents, version, uptime. */
function summaryHead(registry: Registry, scheduler: Scheduler, startedAt: number, tally: QueueTally): SummaryReply {
  return {
    queues: tally.queues(scheduler),
    boards: [],
    agents: [...registry.agents.values()].map((a) => ({ id: a.id, name: a.name, peer: a.peer, attached_at_ms: a.attachedAt, boards: a.boards.size })),
    tracker_version: FARM_VERSION,
    uptime_ms: Date.now() - startedAt,
  };
}

/**
 * The summary, of every key or of `key` alone (a host interested in one key
 * need not receive a 1,000-board farm); with `history`, each board's last
 * health changes too.
 */
export function buildSummary(registry: Registry, scheduler: Scheduler, startedAt: number, key = "", history = false): SummaryReply {
  const boards = listedBoards(registry, key);
  const tally = new QueueTally(key ? [key] : scheduler.queuedKeys());
  for (const b of boards) tally.add(b, boardState(b));
  return { ...summaryHead(registry, scheduler, startedAt, tally), boards: boards.map((b) => describeBoard(b, { history })) };
}

/** A reply buildSummary() made, encoded as the encoder's are (each board's enums as their wire values). */
export function encodeWholeSummary(reply: SummaryReply): ReturnType<typeof encodeSummaryReply> {
  const { boards = [], ...head } = reply;
  return encodeSummaryReply(head, boards.map(encodeBoardEntry));
}

/**
 * The Summary RPC's reply, encoded (protos/summary-reply.ts), keeping each
 * board's encoded BoardInfo until one of its facts changes (boardFacts): a
 * call re-encodes only the boards that changed since the last one, and reads
 * each board once. With 10,000 boards a plain encoding took ~0.2 s of the
 * tracker's thread per call (BENCHMARKS.md §18). `history` asks for what is
 * not kept (each board's health history and canary times): buildSummary()
 * answers those.
 */
export class SummaryEncoder {
  private readonly encoded = new WeakMap<Board, { facts: unknown[]; bytes: Uint8Array }>();
  /** Each board's facts are read into this, and copied only when they changed. */
  private readonly scratch: unknown[] = [];

  encode(registry: Registry, scheduler: Scheduler, startedAt: number, key = ""): ReturnType<typeof encodeSummaryReply> {
    const boards = listedBoards(registry, key);
    const tally = new QueueTally(key ? [key] : scheduler.queuedKeys());
    const parts = new Array<Uint8Array>(boards.length);
    for (let i = 0; i < boards.length; i++) {
      const board = boards[i]!;
      const state = boardState(board);
      tally.add(board, state);
      parts[i] = this.bytesOf(board, state);
    }
    return encodeSummaryReply(summaryHead(registry, scheduler, startedAt, tally), parts);
  }

  private bytesOf(board: Board, state: BoardState): Uint8Array {
    const facts = boardFacts(board, state, this.scratch);
    const kept = this.encoded.get(board);
    if (kept && sameFacts(kept.facts, facts)) return kept.bytes;
    const bytes = encodeBoardEntry(describeBoard(board));
    this.encoded.set(board, { facts: facts.slice(), bytes });
    return bytes;
  }
}

function sameFacts(a: readonly unknown[], b: readonly unknown[]): boolean {
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

/** `kfarm status --history` shows each board's last few canary times (the summary holds up to 50). */
const CANARY_TIMES_SHOWN = 8;

/** A cell cut to `width` characters, an ellipsis at its end. */
function cut(text: string, width: number): string {
  return text.length <= width ? text : width <= 0 ? "" : `${text.slice(0, width - 1)}…`;
}

/**
 * Column widths that fit `budget` characters: the largest cap every column
 * can take (the widest give up room first), none below its floor. Floors
 * that do not fit are kept: the line is cut after.
 */
function fitWidths(natural: readonly number[], floors: readonly number[], budget: number): number[] {
  const at = (cap: number) => natural.map((w, i) => Math.max(floors[i]!, Math.min(w, cap)));
  const total = (cap: number) => at(cap).reduce((a, w) => a + w, 0);
  if (total(Infinity) <= budget) return [...natural];
  let lo = 0;
  let hi = Math.max(...natural);
  while (lo < hi) {
    const mid = Math.ceil((lo + hi) / 2);
    if (total(mid) <= budget) lo = mid;
    else hi = mid - 1;
  }
  return at(lo);
}

/** How the tables are laid out: `width` their longest line (0: any). */
interface Layout {
  width: number;
  /** Set when a cell was cut. */
  cut: boolean;
}

/**
 * A table within `layout.width`: the columns of `shrink` may be cut to fit,
 * down to their header's width, group by group (the first group's columns
 * give up all they can before the next group's give up any); the others
 * keep their width.
 */
function table(headers: string[], rows: string[][], layout: Layout, shrink: readonly (readonly number[])[] = []): string[] {
  const natural = headers.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? "").length)));
  const budget = layout.width - 2 * (headers.length - 1);
  let widths = natural;
  if (layout.width > 0) {
    // A group that could not make the table fit stays at its floors while the next one gives up room.
    const room = [...natural];
    const floors = [...natural];
    for (const group of shrink) {
      for (const i of group) floors[i] = Math.min(natural[i]!, headers[i]!.length);
      widths = fitWidths(room, floors, budget);
      if (widths.reduce((a, w) => a + w, 0) <= budget) break;
      for (const i of group) room[i] = floors[i]!;
    }
  }
  const line = (cells: string[]) =>
    cells
      .map((c, i) => {
        if (c.length > widths[i]!) layout.cut = true;
        return cut(c, widths[i]!).padEnd(widths[i]!);
      })
      .join("  ")
      .trimEnd();
  const rule = "-".repeat(widths.reduce((a, w) => a + w + 2, -2));
  return [rule, line(headers), rule, ...rows.map(line), rule];
}

/** The canary's recent time and its drift from the baseline: "12.9 µs (1.02×)", "12.7 µs (baseline 3/5)", "-" before any. */
function canaryCell(b: BoardInfo__Output): string {
  if (!b.canary_ns) return "-";
  const against = b.canary_drift ? `${b.canary_drift.toFixed(2)}×` : `baseline ${b.canary_baseline_runs}/${CANARY_BASELINE_RUNS}`;
  return `${formatNs(b.canary_ns)} (${against})`;
}

export interface FormatSummaryOptions {
  /**
   * The longest line, in characters (a terminal's width); 0 or none: any.
   * Long cells (health and drain reasons, sessions, labels, canary times)
   * are cut with an ellipsis to fit, and a last line says so; the summary's
   * JSON has them whole.
   */
  width?: number;
}

/** The summary as `kfarm status` prints it: boards, then queues (as TVM lays them out). */
export function formatSummary(summary: SummaryReply__Output, address: string, opts: FormatSummaryOptions = {}): string {
  const layout: Layout = { width: opts.width ?? 0, cut: false };
  const version = summary.tracker_version ? ` (kernelfarm ${summary.tracker_version}, up ${Math.round(summary.uptime_ms / 1000)} s)` : "";
  const out = [`Tracker address ${address}${version}`, ""];
  out.push("Board List");
  out.push(
    ...table(
      ["board", "key", "kind", "state", "health", "canary", "session", "labels"],
      summary.boards.map((b) => [
        b.id,
        b.key,
        b.kind,
        b.drained && b.drain_reason ? `${b.state}: ${b.drain_reason}` : b.state,
        b.health === "healthy" || !b.health ? b.health || "-" : `${b.health}: ${b.health_reason}`,
        canaryCell(b),
        b.session_id ? `${b.session_id} (${b.client_id}${b.session_lane ? `, ${b.session_lane}` : ""})` : "-",
        Object.entries(b.labels)
          .map(([k, v]) => `${k}=${v}`)
          .join(",") || "-",
      ]),
      layout,
      // Canary times, sessions and labels give up room first; then the state and health, whose reasons are what was cut.
      [
        [5, 6, 7],
        [3, 4],
      ],
    ),
  );
  out.push("", "Queue Status");
  const rows = summary.queues.filter((q) => q.total > 0 || q.pending > 0).map((q) => [q.key, String(q.total), String(q.free), String(q.pending)]);
  out.push(...table(["key", "total", "free", "pending"], rows, layout));
  const changes = summary.boards.flatMap((b) => b.health_history.map((c) => [b.id, new Date(c.at_ms).toISOString(), `${c.from} → ${c.to}`, c.reason]));
  if (changes.length > 0) out.push("", "Health History", ...table(["board", "at", "change", "reason"], changes, layout, [[3]]));
  const timed = summary.boards.filter((b) => b.canary_timings.length > 0);
  if (timed.length > 0) {
    const rows = timed.map((b) => [
      b.id,
      b.canary_baseline_ns ? formatNs(b.canary_baseline_ns) : `learning (${b.canary_baseline_runs}/${CANARY_BASELINE_RUNS})`,
      formatNs(b.canary_ns),
      b.canary_drift ? `${b.canary_drift.toFixed(2)}×` : "-",
      b.canary_timings
        .slice(-CANARY_TIMES_SHOWN)
        .map((t) => formatNs(t.kernel_ns))
        .join(", "),
    ]);
    out.push("", "Canary Times", ...table(["board", "baseline", "recent", "drift", `last ${CANARY_TIMES_SHOWN} runs, oldest first`], rows, layout, [[4]]));
  }
  if (layout.cut) out.push("", `(cells cut to fit ${layout.width} columns: --json or --width 0 shows them whole)`);
  // What no column can give up (a long board id, the address) is cut last, line by line.
  return (layout.width > 0 ? out.map((l) => cut(l, layout.width)) : out).join("\n");
}
