import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { WORKER_MAX_PENDING_REQUESTS, type WorkerToAgent } from "../../protos/index.ts";
import { AgentRequests } from "./agent-requests.ts";

const keep = (id: number): WorkerToAgent => ({ store_keep: { id, name: `f${id}`, sha256: "" } });

describe("a worker's requests to its agent", () => {
  it("never has more than the agent's limit unanswered: the rest go out as answers come, each to its own caller", async () => {
    const sent: number[] = [];
    const r = new AgentRequests((m) => sent.push(m.store_keep!.id!));
    const answers = Array.from({ length: WORKER_MAX_PENDING_REQUESTS + 2 }, () => r.ask(keep));
    assert.deepEqual(sent, [0, 1, 2, 3].slice(0, WORKER_MAX_PENDING_REQUESTS));
    r.answered(1, { store_kept: { id: 1 } });
    assert.equal(sent.length, WORKER_MAX_PENDING_REQUESTS + 1, "one answer, one more request out");
    r.answered(99, { store_kept: { id: 99 } });
    assert.equal(sent.length, WORKER_MAX_PENDING_REQUESTS + 1, "an id never asked frees nothing");
    for (const id of [0, 2, 3, 4, 5]) r.answered(id, { store_kept: { id } });
    const got = await Promise.all(answers);
    assert.deepEqual(
      got.map((m) => m.store_kept!.id),
      [0, 1, 2, 3, 4, 5],
    );
  });

  it("settles once every request is answered, or after its bound when the agent stays silent", async () => {
    const r = new AgentRequests(() => {});
    await r.settled(10_000); // nothing asked: at once
    void r.ask(keep);
    let settled = false;
    const done = r.settled(10_000).then(() => (settled = true));
    await new Promise((resolve) => setImmediate(resolve));
    assert.equal(settled, false);
    r.answered(0, { store_kept: { id: 0 } });
    await done;
    void r.ask(keep);
    await r.settled(1); // never answered: the bound
  });
});
