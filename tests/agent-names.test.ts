/**
 * One live agent per name. Two agents given the same --name (one config file
 * copied to two hosts) used to evict each other on every re-dial, ~19 times a
 * second, killing their sessions: now the second is refused NAME_IN_USE,
 * naming where the first attached from, and keeps retrying quietly; an agent
 * whose link is dead (frozen, partitioned, its host gone) is replaced by a
 * newcomer of its name as soon as it fails to answer the tracker's Ping.
 */
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { connectTracker, type TrackerClient } from "../host-sdk/index.ts";
import { startAgentProcess, startTrackerProcess, waitFor, type AgentProcess, type TrackerProcess } from "./helpers/processes.ts";

const IN_USE = /agent name \\?"twin\\?" is in use by the live agent attached from (\S+) since [0-9T:.-]+Z: give each agent its own --name/g;

describe("two agents of one name", () => {
  let tracker: TrackerProcess;
  let client: TrackerClient;
  const agents: AgentProcess[] = [];

  before(async () => {
    // Heartbeats alone would take 60 s to lose a frozen agent: a replacement within seconds is the name probe's doing.
    tracker = await startTrackerProcess(["--heartbeat-ms", "1000", "--missed-heartbeats", "60"], 0, { env: { KFARM_LOG: "info" } });
    client = await connectTracker(tracker.address);
  });

  after(async () => {
    client?.close();
    for (const a of agents) {
      a.proc.kill("SIGCONT");
      await a.stop();
    }
    await tracker?.stop();
  });

  const twin = async () => {
    const s = await client.summary();
    return { agents: s.agents.filter((a) => a.name === "twin"), boards: s.boards.filter((b) => b.key === "twin").map((b) => b.id) };
  };

  it("refuses the second live agent, naming where the first attached from, and the first keeps its boards and sessions", async () => {
    const first = await startAgentProcess(tracker.address, ["cpu:key=twin,name=a"], ["--name", "twin"], { env: { KFARM_LOG: "warn" } });
    agents.push(first);
    await waitFor("the first agent's board", async () => (await twin()).boards.length === 1);
    const {
      agents: [holder],
    } = await twin();
    const session = await client.request("twin");
    try {
      const second = await startAgentProcess(tracker.address, ["cpu:key=twin,name=b"], ["--name", "twin"], { env: { KFARM_LOG: "warn" } });
      agents.push(second);
      // The second says why, once, though it tries again every 2 s; the tracker refuses each try.
      await waitFor("the tracker refusing the second agent twice", () => [...tracker.stderr().matchAll(IN_USE)].length >= 2, 15_000);
      const said = [...second.stderr().matchAll(IN_USE)];
      assert.equal(said.length, 1, second.stderr());
      assert.equal(said[0]![1], holder!.peer, "it names where the first agent attached from");
      assert.match(second.stderr(), /the tracker refused this agent: agent name .* this one takes the name when that agent leaves; retrying every 2 s/);

      const now = await twin();
      assert.deepEqual(
        now.agents.map((a) => [a.id, a.attached_at_ms]),
        [[holder!.id, holder!.attached_at_ms]],
        "the first agent was never evicted",
      );
      assert.deepEqual(now.boards, ["twin/a"]);
      assert.doesNotMatch(first.stderr(), /lost the tracker/);
      // The session on the first agent's board lived through the second's tries.
      const files = await session.listdir();
      assert.ok(Array.isArray(files));
    } finally {
      await session.close();
    }
  });

  it("lets a newcomer replace an agent that no longer answers, which is then refused in turn", async () => {
    const [first] = agents as [AgentProcess, AgentProcess];
    // Frozen: its connection stays open, it answers nothing (a hung host, a partition).
    first.proc.kill("SIGSTOP");
    await waitFor(
      "the second agent taking the name",
      async () => {
        const t = await twin();
        return t.boards.length === 1 && t.boards[0] === "twin/b";
      },
      15_000,
    );
    assert.match(tracker.stderr(), /agent lost: agent twin did not answer within 1000 ms, and a new agent of that name attached from /);
    const {
      agents: [holder],
    } = await twin();
    // Thawed, the first finds its link gone, dials again and is refused: it does not take the name back.
    first.proc.kill("SIGCONT");
    await waitFor("the thawed agent being refused", () => [...first.stderr().matchAll(IN_USE)].some((m) => m[1] === holder!.peer), 15_000);
    const now = await twin();
    assert.deepEqual(
      now.agents.map((a) => a.id),
      [holder!.id],
      "the newcomer keeps the name",
    );
  });
});
