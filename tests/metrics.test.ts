/**
 * Prometheus metrics of a real tracker and agent (`--metrics-port 0`): what a
 * scrape says before a session, during it and after it, to the exact count.
 */
import assert from "node:assert/strict";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { connectTracker, type CompiledModule, type TrackerClient } from "../host-sdk/index.ts";
import { refused } from "./helpers/assertions.ts";
import { compileVadd } from "./helpers/kernels.ts";
import { scrape, type Scrape } from "./helpers/metrics.ts";
import { startAgentProcess, startTrackerProcess, waitFor, waitForFreeBoards, type AgentProcess, type TrackerProcess } from "./helpers/processes.ts";

describe("Prometheus metrics of a tracker and an agent", () => {
  let tracker: TrackerProcess;
  let agent: AgentProcess;
  let client: TrackerClient;
  let module: CompiledModule;
  let trackerHttp: string;
  let agentHttp: string;
  const board = "m1/cpu0";
  let configDir: string | undefined;
  const local = { board: "cpu0", kind: "cpu" };

  before(async () => {
    tracker = await startTrackerProcess(["--metrics-port", "0"]);
    assert.ok(tracker.httpAddress, "the tracker printed its HTTP address");
    trackerHttp = tracker.httpAddress;
    // The agent's metrics port comes from its config file (`agent:` settings).
    configDir = mkdtempSync(join(tmpdir(), "kfarm-metrics-"));
    const config = join(configDir, "agent.yaml");
    writeFileSync(config, "boards:\n  - { kind: cpu, key: cpu, name: cpu0 }\nagent:\n  metricsPort: 0\n");
    [agent, module] = await Promise.all([startAgentProcess(tracker.address, [], ["--config", config, "--name", "m1"]), compileVadd()]);
    assert.ok(agent.metricsAddress, "the agent printed its metrics address");
    agentHttp = agent.metricsAddress;
    client = await connectTracker(tracker.address);
    await waitForFreeBoards(client, 1);
  });
  after(async () => {
    client?.close();
    await agent?.stop();
    await tracker?.stop();
    if (configDir) rmSync(configDir, { recursive: true, force: true });
  });

  it("the tracker's scrape shows the farm: boards by state, agents, queues, per-board info and state, process metrics", async () => {
    const t = await scrape(trackerHttp);
    assert.match(t.contentType, /^text\/plain; version=0\.0\.4/);
    assert.equal(t.get("kernelfarm_boards", { key: "cpu", kind: "cpu", state: "free" }), 1);
    for (const state of ["starting", "busy", "draining", "quarantined"]) assert.equal(t.get("kernelfarm_boards", { key: "cpu", kind: "cpu", state }), 0, state);
    assert.equal(t.get("kernelfarm_agents"), 1);
    assert.equal(t.get("kernelfarm_queue_pending", { key: "cpu" }), 0);
    assert.equal(t.get("kernelfarm_board_info", { board, key: "cpu", kind: "cpu", agent: "m1" }), 1);
    assert.equal(t.get("kernelfarm_board_state", { board, state: "free" }), 1);
    assert.equal(t.get("kernelfarm_board_state", { board, state: "busy" }), 0);
    assert.equal(t.get("kernelfarm_agent_attaches_total"), 1);
    assert.equal(t.get("kernelfarm_agent_losses_total"), 0);
    assert.equal(t.get("kernelfarm_heartbeat_misses_total"), 0);
    assert.equal(t.get("kernelfarm_relay_bytes_total", { direction: "to_board" }), 0);
    assert.ok(t.has("kernelfarm_tracker_process_cpu_seconds_total"), "Node process metrics, prefixed");
    assert.ok(t.has("kernelfarm_tracker_nodejs_eventloop_lag_seconds"));
    // Bounded labels: no series carries a session or client id.
    assert.ok(t.samples.every((s) => !("session" in s.labels) && !("client" in s.labels)));
  });

  it("the agent's scrape shows its workers and its tracker link", async () => {
    const a = await waitFor("an idle worker in the agent's metrics", async () => {
      const s = await scrape(agentHttp);
      return s.get("kernelfarm_agent_workers", { board: "cpu0", state: "idle" }) === 1 ? s : undefined;
    });
    assert.match(a.contentType, /^text\/plain; version=0\.0\.4/);
    assert.equal(a.get("kernelfarm_agent_tracker_connected"), 1);
    assert.equal(a.get("kernelfarm_agent_workers", { board: "cpu0", state: "serving" }), 0);
    assert.equal(a.get("kernelfarm_agent_calls_total", local), 0);
    assert.ok(a.get("kernelfarm_agent_worker_starts_total", { board: "cpu0" })! >= 1);
    assert.ok(a.get("kernelfarm_agent_worker_start_seconds_count", { board: "cpu0" })! >= 1);
    assert.ok(a.has("kernelfarm_agent_process_resident_memory_bytes"), "Node process metrics, prefixed");
  });

  it("counts a session exactly: grant, relay bytes, calls, a failed call, a time evaluation, a clean end", async () => {
    const t0 = await scrape(trackerHttp);
    const a0 = await scrape(agentHttp);
    const delta = (now: Scrape, was: Scrape, name: string, labels: Record<string, string> = {}) => now.sum(name, labels) - was.sum(name, labels);

    // The relay lane: its bytes cross the tracker, which counts them (a direct lane's never reach it).
    const s = await client.request("cpu", { route: "relay" });
    const during = await scrape(trackerHttp);
    assert.equal(during.get("kernelfarm_boards", { key: "cpu", kind: "cpu", state: "busy" }), 1);
    assert.equal(during.get("kernelfarm_boards", { key: "cpu", kind: "cpu", state: "free" }), 0);
    assert.equal(during.get("kernelfarm_board_state", { board, state: "busy" }), 1);
    assert.equal(delta(during, t0, "kernelfarm_sessions_started_total", { key: "cpu" }), 1);
    assert.equal(delta(during, t0, "kernelfarm_queue_wait_seconds_count", { key: "cpu" }), 1);

    await s.upload(module);
    const mod = await s.loadModule(module.name);
    const vadd = mod.getFunction("vadd");
    const n = 1024;
    const ra = await s.array(new Float32Array(n).fill(1));
    const rb = await s.array(new Float32Array(n).fill(2));
    const rc = await s.array({ shape: [n], dtype: "float32" });
    for (let i = 0; i < 3; i++) await vadd(ra, rb, rc, n);
    await refused(vadd(ra, rb, rc), "BAD_ARGUMENTS");
    await mod.timeEvaluator("vadd", { number: 2, repeat: 2 })(ra, rb, rc, n);
    assert.equal(((await rc.toArray()) as Float32Array)[0], 3);
    await s.close();

    const t1 = await waitFor("the session's end in the tracker's metrics", async () => {
      const m = await scrape(trackerHttp);
      return delta(m, t0, "kernelfarm_sessions_ended_total", { key: "cpu", reason: "OK", lane: "relay" }) === 1 ? m : undefined;
    });
    assert.equal(delta(t1, t0, "kernelfarm_sessions_ended_total"), 1, "no other end reason");
    assert.equal(delta(t1, t0, "kernelfarm_sessions_started_total", { key: "cpu" }), 1);
    assert.equal(delta(t1, t0, "kernelfarm_session_duration_seconds_count", { key: "cpu" }), 1);
    assert.ok(delta(t1, t0, "kernelfarm_session_duration_seconds_sum", { key: "cpu" }) > 0);
    const toBoard = delta(t1, t0, "kernelfarm_relay_bytes_total", { direction: "to_board" });
    const fromBoard = delta(t1, t0, "kernelfarm_relay_bytes_total", { direction: "from_board" });
    assert.ok(toBoard > module.bytes.length + 2 * n * 4, `to_board ${toBoard} bytes: more than the module (${module.bytes.length}) and two arrays`);
    assert.ok(fromBoard > n * 4, `from_board ${fromBoard} bytes: more than the array read back`);

    const a1 = await waitFor("the session's end in the agent's metrics", async () => {
      const m = await scrape(agentHttp);
      return delta(m, a0, "kernelfarm_agent_sessions_total", { ...local, reason: "OK" }) === 1 ? m : undefined;
    });
    assert.equal(delta(a1, a0, "kernelfarm_agent_sessions_total"), 1, "no other end reason");
    assert.equal(delta(a1, a0, "kernelfarm_agent_calls_total", local), 4, "3 calls and the refused one");
    assert.equal(delta(a1, a0, "kernelfarm_agent_call_errors_total", { ...local, code: "BAD_ARGUMENTS" }), 1);
    assert.equal(delta(a1, a0, "kernelfarm_agent_call_errors_total"), 1, "no other error");
    assert.equal(delta(a1, a0, "kernelfarm_agent_time_evaluations_total", local), 1);

    // The module tainted its worker: a successor was started, and the board is free again.
    await waitForFreeBoards(client, 1);
    const a2 = await waitFor("the successor worker ready", async () => {
      const m = await scrape(agentHttp);
      return delta(m, a0, "kernelfarm_agent_worker_start_seconds_count", { board: "cpu0" }) >= 1 ? m : undefined;
    });
    assert.ok(delta(a2, a0, "kernelfarm_agent_worker_starts_total", { board: "cpu0" }) >= 1);
    const t2 = await scrape(trackerHttp);
    assert.equal(t2.get("kernelfarm_boards", { key: "cpu", kind: "cpu", state: "free" }), 1);
    assert.equal(t2.get("kernelfarm_boards", { key: "cpu", kind: "cpu", state: "busy" }), 0);
  });

  it("answers unknown paths with 404 and keeps serving gRPC", async () => {
    for (const address of [trackerHttp, agentHttp]) {
      const res = await fetch(`http://${address}/nope`);
      assert.equal(res.status, 404, address);
      await res.text();
    }
    const summary = await client.summary();
    assert.equal(summary.boards.length, 1);
    assert.equal((await scrape(trackerHttp)).get("kernelfarm_agents"), 1);
  });
});
