/** The agent's metrics: the worker's request counters, what boards report, and the /metrics server. */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { componentLogger } from "../../runtime/index.ts";
import { parseExposition, Scrape } from "../../tests/helpers/metrics.ts";
import { AgentMetrics } from "./metrics.ts";
import { RequestCounters } from "../common/request-counters.ts";

const log = componentLogger("test");

async function parsed(m: AgentMetrics): Promise<Scrape> {
  return new Scrape(parseExposition(await m.scrape()), "", 0);
}

describe("worker request counters", () => {
  it("hand over what accumulated since the last take, then start from zero", () => {
    const c = new RequestCounters();
    assert.equal(c.take(), undefined, "nothing counted: nothing to report");
    c.calls++;
    c.calls++;
    c.timeEvaluations++;
    c.failed("BAD_ARGUMENTS");
    c.failed("BAD_ARGUMENTS");
    c.failed("NOT_FOUND");
    assert.deepEqual(c.take(), { calls: 2, timeEvaluations: 1, errors: { BAD_ARGUMENTS: 2, NOT_FOUND: 1 } });
    assert.equal(c.take(), undefined);
    c.calls++;
    assert.deepEqual(c.take(), { calls: 1, timeEvaluations: 0, errors: {} });
  });
});

describe("agent metrics", () => {
  it("add up the deltas workers report, per board", async () => {
    const m = new AgentMetrics(log, { processMetrics: false, notReady: () => undefined });
    const cpu = m.board("cpu0", "cpu");
    const gpu = m.board("gpu0", "cuda");
    cpu.counted({ calls: 3, timeEvaluations: 1, errors: { BAD_ARGUMENTS: 1 } });
    cpu.counted({ calls: 2, timeEvaluations: 0, errors: { BAD_ARGUMENTS: 1, RUNTIME_ERROR: 1 } });
    gpu.counted({ calls: 7, timeEvaluations: 2, errors: {} });
    cpu.sessionEnded("OK");
    cpu.sessionEnded("OK");
    cpu.sessionEnded("RUNTIME_CRASH");
    cpu.sessionEnded("SOMETHING_ELSE");
    const s = await parsed(m);
    assert.equal(s.get("kernelfarm_agent_calls_total", { board: "cpu0", kind: "cpu" }), 5);
    assert.equal(s.get("kernelfarm_agent_calls_total", { board: "gpu0", kind: "cuda" }), 7);
    assert.equal(s.get("kernelfarm_agent_time_evaluations_total", { board: "cpu0", kind: "cpu" }), 1);
    assert.equal(s.get("kernelfarm_agent_time_evaluations_total", { board: "gpu0", kind: "cuda" }), 2);
    assert.equal(s.get("kernelfarm_agent_call_errors_total", { board: "cpu0", kind: "cpu", code: "BAD_ARGUMENTS" }), 2);
    assert.equal(s.get("kernelfarm_agent_call_errors_total", { board: "cpu0", kind: "cpu", code: "RUNTIME_ERROR" }), 1);
    assert.equal(s.sum("kernelfarm_agent_call_errors_total", { board: "gpu0" }), 0);
    assert.equal(s.get("kernelfarm_agent_sessions_total", { board: "cpu0", kind: "cpu", reason: "OK" }), 2);
    assert.equal(s.get("kernelfarm_agent_sessions_total", { board: "cpu0", kind: "cpu", reason: "RUNTIME_CRASH" }), 1);
    assert.equal(s.get("kernelfarm_agent_sessions_total", { board: "cpu0", kind: "cpu", reason: "INTERNAL" }), 1, "an unknown reason is no new series");
  });

  it("reads workers per state at scrape time, and times worker starts", async () => {
    const m = new AgentMetrics(log, { processMetrics: false, notReady: () => undefined });
    const cpu = m.board("cpu0", "cpu");
    let states = { starting: 1, idle: 0, serving: 0, exiting: 0 };
    cpu.watchWorkers(() => states);
    cpu.workerSpawned();
    assert.equal((await parsed(m)).get("kernelfarm_agent_workers", { board: "cpu0", state: "starting" }), 1);
    cpu.workerReady(0.3);
    states = { starting: 0, idle: 1, serving: 0, exiting: 0 };
    const s = await parsed(m);
    assert.equal(s.get("kernelfarm_agent_workers", { board: "cpu0", state: "starting" }), 0);
    assert.equal(s.get("kernelfarm_agent_workers", { board: "cpu0", state: "idle" }), 1);
    assert.equal(s.get("kernelfarm_agent_worker_starts_total", { board: "cpu0" }), 1);
    assert.equal(s.get("kernelfarm_agent_worker_start_seconds_count", { board: "cpu0" }), 1);
    assert.equal(s.get("kernelfarm_agent_worker_start_seconds_bucket", { board: "cpu0", le: "0.25" }), 0);
    assert.equal(s.get("kernelfarm_agent_worker_start_seconds_bucket", { board: "cpu0", le: "0.5" }), 1);
    assert.equal(s.get("kernelfarm_agent_tracker_connected"), 0);
    m.trackerConnected(true);
    assert.equal((await parsed(m)).get("kernelfarm_agent_tracker_connected"), 1);
  });

  it("serves GET /metrics, 404 elsewhere, 405 for other methods", async () => {
    const m = new AgentMetrics(log, { notReady: () => undefined });
    const port = await m.listen("127.0.0.1", 0);
    try {
      const ok = await fetch(`http://127.0.0.1:${port}/metrics`);
      assert.equal(ok.status, 200);
      assert.equal(ok.headers.get("content-type"), m.register.contentType);
      assert.match(await ok.text(), /^kernelfarm_agent_process_cpu_seconds_total /m);
      const nope = await fetch(`http://127.0.0.1:${port}/nope`);
      assert.equal(nope.status, 404);
      await nope.text();
      const post = await fetch(`http://127.0.0.1:${port}/metrics`, { method: "POST" });
      assert.equal(post.status, 405);
      await post.text();
    } finally {
      await m.close();
    }
  });
});
