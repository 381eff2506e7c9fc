/**
 * The probes an orchestrator calls (runtime/probes.ts): `/healthz` and
 * `/readyz` on a real tracker's HTTP side and a real agent's metrics port.
 * The tracker's answer without a token on a farm with tokens; the agent's
 * readiness follows its link: 503 naming the tracker while the tracker is
 * gone, 200 again once it is back.
 */
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { runCli, startAgentProcess, startTrackerProcess, waitFor, type AgentProcess, type TrackerProcess } from "./helpers/processes.ts";

interface Answer {
  status: number;
  body: string;
}

async function get(address: string, path: string): Promise<Answer> {
  const res = await fetch(`http://${address}${path}`);
  return { status: res.status, body: await res.text() };
}

describe("probes of a tracker with tokens", () => {
  let dir: string;
  let tracker: TrackerProcess;

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), "kfarm-probes-"));
    const tokens = join(dir, "tokens.json");
    const made = await runCli(["token", "create", "--tokens", tokens, "--name", "admin", "--kind", "operator"]);
    assert.equal(made.code, 0, made.stderr);
    tracker = await startTrackerProcess(["--metrics-port", "0", "--tokens", tokens]);
  });
  after(async () => {
    await tracker?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it("answers /healthz and /readyz without a token, and still guards /metrics", async () => {
    const http = tracker.httpAddress!;
    assert.deepEqual(await get(http, "/healthz"), { status: 200, body: "ok\n" });
    assert.deepEqual(await get(http, "/readyz"), { status: 200, body: "ready\n" });
    assert.equal((await get(http, "/metrics")).status, 401, "the farm's tokens still guard everything else");
    const head = await fetch(`http://${http}/readyz`, { method: "HEAD" });
    assert.equal(head.status, 200);
  });
});

describe("probes of an agent", () => {
  let tracker: TrackerProcess;
  let agent: AgentProcess;

  before(async () => {
    tracker = await startTrackerProcess();
    agent = await startAgentProcess(tracker.address, ["cpu:key=cpu"], ["--metrics-port", "0"]);
  });
  after(async () => {
    await agent?.stop();
    await tracker?.stop();
  });

  it("is live from the start and ready once attached to its tracker", async () => {
    const http = agent.metricsAddress!;
    assert.deepEqual(await get(http, "/healthz"), { status: 200, body: "ok\n" });
    await waitFor("the agent's /readyz to say ready", async () => (await get(http, "/readyz")).status === 200);
    assert.equal((await get(http, "/readyz")).body, "ready\n");
  });

  it("answers a target with an empty authority (`//`) with a 404 and lives on", async () => {
    const http = agent.metricsAddress!;
    for (const target of ["//", "//:99999", "//a"]) assert.equal((await get(http, target)).status, 404, target);
    assert.deepEqual(await get(http, "/healthz"), { status: 200, body: "ok\n" });
    assert.equal(agent.proc.exitCode, null);
  });

  it("says 503 naming its tracker while the tracker is gone, and 200 once it is back", async () => {
    const http = agent.metricsAddress!;
    const port = tracker.port;
    await tracker.stop();
    const down = await waitFor("the agent's /readyz to say 503", async () => {
      const a = await get(http, "/readyz");
      return a.status === 503 ? a : undefined;
    });
    assert.match(down.body, new RegExp(`^not ready: not attached to the tracker at ${tracker.address.replace(/\./g, "\\.")} \\(`));
    assert.equal((await get(http, "/healthz")).status, 200, "a lost tracker does not make the agent unhealthy");
    tracker = await startTrackerProcess([], port);
    await waitFor("the agent's /readyz to say ready again", async () => (await get(http, "/readyz")).status === 200);
  });
});
