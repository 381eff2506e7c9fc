/**
 * The Summary RPC's content (TVM's query_rpc_tracker: per key total / free /
 * pending; per board agent, key, labels, state, session) and its text table.
 */
import { FARM_VERSION } from "../protos/index.ts";
import type { BoardInfo__Output } from "../protos/gen/farm/v1/BoardInfo.ts";
import type { SummaryReply, SummaryReply__Output } from "../protos/gen/farm/v1/SummaryReply.ts";
import { CANARY_BASELINE_RUNS, formatNs } from "./canary-drift.ts";
import { boardState, describeBoard, type Registry } from "./registry.ts";
import type { Scheduler } from "./scheduler.ts";


/**
 * The summary, of every key or of `key` alone (a host interested in one key
 * need not receive a 1,000-board farm); with `history`, each board's last
 * health changes too.
 */
export function buildSummary(registry: Registry, scheduler: Scheduler, startedAt: number, key = "", history = false): SummaryReply {
  const boards = [...registry.boards()].filter((b) => !key || b.key === key);
  const keys = key ? [key] : [...new Set([...boards.map((b) => b.key), ...scheduler.queuedKeys()])].sort();
  return {
    queues: keys.map((key) => {
      const ofKey = boards.filter((b) => b.key === key);
      return { key, total: ofKey.length, free: ofKey.filter((b) => boardState(b) === "free").length, pending: scheduler.pendingOf(key) };
    }),
    boards: boards.sort((a, b) => a.id.localeCompare(b.id)).map((b) => describeBoard(b, { history })),
    agents: [...registry.agents.values()].map((a) => ({ id: a.id, name: a.name, peer: a.peer, attached_at_ms: a.attachedAt, boards: a.boards.size })),
    tracker_version: FARM_VERSION,
    uptime_ms: Date.now() - startedAt,
  };
}

/** `kfarm status --history` shows each board's last few canary times (the summary holds up to 50). */
const CANARY_TIMES_SHOWN = 8;

function table(headers: string[], rows: string[][]): string[] {
  const widths = headers.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? "").length)));
  const line = (cells: string[]) => cells.map((c, i) => c.padEnd(widths[i]!)).join("  ").trimEnd();
  const rule = "-".repeat(widths.reduce((a, w) => a + w + 2, -2));
  return [rule, line(headers), rule, ...rows.map(line), rule];
}

/** The canary's recent time and its drift from the baseline: "12.9 µs (1.02×)", "12.7 µs (baseline 3/5)", "-" before any. */
function canaryCell(b: BoardInfo__Output): string {
  if (!b.canary_ns) return "-";
  const against = b.canary_drift ? `${b.canary_drift.toFixed(2)}×` : `baseline ${b.canary_baseline_runs}/${CANARY_BASELINE_RUNS}`;
  return `${formatNs(b.canary_ns)} (${against})`;
}

/** The summary as `kfarm status` prints it: boards, then queues (as TVM lays them out). */
export function formatSummary(summary: SummaryReply__Output, address: string): string {
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
        Object.entries(b.labels).map(([k, v]) => `${k}=${v}`).join(",") || "-",
      ]),
    ),
  );
  out.push("", "Queue Status");
  const rows = summary.queues.filter((q) => q.total > 0 || q.pending > 0).map((q) => [q.key, String(q.total), String(q.free), String(q.pending)]);
  out.push(...table(["key", "total", "free", "pending"], rows));
  const changes = summary.boards.flatMap((b) => b.health_history.map((c) => [b.id, new Date(c.at_ms).toISOString(), `${c.from} → ${c.to}`, c.reason]));
  if (changes.length > 0) out.push("", "Health History", ...table(["board", "at", "change", "reason"], changes));
  const timed = summary.boards.filter((b) => b.canary_timings.length > 0);
  if (timed.length > 0) {
    const rows = timed.map((b) => [
      b.id,
      b.canary_baseline_ns ? formatNs(b.canary_baseline_ns) : `learning (${b.canary_baseline_runs}/${CANARY_BASELINE_RUNS})`,
      formatNs(b.canary_ns),
      b.canary_drift ? `${b.canary_drift.toFixed(2)}×` : "-",
      b.canary_timings.slice(-CANARY_TIMES_SHOWN).map((t) => formatNs(t.kernel_ns)).join(", "),
    ]);
    out.push("", "Canary Times", ...table(["board", "baseline", "recent", "drift", `last ${CANARY_TIMES_SHOWN} runs, oldest first`], rows));
  }
  return out.join("\n");
}
