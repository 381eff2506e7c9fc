/** The tracker's metrics: board counting, and what each farm event adds. */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { componentLogger } from "../runtime/index.ts";
import { FarmEvents } from "./events.ts";
import { countBoards, installMetrics, REPORTED_BOARD_STATES, MAX_UNSERVED_KEYS, TrackerMetrics, type BoardRow, type MetricsSources } from "./metrics.ts";
import { newBoard, type Agent, type Board, type BoardLease } from "./registry.ts";
import type { TrackerHttp, HttpHandler } from "./http-server.ts";
import { parseExposition, Scrape } from "../tests/helpers/metrics.ts";

const log = componentLogger("test");

function sources(pending: Record<string, number> = {}): MetricsSources {
  return {
    registry: { agents: new Map(), boards: () => [] as Board[] },
    scheduler: { pendingOf: (key) => pending[key] ?? 0, queuedKeys: () => Object.keys(pending).filter((k) => pending[k]! > 0) },
    events: new FarmEvents(log),
  };
}

/** The value of one series (exact label set) in a scrape, or undefined. */
async function value(m: TrackerMetrics, name: string, labels: Record<string, string> = {}): Promise<number | undefined> {
  return new Scrape(parseExposition(await m.scrape()), "", 0).get(name, labels);
}

const row = (board: string, key: string, state: BoardRow["state"], kind = "cpu"): BoardRow => ({ board, key, kind, agent: "a", state });

describe("tracker metrics", () => {
  it("counts boards per key, kind and state, every reported state present (0 when empty)", () => {
    const counts = countBoards(
      [row("a/0", "cpu", "free"), row("a/1", "cpu", "busy"), row("a/2", "cpu", "free"), row("b/0", "h100", "starting", "cuda")],
      REPORTED_BOARD_STATES,
    );
    const get = (key: string, kind: string, state: string) => counts.get(`${key}\0${kind}\0${state}`)?.count;
    assert.equal(get("cpu", "cpu", "free"), 2);
    assert.equal(get("cpu", "cpu", "busy"), 1);
    assert.equal(get("cpu", "cpu", "starting"), 0);
    assert.equal(get("cpu", "cpu", "draining"), 0);
    assert.equal(get("h100", "cuda", "starting"), 1);
    assert.equal(get("h100", "cuda", "free"), 0);
    assert.equal(get("h100", "cpu", "free"), undefined, "no key/kind pair that has no board");
    assert.equal(counts.size, 2 * REPORTED_BOARD_STATES.length);
  });

  it("a state outside the reported ones is counted too", () => {
    const counts = countBoards([row("a/0", "cpu", "elsewhere" as BoardRow["state"])], REPORTED_BOARD_STATES);
    assert.equal(counts.get("cpu\0cpu\0elsewhere")?.count, 1);
    assert.equal(counts.get("cpu\0cpu\0free")?.count, 0);
  });

  it("a direct lane's bytes (its worker's report) are session bytes, not the tracker's relayed ones", async () => {
    const src = sources();
    const m = new TrackerMetrics(src, { processMetrics: false });
    const base = { type: "session" as const, at: Date.now(), session: "s1-abc", board: "a/0", key: "cpu", client: "me" };
    src.events.emit({ ...base, change: "ended", reason: "OK", durationMs: 10, bytesToBoard: 3000, bytesFromBoard: 40, lane: "direct" });
    assert.equal(await value(m, "kernelfarm_session_bytes_total", { direction: "to_board", lane: "direct" }), 3000);
    assert.equal(await value(m, "kernelfarm_session_bytes_total", { direction: "from_board", lane: "direct" }), 40);
    assert.equal(await value(m, "kernelfarm_relay_bytes_total", { direction: "to_board" }), 0);
    assert.equal(await value(m, "kernelfarm_relay_bytes_total", { direction: "from_board" }), 0);
    m.close();
  });

  it("per board: its ended sessions' bytes and its running session's so far, at scrape time", async () => {
    const src = sources();
    const agent = { name: "a" } as unknown as Agent;
    const boards = ["a/0", "a/1"].map((id) => newBoard(agent, { id, name: id.slice(2), key: "cpu", kind: "cpu", labels: {}, capabilities: {} }));
    boards[0]!.bytes.toBoard = 100;
    boards[0]!.bytes.fromBoard = 200;
    boards[0]!.lease = { id: "s9", relayed: { toBoard: 5, fromBoard: 6 } } as unknown as BoardLease;
    const m = new TrackerMetrics({ ...src, registry: { agents: new Map(), boards: () => boards } }, { processMetrics: false });
    assert.equal(await value(m, "kernelfarm_board_bytes_total", { board: "a/0", direction: "to_board" }), 105);
    assert.equal(await value(m, "kernelfarm_board_bytes_total", { board: "a/0", direction: "from_board" }), 206);
    assert.equal(await value(m, "kernelfarm_board_bytes_total", { board: "a/1", direction: "to_board" }), 0);
    m.close();
  });

  it("turns session, agent and heartbeat events into counters and histograms", async () => {
    const src = sources();
    const m = new TrackerMetrics(src, { processMetrics: false });
    const at = Date.now();
    const base = { type: "session" as const, at, session: "s1-abc", board: "a/0", key: "cpu", client: "me" };
    src.events.emit({ ...base, change: "granted", queuedMs: 250 });
    src.events.emit({ ...base, change: "ended", reason: "OK", durationMs: 1500, bytesToBoard: 1000, bytesFromBoard: 10, lane: "relay" });
    src.events.emit({ ...base, session: "s2-def", change: "granted", queuedMs: 0 });
    src.events.emit({ ...base, session: "s2-def", change: "ended", reason: "RUNTIME_CRASH", durationMs: 20, bytesToBoard: 5, bytesFromBoard: 0 });
    src.events.emit({ type: "agent", at, agent: "a#1", name: "a", peer: "p", change: "attached" });
    src.events.emit({ type: "agent", at, agent: "a#1", name: "a", peer: "p", change: "lost", reason: "gone" });
    src.events.emit({ type: "heartbeat_missed", at, agent: "a#1", silentMs: 1000 });
    src.events.emit({ type: "heartbeat_missed", at, agent: "a#1", silentMs: 1500 });

    assert.equal(await value(m, "kernelfarm_sessions_started_total", { key: "cpu" }), 2);
    assert.equal(await value(m, "kernelfarm_sessions_ended_total", { key: "cpu", reason: "OK", lane: "relay" }), 1);
    // An end event without a lane: the session never opened one.
    assert.equal(await value(m, "kernelfarm_sessions_ended_total", { key: "cpu", reason: "RUNTIME_CRASH", lane: "none" }), 1);
    assert.equal(await value(m, "kernelfarm_relay_bytes_total", { direction: "to_board" }), 1005);
    assert.equal(await value(m, "kernelfarm_relay_bytes_total", { direction: "from_board" }), 10);
    assert.equal(await value(m, "kernelfarm_session_bytes_total", { direction: "to_board", lane: "relay" }), 1000);
    assert.equal(await value(m, "kernelfarm_session_bytes_total", { direction: "to_board", lane: "none" }), 5);
    assert.equal(await value(m, "kernelfarm_session_bytes_total", { direction: "from_board", lane: "direct" }), 0, "every lane's series from the start");
    assert.equal(await value(m, "kernelfarm_queue_wait_seconds_count", { key: "cpu" }), 2);
    assert.equal(await value(m, "kernelfarm_queue_wait_seconds_sum", { key: "cpu" }), 0.25);
    assert.equal(await value(m, "kernelfarm_queue_wait_seconds_bucket", { key: "cpu", le: "0.1" }), 1);
    assert.equal(await value(m, "kernelfarm_queue_wait_seconds_bucket", { key: "cpu", le: "0.25" }), 2);
    assert.equal(await value(m, "kernelfarm_session_duration_seconds_sum", { key: "cpu" }), 1.52);
    assert.equal(await value(m, "kernelfarm_agent_attaches_total"), 1);
    assert.equal(await value(m, "kernelfarm_agent_losses_total"), 1);
    assert.equal(await value(m, "kernelfarm_heartbeat_misses_total"), 2);

    m.close();
    src.events.emit({ ...base, change: "granted", queuedMs: 1 });
    assert.equal(await value(m, "kernelfarm_sessions_started_total", { key: "cpu" }), 2, "closed: no longer counting");
    assert.equal(src.events.listenerCount, 0);
  });

  it("keeps at most MAX_UNSERVED_KEYS keys no board serves, forgetting the oldest idle ones (a TVM client may name any key)", async () => {
    const pending: Record<string, number> = {};
    const m = new TrackerMetrics(sources(pending), { processMetrics: false });
    for (let i = 0; i < MAX_UNSERVED_KEYS + 100; i++) pending[`k${i}`] = 1;
    await m.scrape();
    for (const k of Object.keys(pending)) pending[k] = 0;
    pending.waiting = 2;
    const series = (await m.scrape()).split("\n").filter((l) => l.startsWith("kernelfarm_queue_pending{")).length;
    assert.equal(series, MAX_UNSERVED_KEYS);
    assert.equal(await value(m, "kernelfarm_queue_pending", { key: "waiting" }), 2);
    assert.equal(await value(m, "kernelfarm_queue_pending", { key: `k${MAX_UNSERVED_KEYS + 99}` }), 0, "the newest idle keys stay");
    assert.equal(await value(m, "kernelfarm_queue_pending", { key: "k0" }), undefined, "the oldest idle keys go");
  });

  it("reads queue lengths at scrape time, and keeps reporting a key once its queue is empty", async () => {
    const pending: Record<string, number> = { cpu: 3 };
    const m = new TrackerMetrics(sources(pending), { processMetrics: false });
    await m.scrape();
    assert.equal(await value(m, "kernelfarm_queue_pending", { key: "cpu" }), 3);
    pending.cpu = 0;
    await m.scrape();
    assert.equal(await value(m, "kernelfarm_queue_pending", { key: "cpu" }), 0);
  });

  it("serves /metrics with the registry's content type, process metrics included", async () => {
    const routes = new Map<string, HttpHandler>();
    const http = { route: (path: string, h: HttpHandler) => void routes.set(path, h) } as unknown as TrackerHttp;
    const m = installMetrics(http, sources());
    const handler = routes.get("/metrics");
    assert.ok(handler);
    let status = 0;
    let headers: Record<string, string> = {};
    let body = "";
    const res = {
      writeHead(s: number, h: Record<string, string>) {
        status = s;
        headers = h;
        return this;
      },
      end(b: string) {
        body = b;
      },
    };
    await handler({} as never, res as never);
    assert.equal(status, 200);
    assert.equal(headers["content-type"], m.register.contentType);
    assert.match(body, /^kernelfarm_agents 0$/m);
    assert.match(body, /^kernelfarm_tracker_process_cpu_seconds_total /m);
    m.close();
  });
});
