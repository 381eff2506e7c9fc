/** RequestQueue serving order (priority, fairness across clients, FIFO) and label selectors. */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { labelsMatch, RequestQueue, type Fairness, type PendingRequest } from "./queue.ts";

interface Req extends PendingRequest {
  readonly tag: string;
}

let seq = 0;
function req(tag: string, opts: { priority?: number; clientId?: string; labels?: Record<string, string>; fairness?: Fairness } = {}): Req {
  return {
    tag,
    seq: seq++,
    key: "cpu",
    priority: opts.priority ?? 1,
    labels: opts.labels ?? {},
    clientId: opts.clientId ?? "c",
    fairness: opts.fairness ?? "per-client",
    enqueuedAt: Date.now(),
  };
}

/** Takes every request, one by one, in serving order. */
function drain(q: RequestQueue<Req>): string[] {
  const out: string[] = [];
  for (let r = q.take(() => true); r; r = q.take(() => true)) out.push(r.tag);
  return out;
}

describe("RequestQueue", () => {
  it("serves higher priority first", () => {
    const q = new RequestQueue<Req>();
    q.push(req("low", { priority: 1, clientId: "a" }));
    q.push(req("high", { priority: 10, clientId: "b" }));
    q.push(req("mid", { priority: 5, clientId: "c" }));
    q.push(req("neg", { priority: -3, clientId: "d" }));
    assert.deepEqual(
      q.ordered().map((r) => r.tag),
      ["high", "mid", "low", "neg"],
    );
    assert.deepEqual(drain(q), ["high", "mid", "low", "neg"]);
    assert.equal(q.size, 0);
  });

  it("is FIFO within a priority for one client", () => {
    const q = new RequestQueue<Req>();
    for (const t of ["r0", "r1", "r2", "r3"]) q.push(req(t, { clientId: "solo" }));
    assert.deepEqual(drain(q), ["r0", "r1", "r2", "r3"]);
  });

  it("is FIFO within a priority across clients never served", () => {
    const q = new RequestQueue<Req>();
    q.push(req("x", { clientId: "x" }));
    q.push(req("y", { clientId: "y" }));
    q.push(req("z", { clientId: "z" }));
    assert.deepEqual(
      q.ordered().map((r) => r.tag),
      ["x", "y", "z"],
    );
  });

  it("is fair across clients within a priority: a late client with one request is served second, not sixth", () => {
    const q = new RequestQueue<Req>();
    for (let i = 0; i < 5; i++) q.push(req(`busy${i}`, { clientId: "busy" }));
    q.push(req("late", { clientId: "late" }));
    assert.deepEqual(drain(q), ["busy0", "late", "busy1", "busy2", "busy3", "busy4"]);
  });

  it("round-robins between clients that keep requesting", () => {
    const q = new RequestQueue<Req>();
    for (let i = 0; i < 3; i++) q.push(req(`a${i}`, { clientId: "a" }));
    for (let i = 0; i < 3; i++) q.push(req(`b${i}`, { clientId: "b" }));
    assert.deepEqual(drain(q), ["a0", "b0", "a1", "b1", "a2", "b2"]);
  });

  it("fifo fairness serves equal priorities in arrival order, as TVM's tracker does: X1 X2 X3 then Y1 Y2 are served so", () => {
    const q = new RequestQueue<Req>();
    for (const t of ["X1", "X2", "X3"]) q.push(req(t, { clientId: "x", fairness: "fifo" }));
    assert.equal(q.take(() => true)?.tag, "X1");
    for (const t of ["Y1", "Y2"]) q.push(req(t, { clientId: "y", fairness: "fifo" }));
    assert.deepEqual(drain(q), ["X2", "X3", "Y1", "Y2"]);
    // The same arrivals with per-client fairness: Y is served between X's.
    for (const t of ["X1", "X2", "X3"]) q.push(req(t, { clientId: "x" }));
    assert.equal(q.take(() => true)?.tag, "X1");
    for (const t of ["Y1", "Y2"]) q.push(req(t, { clientId: "y" }));
    assert.deepEqual(drain(q), ["Y1", "X2", "Y2", "X3"]);
  });

  it("fifo fairness still serves higher priority first", () => {
    const q = new RequestQueue<Req>();
    q.push(req("low", { priority: 1, fairness: "fifo" }));
    q.push(req("high", { priority: 9, fairness: "fifo" }));
    assert.deepEqual(drain(q), ["high", "low"]);
  });

  it("fairness never overrides priority", () => {
    const q = new RequestQueue<Req>();
    q.push(req("a-high-0", { priority: 5, clientId: "a" }));
    q.push(req("a-high-1", { priority: 5, clientId: "a" }));
    q.push(req("b-low", { priority: 1, clientId: "b" }));
    assert.deepEqual(drain(q), ["a-high-0", "a-high-1", "b-low"]);
  });

  it("take() skips requests the board does not fit and leaves them queued", () => {
    const q = new RequestQueue<Req>();
    const first = req("wants-zone-b", { labels: { zone: "b" }, clientId: "a" });
    const second = req("any", { clientId: "b" });
    q.push(first);
    q.push(second);
    const taken = q.take((r) => labelsMatch(r.labels, { zone: "a" }));
    assert.equal(taken, second);
    assert.equal(q.size, 1);
    assert.deepEqual(q.all(), [first]);
    assert.equal(
      q.take((r) => labelsMatch(r.labels, { zone: "a" })),
      undefined,
    );
    assert.equal(q.size, 1);
  });

  it("remove() drops a request once and reports whether it was there", () => {
    const q = new RequestQueue<Req>();
    const a = req("a");
    const b = req("b");
    q.push(a);
    q.push(b);
    assert.equal(q.remove(a), true);
    assert.equal(q.remove(a), false);
    assert.deepEqual(
      q.all().map((r) => r.tag),
      ["b"],
    );
    assert.equal(q.size, 1);
  });
});

describe("labelsMatch", () => {
  it("an empty selector matches any board", () => {
    assert.equal(labelsMatch({}, {}), true);
    assert.equal(labelsMatch({}, { zone: "a" }), true);
  });

  it("every selector label must be present with the same value", () => {
    const board = { zone: "a", arch: "x86_64" };
    assert.equal(labelsMatch({ zone: "a" }, board), true);
    assert.equal(labelsMatch({ zone: "a", arch: "x86_64" }, board), true);
    assert.equal(labelsMatch({ zone: "b" }, board), false);
    assert.equal(labelsMatch({ zone: "a", gpu: "h100" }, board), false);
    assert.equal(labelsMatch({ zone: "" }, board), false);
  });

  it("extra board labels do not matter, case does", () => {
    assert.equal(labelsMatch({ zone: "A" }, { zone: "a" }), false);
    assert.equal(labelsMatch({ Zone: "a" }, { zone: "a" }), false);
  });
});
