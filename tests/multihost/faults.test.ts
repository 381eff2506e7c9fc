/**
 * Network faults across hosts (tests/multihost/netbed.ts), with real
 * processes on hosts of their own: an agent host partitioned for 2 s and for
 * 30 s while a measure() batch runs, the tracker host partitioned from
 * everyone, a client host that vanishes mid-session (no FIN), and a client
 * that can reach the tracker but not the agent. Each test waits for the
 * events it checks (boards leaving and returning in the summary, a session's
 * end) and prints how long detection and recovery took.
 *
 * Skips, saying why, where network namespaces cannot be made (not root).
 */
import assert from "node:assert/strict";
import { rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "../helpers/suites.ts";
import { LIVENESS_MS } from "../../protos/index.ts";
import { waitFor } from "../helpers/processes.ts";
import { type DriverError, startBedFarm, type BedFarm } from "./farm.ts";
import { netBedUnavailable } from "./netbed.ts";

const skip = netBedUnavailable();

interface BoardRow {
  id: string;
  agent_name: string;
  state: string;
}

/** The tracker's heartbeat bound as shipped: 3 × 500 ms missed, checked every 500 ms. */
const AGENT_LOSS_BOUND_MS = 2500;
/** A restored agent re-attaches within one re-dial (≤ 250 ms backoff) and a registration. */
const REATTACH_BOUND_MS = 3000;

describe("network faults across hosts", { skip, timeout: 600_000 }, () => {
  let farm: BedFarm;
  const figures: string[] = [];
  const now = () => performance.now();

  /** The tracker's boards, asked on a new connection each time: a host's own channel may still be reconnecting after a fault. */
  async function boards(): Promise<BoardRow[]> {
    return (await farm.clients.client2.do("summary", { fresh: true })).boards as BoardRow[];
  }

  async function allFree(timeoutMs = 30_000): Promise<void> {
    await waitFor(
      "every board free",
      async () => {
        const b = await boards();
        return b.length === 4 && b.every((x) => x.state === "free");
      },
      timeoutMs,
      50,
    );
  }

  before(async () => {
    farm = await startBedFarm({ boardsPerAgent: 2 });
    await allFree();
  });

  after(async () => {
    await farm?.stop();
    if (figures.length) console.log(["faults across hosts:", "| fault | detected | recovered |", "|---|---|---|", ...figures].join("\n"));
  });

  /** Cuts agent1 for `ms` while client1 runs a measure() batch over all four boards and client2 holds a session on agent1. */
  async function partitionAgent(ms: number): Promise<void> {
    const resultsFile = join(tmpdir(), `kfarm-multihost-${process.pid}-partition-${ms}.jsonl`);
    rmSync(resultsFile, { force: true });
    const held = await farm.clients.client2.do("request", { key: "cpu", labels: { host: "agent1" } });
    // Candidates of ~30 ms each keep the batch busy on agent1's board when the cut comes.
    const batch = farm.clients.client1.do("measure", { key: "cpu", n: 60, resultsFile, number: 30000, repeat: 3 });
    await waitFor(
      "the batch running on agent1",
      async () => (await boards()).some((b) => b.agent_name === "agent1" && b.state === "busy" && b.id !== held.board),
      30_000,
      20,
    );

    await farm.bed.cut("agent1");
    const cutAt = now();
    const heldEnd = farm.clients.client2.do("ended", { sid: held.sid, timeoutMs: 60_000 });
    await waitFor("agent1's boards leaving", async () => !(await boards()).some((b) => b.agent_name === "agent1"), 30_000, 20);
    const leftMs = now() - cutAt;
    const end = await heldEnd;
    assert.equal(end.code, "AGENT_LOST", `the session on the partitioned agent ends AGENT_LOST, got ${end.code}: ${end.message}`);

    const restoreIn = ms - (now() - cutAt);
    if (restoreIn > 0) await new Promise((r) => setTimeout(r, restoreIn)); // the partition's length is the scenario, not a wait for an event
    await farm.bed.restore("agent1");
    const restoredAt = now();
    await waitFor("agent1's boards back", async () => (await boards()).filter((b) => b.agent_name === "agent1").length === 2, 30_000, 20);
    const backMs = now() - restoredAt;

    const r = await batch;
    rmSync(resultsFile, { force: true });
    const outcomes = (r.results as Array<{ outcome: string }>).map((x) => x.outcome);
    assert.deepEqual(
      new Set(outcomes),
      new Set(["OK"]),
      `every candidate measured OK: ${JSON.stringify(r.results.filter((x: { outcome: string }) => x.outcome !== "OK"))}`,
    );
    assert.equal(r.fileIds.length, 60, "one results-file line per candidate: none lost");
    assert.equal(new Set(r.fileIds).size, 60, "none recorded twice");
    const retried = (r.results as Array<{ attempts: number }>).filter((x) => x.attempts > 1).length;
    assert.ok(retried >= 1, "the candidate running on agent1 when it was cut was retried on another board");
    assert.ok(leftMs < AGENT_LOSS_BOUND_MS, `agent1's boards left after ${leftMs.toFixed(0)} ms (bound ${AGENT_LOSS_BOUND_MS})`);
    assert.ok(backMs < REATTACH_BOUND_MS, `agent1's boards came back ${backMs.toFixed(0)} ms after the link (bound ${REATTACH_BOUND_MS})`);
    figures.push(
      `| agent host partitioned ${ms / 1000} s (measure() of 60: all OK, ${retried} retried, each recorded once) | boards left after ${leftMs.toFixed(0)} ms; the held session ended AGENT_LOST after ${end.ms.toFixed(0)} ms | boards back ${backMs.toFixed(0)} ms after the link |`,
    );
    await allFree();
  }

  it("an agent host partitioned for 2 s: its boards leave and return, the batch loses and duplicates nothing", async () => {
    await partitionAgent(2000);
  });

  it("an agent host partitioned for 30 s: the same, with the agent re-dialling into the partition all along", async () => {
    await partitionAgent(30_000);
  });

  it("the tracker host partitioned from everyone: agents re-attach, waiting requests end by their deadline, no lease leaks", async () => {
    // client1 holds every board; client2 waits in the queue with a 4 s deadline.
    const held = [];
    for (let i = 0; i < 4; i++) held.push(await farm.clients.client1.do("request", { key: "cpu" }));
    const queued = farm.clients.client2.do("request", { key: "cpu", deadlineMs: 4000 }).then(
      (s: { sid: string }) => ({ granted: s }),
      (e: DriverError) => ({ failed: e }),
    );
    await waitFor(
      "client2 in the queue",
      async () => (await farm.clients.client1.do("summary")).queues.some((q: { pending: number }) => q.pending > 0),
      10_000,
      20,
    );

    await farm.bed.cut("tracker");
    const cutAt = now();
    const q = await queued;
    // The host's own guard: deadline + 2 s slack when the tracker cannot answer, or earlier if the connection is known dead.
    assert.ok("failed" in q, "a request that waited across the partition cannot have been granted: every board was held");
    if ("failed" in q) {
      assert.ok(["DEADLINE_EXCEEDED", "UNAVAILABLE"].includes(q.failed.code), `the waiting request failed with ${q.failed.code}: ${q.failed.message}`);
      assert.ok(q.failed.ms < 4000 + 2000 + 1000, `it failed ${q.failed.ms.toFixed(0)} ms after it was made (deadline 4000 ms)`);
    }
    // Long enough for both sides to give up on each other: agents (heartbeats) and the tracker (heartbeats, keepalive).
    await new Promise((r) => setTimeout(r, LIVENESS_MS + 1000)); // the partition's length is the scenario
    await farm.bed.restore("tracker");
    const restoredAt = now();
    await allFree(30_000);
    const recoveredMs = now() - restoredAt;
    const ends = await Promise.all(held.map((s) => farm.clients.client1.do("ended", { sid: s.sid, timeoutMs: 30_000 })));
    for (const e of ends)
      assert.ok(["AGENT_LOST", "CANCELLED", "UNAVAILABLE"].includes(e.code), `a session held across the partition ended ${e.code}: ${e.message}`);
    const s = await farm.clients.client2.do("summary", { fresh: true });
    assert.equal(s.boards.filter((b: BoardRow) => b.state !== "free").length, 0, "no lease outlived the partition");
    assert.ok(
      s.queues.every((x: { pending: number }) => x.pending === 0),
      "no request is left waiting",
    );
    // And the farm serves again, across hosts: client2's own channel reconnects (its backoff is capped at 2 s).
    const again = await waitFor("client2 served again", () => farm.clients.client2.do("request", { key: "cpu", deadlineMs: 5000 }), 30_000, 100);
    const hostBackMs = now() - restoredAt;
    await farm.clients.client2.do("close", { sid: again.sid });
    figures.push(
      `| tracker host partitioned ${((restoredAt - cutAt) / 1000).toFixed(0)} s (4 held sessions, 1 waiting request) | waiting request: ${"failed" in q ? `${q.failed.code} after ${q.failed.ms.toFixed(0)} ms` : "granted"}; held sessions: ${[...new Set(ends.map((e) => e.code))].join(", ")} | every board free and re-attached ${recoveredMs.toFixed(0)} ms after the link; client2 served again on its own channel after ${hostBackMs.toFixed(0)} ms |`,
    );
  });

  it(`a client host that vanishes mid-session (no FIN): its lease is reclaimed within the liveness bound (${LIVENESS_MS} ms) and the board returns`, async () => {
    const s = await farm.clients.client1.do("request", { key: "cpu", labels: { host: "agent2" } });
    await farm.clients.client1.do("load", { sid: s.sid });
    await farm.bed.cut("client1");
    const cutAt = now();
    await waitFor("the board back", async () => (await boards()).find((b) => b.id === s.board)?.state === "free", LIVENESS_MS + 10_000, 50);
    const reclaimedMs = now() - cutAt;
    assert.ok(reclaimedMs < LIVENESS_MS + 2000, `the lease was reclaimed ${reclaimedMs.toFixed(0)} ms after the client vanished (bound ${LIVENESS_MS} ms)`);
    await farm.bed.restore("client1");
    const end = await farm.clients.client1.do("ended", { sid: s.sid, timeoutMs: 30_000 });
    assert.ok(end.code, "the client, back on the network, learns that its session is gone");
    await assert.rejects(farm.clients.client1.do("calls", { sid: s.sid, n: 1 }), "a call on the reclaimed session fails");
    figures.push(
      `| client host vanished mid-session | lease reclaimed, board free after ${reclaimedMs.toFixed(0)} ms | the client, reconnected, sees ${end.code} |`,
    );
    await allFree();
  });

  it("asymmetric: the agent reaches the tracker but the client cannot reach the agent", async () => {
    await farm.bed.block("client1", "agent1");
    try {
      // auto: the direct lane black-holes, the relay through the tracker carries the session.
      const auto = await farm.clients.client1.do("request", { key: "cpu", labels: { host: "agent1" } });
      assert.equal(auto.lane, "relay", "auto fell back to the relay");
      await farm.clients.client1.do("load", { sid: auto.sid });
      const calls = await farm.clients.client1.do("calls", { sid: auto.sid, n: 5 });
      assert.equal(calls.times.length, 5);
      await farm.clients.client1.do("close", { sid: auto.sid });
      // direct only: it fails, naming why, and the board goes back.
      const direct = await farm.clients.client1.do("request", { key: "cpu", labels: { host: "agent1" }, route: "direct" }).then(
        () => undefined,
        (e: DriverError) => e,
      );
      assert.ok(direct, "a direct lane to an unreachable agent cannot open");
      assert.ok(["UNAVAILABLE", "CANCELLED"].includes(direct.code), `${direct.code}: ${direct.message}`);
      assert.match(direct.message, /agent|lane/);
      await allFree();
      figures.push(
        `| client cannot reach agent1 (agent1 reaches the tracker) | auto: relay after ${auto.ms.toFixed(0)} ms; direct: ${direct.code} after ${direct.ms.toFixed(0)} ms | calls on the relay lane work; the board returns |`,
      );
    } finally {
      await farm.bed.unblock("client1", "agent1");
    }
  });
});
