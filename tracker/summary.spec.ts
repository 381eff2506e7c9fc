/**
 * The Summary reply the tracker sends (SummaryEncoder: each board's encoding
 * kept until its facts change) decodes, at a client, to exactly what a plain
 * encoding of buildSummary() gives — before and after every kind of change a
 * board goes through.
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { HostService, fromWireMessage, toWireMessage } from "../protos/index.ts";
import { newBoard, Registry, type BoardLease, type TvmAgent } from "./registry.ts";
import type { Scheduler } from "./scheduler.ts";
import { SummaryEncoder, buildSummary, formatSummary } from "./summary.ts";
import type { SummaryReply__Output } from "../protos/index.ts";

const method = (HostService as unknown as { service: { Summary: { responseSerialize(v: unknown): Buffer; responseDeserialize(b: Buffer): unknown } } }).service
  .Summary;
const scheduler = { pendingOf: (key: string) => (key === "b" ? 2 : 0), queuedKeys: () => ["b", "waiting"] } as unknown as Scheduler;
const STARTED = Date.now();

let attaches = 0;
function agent(name: string, boards: Array<{ name: string; key: string }>): TvmAgent {
  const a: TvmAgent = {
    protocol: "tvm",
    control: { assign: () => {}, openRelay: () => {}, end: () => {} },
    id: `${name}#${++attaches}`,
    name,
    peer: "127.0.0.1:1",
    attachedAt: 1,
    lastSeen: 1,
    boards: new Map(),
    data: undefined,
  };
  for (const b of boards) {
    a.boards.set(b.name, newBoard(a, { id: `${name}/${b.name}`, name: b.name, key: b.key, kind: "cpu", labels: { rack: "r1" }, capabilities: { cores: "2" } }));
  }
  return a;
}

/** What a client decodes from the encoder's reply, and from a plain encoding of buildSummary(). Uptime differs by the call's time: zeroed. */
function both(encoder: SummaryEncoder, registry: Registry, key = ""): [unknown, unknown] {
  const decode = (reply: object) => ({ ...(method.responseDeserialize(method.responseSerialize(reply)) as object), uptime_ms: 0 });
  return [
    decode(encoder.encode(registry, scheduler, STARTED, key)),
    decode(toWireMessage("farm.v1.SummaryReply", buildSummary(registry, scheduler, STARTED, key))),
  ];
}

describe("the Summary reply", () => {
  it("decodes like a plain encoding, through every change of a board", () => {
    const registry = new Registry();
    const encoder = new SummaryEncoder();
    const x = agent("x", [
      { name: "b1", key: "a" },
      { name: "b0", key: "b" },
    ]);
    registry.add(x);
    registry.add(agent("w", [{ name: "c", key: "a" }]));
    const check = (what: string) => {
      for (const key of ["", "a", "b", "none"]) {
        const [encoded, plain] = both(encoder, registry, key);
        assert.deepEqual(encoded, plain, `${what}, key "${key}"`);
      }
    };
    check("attached");
    const b0 = x.boards.get("b0")!;
    const b1 = x.boards.get("b1")!;
    registry.setReady(b0, true);
    check("ready");
    b0.lease = { id: "s1-aaa", clientId: "alice", lane: undefined } as unknown as BoardLease;
    check("leased");
    (b0.lease as { lane: string }).lane = "direct";
    check("its lane opened");
    b0.lease = undefined;
    check("released");
    b1.drain = "drained by bob: fan";
    check("drained");
    b1.drain = "";
    b1.health.apply({ kind: "canary_failed", reason: "sum was 3" });
    check("suspect");
    b1.health.apply({ kind: "canary_passed", detail: "ok", kernelNs: 1000 }, { maxCanaryDrift: 1.25 });
    check("a timed canary");
    b1.health.apply({ kind: "canary_passed", detail: "ok", kernelNs: 1200 }, { maxCanaryDrift: 1.25 });
    check("another one");
    b1.labels = { rack: "r2", bitstream: "abc" };
    check("new labels");
    registry.add(agent("a", [{ name: "first", key: "b" }]));
    check("another agent");
    assert.equal(registry.remove(x), true);
    check("an agent left");
    const decoded = both(encoder, registry)[0] as { boards: Array<{ id: string }>; queues: unknown[] };
    assert.deepEqual(
      decoded.boards.map((b) => b.id),
      ["a/first", "w/c"],
    );
    assert.deepEqual(decoded.queues, [
      { key: "a", total: 1, free: 0, pending: 0 },
      { key: "b", total: 1, free: 0, pending: 2 },
      { key: "waiting", total: 0, free: 0, pending: 0 },
    ]);
  });

  it("as a table, fits the width it is given: long reasons cut with an ellipsis, board ids whole, a line saying so", () => {
    const registry = new Registry();
    registry.add(agent("rack-a-host-17", [{ name: "cpu0", key: "cpu" }]));
    const board = [...registry.boardsById()][0]!;
    const reason = `fan failing: ${"the left fan spins at 900 rpm ".repeat(8)}`;
    board.health.apply({ kind: "canary_failed", reason });
    const wire = method.responseDeserialize(
      method.responseSerialize(toWireMessage("farm.v1.SummaryReply", buildSummary(registry, scheduler, STARTED, "", true))),
    );
    const summary: SummaryReply__Output = fromWireMessage("farm.v1.SummaryReply", wire as never, "the summary", "PROTOCOL_ERROR");
    const whole = formatSummary(summary, "127.0.0.1:9190");
    assert.ok(whole.includes(reason.trimEnd()), "no width: every cell whole");
    assert.ok(Math.max(...whole.split("\n").map((l) => l.length)) > 200);
    for (const width of [100, 80, 40, 12]) {
      const text = formatSummary(summary, "127.0.0.1:9190", { width });
      const long = text.split("\n").filter((l) => l.length > width);
      assert.deepEqual(long, [], `width ${width}`);
      assert.match(text, /…/);
      assert.match(text, new RegExp(`\\(cells cut to fit ${width} columns`.slice(0, width)));
    }
    const at80 = formatSummary(summary, "127.0.0.1:9190", { width: 80 });
    assert.match(at80, /\nrack-a-host-17\/cpu0 +cpu +cpu +starting +suspect: ca[a-z ]*… +- /, "identity columns whole; the reason cut");
  });
});
