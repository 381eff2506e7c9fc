/**
 * A tuning batch loses nothing when the farm falls over under it (issue 28):
 * with real processes, a measure() batch with a results file runs while its
 * agent is killed with SIGKILL and started again, then its tracker (which
 * keeps a state directory) is killed and started again on the same port.
 * The batch finishes with every candidate measured — none recorded as
 * INFRA_ERROR — and the results file holds exactly one line per candidate.
 */
import assert from "node:assert/strict";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { compileCpu, connectTracker, measure, type Candidate, type CompiledModule, type MeasureReport, type TrackerClient } from "../host-sdk/index.ts";
import { startAgentProcess, startTrackerProcess, waitFor, waitForFreeBoards, type AgentProcess, type TrackerProcess } from "./helpers/processes.ts";

const SOURCE = `
#include <stdint.h>
void slow(const float* a, const float* b, float* c, int32_t n) { for (volatile int32_t k = 0; k < 1000000; k++) {} for (int32_t i = 0; i < n; i++) c[i] = a[i] + b[i]; }
`;
const N = 64;
const A = Float32Array.from({ length: N }, (_, i) => i);
const B = Float32Array.from({ length: N }, (_, i) => 0.5 * i);
const WANT = Float32Array.from({ length: N }, (_, i) => 1.5 * i);
const CANDIDATES = 60;
const BOARDS = ["cpu:key=cpu,name=b0", "cpu:key=cpu,name=b1"];

describe("measure() through an agent's and a tracker's crash", () => {
  let dir: string;
  let stateDir: string;
  let tracker: TrackerProcess;
  let agent: AgentProcess;
  let client: TrackerClient;
  let module: CompiledModule;

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), "kfarm-measure-faults-"));
    stateDir = join(dir, "state");
    tracker = await startTrackerProcess(["--state-dir", stateDir]);
    agent = await startAgentProcess(tracker.address, BOARDS, ["--name", "steady"]);
    client = await connectTracker(tracker.address);
    await waitForFreeBoards(client, 2, "cpu");
    module = await compileCpu(SOURCE, { functions: { slow: ["float32* a", "float32* b", "float32* c", "int32 n"] } });
  });
  after(async () => {
    client?.close();
    await agent?.stop();
    await tracker?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it("kill -9 of the agent, then of the tracker: every candidate measured exactly once, no INFRA_ERROR", async () => {
    const file = join(dir, "tuning.jsonl");
    const lines = () => (existsSync(file) ? readFileSync(file, "utf8").split("\n").filter(Boolean).length : 0);
    const candidates: Candidate[] = Array.from({ length: CANDIDATES }, (_, i) => ({
      id: `k${i}`,
      module,
      function: "slow",
      args: [{ input: A }, { input: B }, { output: { shape: [N], dtype: "float32" }, expect: WANT }, { scalar: N }],
    }));
    let report: MeasureReport | undefined;
    const opts = {
      key: "cpu",
      progress: false,
      resultsFile: file,
      timeEvaluator: { number: 10, repeat: 3 },
      timeoutMs: 20_000,
      onReport: (r: MeasureReport) => (report = r),
    };
    const batch = measure(client, candidates, opts);

    await waitFor("the batch's first results", () => lines() >= 6, 60_000);
    const port = tracker.port;
    await agent.stop("SIGKILL");
    agent = await startAgentProcess(tracker.address, BOARDS, ["--name", "steady"]);
    const afterAgent = lines();
    await waitFor("results from the restarted agent", () => lines() >= afterAgent + 6, 60_000);
    assert.ok(lines() < CANDIDATES - 10, `the tracker must die mid-batch (${lines()} of ${CANDIDATES} done already)`);

    await tracker.stop("SIGKILL");
    tracker = await startTrackerProcess(["--state-dir", stateDir], port);

    const results = await batch;
    assert.equal(results.length, CANDIDATES);
    const notOk = results.filter((r) => r.outcome !== "OK");
    assert.deepEqual(notOk, [], "every candidate measured");
    const recorded = readFileSync(file, "utf8")
      .split("\n")
      .filter(Boolean)
      .map((l) => JSON.parse(l) as { id: string; outcome: string; digest?: string });
    assert.equal(recorded.length, CANDIDATES, "one line per candidate");
    assert.deepEqual(recorded.map((r) => r.id).sort(), candidates.map((c) => c.id!).sort(), "each candidate exactly once");
    assert.ok(recorded.every((r) => r.outcome === "OK" && /^[0-9a-f]{64}$/.test(r.digest ?? "")));
    assert.ok(
      results.some((r) => r.attempts > 1),
      "a candidate in flight when the farm fell was measured again",
    );
    assert.equal(report?.candidates, CANDIDATES);
    assert.ok(
      report!.boards.some((b) => b.idle.session > 0),
      "the time spent waiting for the farm is booked as waiting for a session",
    );

    // Resumed with the same file: nothing is measured again.
    const again = await measure(client, candidates, opts);
    assert.deepEqual(
      again.map((r) => r.timing?.median),
      results.map((r) => r.timing?.median),
    );
    assert.equal(report!.reused, CANDIDATES);
    assert.equal(report!.candidates, 0);
  });

  it("a batch started while the tracker is down waits for it, and then uses every board", async () => {
    const port = tracker.port;
    await tracker.stop("SIGKILL");
    const candidates: Candidate[] = Array.from({ length: 12 }, (_, i) => ({
      id: `d${i}`,
      module,
      function: "slow",
      args: [{ input: A }, { input: B }, { output: { shape: [N], dtype: "float32" }, expect: WANT }, { scalar: N }],
    }));
    // The batch's first look at the farm fails (nothing listens); the tracker process takes a second to start.
    const batch = measure(client, candidates, { key: "cpu", progress: false, timeEvaluator: { number: 10, repeat: 3 }, timeoutMs: 20_000 });
    tracker = await startTrackerProcess(["--state-dir", stateDir], port);
    const results = await batch;
    assert.deepEqual(
      results.map((r) => r.outcome),
      candidates.map(() => "OK"),
    );
    assert.deepEqual(
      [...new Set(results.map((r) => r.board))].sort(),
      ["steady/b0", "steady/b1"],
      "both boards, not the one board's worth a batch that could not count them would take",
    );
    await waitForFreeBoards(client, 2, "cpu");
  });
});
