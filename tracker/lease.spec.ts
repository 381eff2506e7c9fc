/**
 * tracker/lease.ts as the machine's shell (the machine's own specs are in
 * lease-machine.spec.ts): its timers are real ones on node:test's mock clock,
 * its streams fakes that record what is written, so these check the wiring —
 * that what a stream does reaches the machine, and that the effects reach
 * the streams.
 */
import assert from "node:assert/strict";
import { EventEmitter } from "node:events";
import { afterEach, beforeEach, describe, it, mock } from "node:test";
import { CLEAN_END_FRAME, decodeBoardFrame, FarmError, type Route } from "../protos/index.ts";
import { Lease, type SessionStream } from "./lease.ts";

/** A Session or ServeSession stream: records writes, its end and the error status it was given. */
class FakeStream extends EventEmitter {
  readonly written: Buffer[] = [];
  destroyed = false;
  writableEnded = false;
  status: unknown;

  constructor() {
    super();
    // The shell gives a stream its status as an "error" event; a listener of its own keeps it.
    this.on("error", (err: unknown) => {
      this.status = err;
      this.writableEnded = true;
    });
  }

  write(chunk: Buffer): boolean {
    this.written.push(chunk);
    return true;
  }

  end(): void {
    this.writableEnded = true;
  }

  // The relay pauses a side whose peer is full; the fakes never are.
  pause(): void {
    // nothing to pause
  }
  resume(): void {
    // nothing to resume
  }

  get asStream(): SessionStream {
    return this as unknown as SessionStream;
  }

  /** What the written board frames were: grant, or end with its code ("OK": clean). */
  frames(): string[] {
    return this.written.map((b) => {
      const f = decodeBoardFrame(b);
      if (f.grant) return "grant";
      return `end ${f.end?.reason?.code ?? "OK"}`;
    });
  }
}

const GRANT = { session_id: "s1", route: "grpc" as const, ticket: "t" };

function lease(route: Route): { lease: Lease; ended: Lease[] } {
  const ended: Lease[] = [];
  const l = new Lease(
    "s1",
    "t",
    { id: "b1", agent: { control: {} } },
    "c",
    undefined,
    route,
    { openTimeoutMs: 10_000, sessionTimeoutMs: 60_000, endGraceMs: 1000 },
    (x) => ended.push(x),
  );
  return { lease: l, ended };
}

describe("Lease: the shell around the lease machine", () => {
  beforeEach(() => mock.timers.enable({ apis: ["setTimeout"] }));
  afterEach(() => mock.timers.reset());

  it("its open timer is a real one: at 10 s the host gets grant then end CANCELLED, and the board goes back once", () => {
    const { lease: l, ended } = lease("relay");
    const host = new FakeStream();
    l.grant(host.asStream, GRANT);
    mock.timers.tick(9999);
    assert.equal(l.state, "granted");
    mock.timers.tick(1);
    assert.equal(l.state, "ended");
    assert.equal(l.reason?.code, "CANCELLED");
    assert.deepEqual(host.frames(), ["grant", "end CANCELLED"]);
    assert.ok(host.status, "the stream ends with the reason as its status");
    assert.deepEqual(ended, [l]);
    assert.ok(l.endedAt > 0);
  });

  it("grpc: the relay's clean end frame ends it cleanly; the streams' closes that follow change nothing", () => {
    const { lease: l, ended } = lease("grpc");
    const host = new FakeStream();
    const worker = new FakeStream();
    const seen: string[] = [];
    l.whenActive(() => seen.push("active"));
    l.whenEnded(() => seen.push(`ended ${l.reason?.code ?? "OK"}`));
    l.grant(host.asStream, GRANT);
    l.attachWorkerStream(worker.asStream);
    assert.equal(l.lane, "grpc");
    worker.emit("data", Buffer.from("answer"));
    worker.emit("data", Buffer.from(CLEAN_END_FRAME));
    assert.equal(l.state, "ended");
    assert.equal(l.reason, null);
    // What the worker sent before its end was relayed, its end frame was not: the tracker's own end is the host's last message.
    assert.deepEqual(host.written.map((b) => b.toString()).slice(1, 2), ["answer"]);
    host.written.splice(1, 1);
    assert.deepEqual(host.frames(), ["grant", "end OK"]);
    assert.ok(host.writableEnded && worker.writableEnded);
    worker.emit("cancelled");
    host.emit("cancelled");
    mock.timers.tick(120_000);
    assert.deepEqual(seen, ["active", "ended OK"]);
    assert.deepEqual(ended, [l]);
  });

  it("a worker stream that breaks arms the grace; the agent's report inside it is the reason, and the grace fires no second end", () => {
    const { lease: l, ended } = lease("grpc");
    l.grant(new FakeStream().asStream, GRANT);
    const worker = new FakeStream();
    l.attachWorkerStream(worker.asStream);
    worker.emit("cancelled");
    mock.timers.tick(999);
    assert.equal(l.state, "active");
    l.end(new FarmError("TIMEOUT", "run() exceeded its limit"));
    mock.timers.tick(10_000);
    assert.equal(l.reason?.code, "TIMEOUT");
    assert.deepEqual(ended, [l]);
  });

  for (const how of ["end", "cancelled", "error"]) {
    it(`a worker stream that ${how === "end" ? "half-closes" : `says ${how}`} and a silent agent: RUNTIME_CRASH after the grace`, () => {
      const { lease: l } = lease("grpc");
      l.grant(new FakeStream().asStream, GRANT);
      const worker = new FakeStream();
      l.attachWorkerStream(worker.asStream);
      worker.emit(how);
      mock.timers.tick(999);
      assert.equal(l.state, "active");
      mock.timers.tick(1);
      assert.equal(l.reason?.code, "RUNTIME_CRASH");
    });
  }

  it("an end disarms the timers it armed (they would hold the lease for its whole session timeout)", () => {
    const { lease: l } = lease("grpc");
    const cleared = mock.method(globalThis, "clearTimeout");
    l.end(null);
    assert.equal(cleared.mock.callCount(), 2, "the open and the session timer");
    cleared.mock.restore();
  });

  it("the host's stream breaking is the host leaving: CANCELLED", () => {
    const { lease: l } = lease("direct");
    const host = new FakeStream();
    l.grant(host.asStream, GRANT);
    l.opened("direct");
    host.emit("cancelled");
    assert.deepEqual([l.state, l.reason?.code, l.lane], ["ended", "CANCELLED", "direct"]);
  });

  it("a refusal of the machine is thrown to the caller and changes nothing", () => {
    const { lease: l } = lease("relay");
    assert.throws(
      () => l.attachWorkerStream(new FakeStream().asStream),
      (e: unknown) => e instanceof FarmError && e.code === "PROTOCOL_ERROR",
    );
    const g = lease("grpc").lease;
    assert.throws(
      () => g.checkSocket("host"),
      (e: unknown) => e instanceof FarmError && e.code === "PROTOCOL_ERROR",
    );
    assert.equal(l.state, "granted");
    l.end(null);
    g.end(null);
  });
});
