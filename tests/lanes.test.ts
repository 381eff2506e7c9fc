/**
 * Session lanes (docs/architecture.md, "Lanes") against real tracker and
 * agent processes: which lane a session gets, and what bad input gets —
 * forged, reused, expired and foreign tickets, garbage before the handshake,
 * a direct address that refuses or black-holes, a worker or an agent killed
 * while a direct lane is open, a lane cut mid-upload.
 */
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { createServer, connect, type Server, type Socket } from "node:net";
import { after, before, describe, it } from "node:test";
import { FarmError, decodeBoardFrame, encodeHostFrame } from "../protos/index.ts";
import { TicketSigner, parseAddress, readClaims } from "../runtime/index.ts";
import { connectTracker, type TrackerClient } from "../host-sdk/index.ts";
import { rawHello, rawSession, type RawSession } from "./helpers/raw-session.ts";
import { startAgentProcess, startFarm, startTrackerProcess, waitFor, waitForFreeBoards, type AgentProcess, type TrackerProcess } from "./helpers/processes.ts";

const host = (address: string) => parseAddress(address).host;

/** The board's lane as the tracker's summary shows it while the session is open. */
async function laneInSummary(client: TrackerClient, sessionId: string): Promise<string> {
  const s = await client.summary();
  return s.boards.find((b) => b.session_id === sessionId)?.session_lane ?? "(no such session)";
}

describe("session lanes", () => {
  let farm: Awaited<ReturnType<typeof startFarm>>;
  before(async () => {
    farm = await startFarm(["cpu:key=cpu"]);
  });
  after(() => farm.stop());

  for (const route of ["direct", "relay", "grpc"] as const) {
    it(`route ${route}: the session gets that lane, and the summary shows it`, async () => {
      const s = await farm.client.request("cpu", { route });
      try {
        assert.equal(s.lane, route);
        await s.upload(Buffer.from("x"), "x.bin");
        assert.equal(await laneInSummary(farm.client, s.id), route);
      } finally {
        await s.close();
      }
    });
  }

  it("auto takes the direct lane where the agent serves one", async () => {
    const s = await farm.client.request("cpu", { route: "auto" });
    assert.equal(s.lane, "direct");
    assert.equal(s.laneNote, undefined);
    await s.close();
  });

  for (const door of ["the agent's data port", "the worker's standby lane"] as const) {
    it(`refuses a forged, a reused, an expired and a foreign ticket at ${door}, and the session goes on`, async () => {
      const raw = await rawSession(farm.tracker.address, { key: "cpu", route: "direct" });
      const address = door === "the agent's data port" ? raw.grant.direct_address : raw.grant.worker_address;
      assert.notEqual(address, "", `the grant names ${door}`);
      const [dHost, dPort] = [host(address), parseAddress(address).port];
      try {
        const forged = await rawHello(dHost, dPort, { session_id: raw.grant.session_id, ticket: "f".repeat(32), role: "host" });
        assert.equal(forged.error?.code, "PERMISSION_DENIED");
        assert.match(forged.error!.message, /wrong ticket/);
        const real = await rawHello(dHost, dPort, { session_id: raw.grant.session_id, ticket: raw.grant.ticket, role: "host" });
        assert.equal(real.error, undefined);
        const reused = await rawHello(dHost, dPort, { session_id: raw.grant.session_id, ticket: raw.grant.ticket, role: "host" });
        assert.equal(reused.error?.code, "PERMISSION_DENIED");
        assert.match(reused.error!.message, /ticket is used/);
        const foreign = await rawHello(dHost, dPort, { session_id: "s999-000000", ticket: raw.grant.ticket, role: "host" });
        assert.equal(foreign.error?.code, "NOT_FOUND");
        // The real lane still answers: a listdir on it.
        real.lane.send(encodeHostFrame({ id: 1, listdir: {} }));
        const reply = await new Promise<Buffer>((resolve) => real.lane.onFrame(resolve));
        assert.deepEqual(decodeBoardFrame(reply).listing?.entries, []);
        // Closed cleanly, and the board free again before the stream goes: the session's worker lives on (a cancel
        // racing the worker's report could kill it), so the expired ticket below meets the same door, open.
        real.lane.send(encodeHostFrame({ id: 2, close: {} }));
        await new Promise((resolve) => real.lane.onClose(resolve));
        await waitForFreeBoards(farm.client, 1);
      } finally {
        raw.close();
      }
      await waitForFreeBoards(farm.client, 1);
      // The session is over: its ticket, shown again while it is still in date, opens nothing.
      const replayed = await rawHello(dHost, dPort, { session_id: raw.grant.session_id, ticket: raw.grant.ticket, role: "host" });
      assert.equal(replayed.error?.code, "PERMISSION_DENIED");
      assert.match(replayed.error!.message, /had its lane here already; its ticket is used/);
    });
  }

  it("the grant names the standby lane of the worker that takes the session, a port of its own, and the SDK opens the session there", async () => {
    const raw = await rawSession(farm.tracker.address, { key: "cpu", route: "auto" });
    try {
      assert.notEqual(raw.grant.worker_address, "");
      assert.equal(host(raw.grant.worker_address), host(raw.grant.direct_address));
      assert.notEqual(parseAddress(raw.grant.worker_address).port, parseAddress(raw.grant.direct_address).port);
      // The worker itself answers there: the lane's first call reports its pid, the one the pool runs for the board.
      const lane = await rawHello(host(raw.grant.worker_address), parseAddress(raw.grant.worker_address).port, {
        session_id: raw.grant.session_id,
        ticket: raw.grant.ticket,
        role: "host",
      });
      assert.equal(lane.error, undefined);
      lane.lane.send(encodeHostFrame({ id: 1, stats: {} }));
      const stats = decodeBoardFrame(await new Promise<Buffer>((resolve) => lane.lane.onFrame(resolve))).stats;
      assert.ok(Number(stats?.info.worker_pid) > 0);
      lane.lane.fail(new FarmError("CANCELLED", "done"));
    } finally {
      raw.close();
    }
    await waitForFreeBoards(farm.client, 1);
  });

  it("a standby lane whose worker died: the host falls back to the agent's data port, and the session is served", async () => {
    const s0 = await farm.client.request("cpu");
    const pid = Number((await s0.stats()).info.worker_pid);
    await s0.close();
    await waitForFreeBoards(farm.client, 1);
    // The board's next worker is the same one (a session without a module leaves it reusable): kill it while idle.
    // The tracker still holds its standby lane, and hears of no other until the next worker is ready.
    process.kill(pid, "SIGKILL");
    await waitFor("the agent to see its idle worker die", async () => (await farm.client.summary()).boards[0]?.last_error.includes(`${pid} killed by SIGKILL`));
    const s = await farm.client.request("cpu", { route: "direct" });
    try {
      assert.equal(s.lane, "direct");
      assert.notEqual(Number((await s.stats()).info.worker_pid), pid);
      assert.deepEqual(await s.listdir(), []);
    } finally {
      await s.close();
    }
  });

  it("refuses forged and reused tickets on the tracker's data port", async () => {
    const raw = await rawSession(farm.tracker.address, { key: "cpu", route: "relay" });
    try {
      const forged = await rawHello(host(farm.tracker.address), raw.grant.relay_port, {
        session_id: raw.grant.session_id,
        ticket: "0".repeat(32),
        role: "host",
      });
      assert.equal(forged.error?.code, "PERMISSION_DENIED");
      const real = await rawHello(host(farm.tracker.address), raw.grant.relay_port, {
        session_id: raw.grant.session_id,
        ticket: raw.grant.ticket,
        role: "host",
      });
      assert.equal(real.error, undefined);
      const reused = await rawHello(host(farm.tracker.address), raw.grant.relay_port, {
        session_id: raw.grant.session_id,
        ticket: raw.grant.ticket,
        role: "host",
      });
      assert.equal(reused.error?.code, "PERMISSION_DENIED");
      assert.match(reused.error!.message, /ticket is used/);
      real.lane.fail(new FarmError("CANCELLED", "done"));
    } finally {
      raw.close();
    }
    await waitForFreeBoards(farm.client, 1);
  });

  it("garbage before the handshake is refused at every door, and the farm goes on", async () => {
    // A granted session whose lane is not open yet: its worker's standby lane listens.
    const raw = await rawSession(farm.tracker.address, { key: "cpu", route: "direct" });
    try {
      for (const port of [farm.tracker.dataPort, parseAddress(raw.grant.direct_address).port, parseAddress(raw.grant.worker_address).port]) {
        const socket = connect({ host: "127.0.0.1", port });
        await new Promise((resolve) => socket.once("connect", resolve));
        // A length of 3 GiB, then noise: over the hello's limit at once.
        socket.write(Buffer.from([0xc0, 0, 0, 0, 1, 2, 3, 4]));
        await new Promise((resolve) =>
          socket
            .once("close", resolve)
            .on("error", () => {})
            .resume(),
        );
      }
      // The session still opens at the worker's door.
      const lane = await rawHello(host(raw.grant.worker_address), parseAddress(raw.grant.worker_address).port, {
        session_id: raw.grant.session_id,
        ticket: raw.grant.ticket,
        role: "host",
      });
      assert.equal(lane.error, undefined);
      lane.lane.fail(new FarmError("CANCELLED", "done"));
    } finally {
      raw.close();
    }
    await waitForFreeBoards(farm.client, 1);
    const again = await farm.client.request("cpu");
    assert.equal(again.lane, "direct");
    await again.listdir();
    await again.close();
  });

  it("a worker killed while a direct lane is open: the host sees RUNTIME_CRASH, the board returns", async () => {
    const s = await farm.client.request("cpu", { route: "direct" });
    const pid = Number((await s.stats()).info.worker_pid);
    process.kill(pid, "SIGKILL");
    await assert.rejects(s.listdir(), (e: FarmError) => e.code === "RUNTIME_CRASH" && /SIGKILL/.test(e.message));
    await waitForFreeBoards(farm.client, 1);
  });

  it("a lane cut mid-upload: the session ends, nothing of the upload is kept", { timeout: 30_000 }, async () => {
    const raw = await rawSession(farm.tracker.address, { key: "cpu", route: "direct" });
    const lane = await rawHello(host(raw.grant.direct_address), parseAddress(raw.grant.direct_address).port, {
      session_id: raw.grant.session_id,
      ticket: raw.grant.ticket,
      role: "host",
    });
    const half = Buffer.alloc(1 << 20, 7);
    const whole = Buffer.concat([half, half]);
    const sha256 = createHash("sha256").update(whole).digest("hex");
    lane.lane.send(encodeHostFrame({ id: 1, upload: { name: "cut.bin", total_bytes: whole.length, data: half, done: false, sha256 } }));
    await new Promise((resolve) => setImmediate(resolve));
    lane.lane.socket.destroy();
    const end = await new Promise<FarmError>((resolve) => raw.stream.on("error", (err) => resolve(FarmError.from(err))));
    assert.equal(end.code, "CANCELLED");
    raw.close();
    await waitForFreeBoards(farm.client, 1);
    const s = await farm.client.request("cpu");
    try {
      assert.deepEqual(await s.listdir(), []);
      // Not kept under its digest either: a probe finds nothing.
      await assert.rejects(
        s.request({ upload: { name: "cut.bin", total_bytes: whole.length, data: new Uint8Array(0), done: true, sha256, probe: true } }),
        (e: FarmError) => e.code === "NOT_FOUND",
      );
    } finally {
      await s.close();
    }
  });
});

describe("a direct lane hosts cannot reach", () => {
  let tracker: TrackerProcess;
  let client: TrackerClient;
  let hole: Server;
  const held: Socket[] = [];
  let refusing: AgentProcess;
  let holing: AgentProcess;

  before(async () => {
    tracker = await startTrackerProcess();
    // A black hole: it takes connections and never answers.
    hole = createServer((s) => held.push(s.on("error", () => {}))).listen(0, "127.0.0.1");
    await new Promise((resolve) => hole.once("listening", resolve));
    const holePort = (hole.address() as { port: number }).port;
    refusing = await startAgentProcess(tracker.address, ["cpu:key=refused"], ["--data-advertise", "127.0.0.1:1"]);
    holing = await startAgentProcess(tracker.address, ["cpu:key=holed"], ["--data-advertise", `127.0.0.1:${holePort}`]);
    client = await connectTracker(tracker.address);
    await waitForFreeBoards(client, 2);
  });
  after(async () => {
    client.close();
    for (const s of held) s.destroy();
    hole.close();
    await refusing.stop();
    await holing.stop();
    await tracker.stop();
  });

  it("auto falls back to the relay when the direct address refuses, and says so", async () => {
    const s = await client.request("refused");
    try {
      assert.equal(s.lane, "relay");
      assert.match(s.laneNote ?? "", /direct lane to 127\.0\.0\.1:1 failed .*fell back to the tracker's relay/);
      await s.listdir();
    } finally {
      await s.close();
    }
  });

  it("auto falls back within its bound when the direct address black-holes", async () => {
    const t0 = performance.now();
    const s = await client.request("holed", { directTimeoutMs: 300 });
    const took = performance.now() - t0;
    try {
      assert.equal(s.lane, "relay");
      assert.match(s.laneNote ?? "", /no welcome within|did not answer within/);
      assert.ok(took < 3000, `the fallback took ${took.toFixed(0)} ms`);
      await s.listdir();
    } finally {
      await s.close();
    }
  });

  it("route direct fails with the address when it cannot be reached, and the board returns at once", async () => {
    await assert.rejects(client.request("refused", { route: "direct" }), (e: FarmError) => e.code === "UNAVAILABLE" && /127\.0\.0\.1:1/.test(e.message));
    await waitFor("the board back", async () => (await client.summary()).boards.some((b) => b.key === "refused" && b.state === "free"), 3000);
  });
});

describe("an agent killed while a direct lane is open", () => {
  it("the host sees AGENT_LOST within 3 s", async () => {
    const farm = await startFarm(["cpu:key=cpu"]);
    try {
      const s = await farm.client.request("cpu", { route: "direct" });
      await s.listdir();
      const t0 = Date.now();
      farm.agent.proc.kill("SIGKILL");
      await waitFor("the session's end", () => s.isClosed, 3000);
      assert.equal(s.closedReason?.code, "AGENT_LOST");
      assert.ok(Date.now() - t0 < 3000, `AGENT_LOST took ${Date.now() - t0} ms`);
    } finally {
      await farm.stop();
    }
  });
});

/**
 * The worker's door alone (docs/architecture.md, "Tickets"): a worker at its
 * standby lane takes a session by the tracker's signature on its ticket,
 * before its assignment, so it must refuse on its own what the tracker did
 * not sign, a ticket for another worker, one that expired and one used.
 */
describe("tickets at the worker's standby lane, checked by the worker alone", () => {
  let farm: Awaited<ReturnType<typeof startFarm>>;
  before(async () => {
    // Two boards: a worker of each. A short open timeout: a ticket that expires within the test.
    farm = await startFarm(["cpu:key=a", "cpu:key=b"], { trackerArgs: ["--open-timeout-ms", "1500"] });
  });
  after(() => farm.stop());

  /**
   * A session of board `key` opened at its worker's standby lane and closed
   * cleanly: that worker is idle there again (a worker whose session ended
   * before it took it is killed). Its lane's address and the session's grant.
   */
  async function sessionAt(key: string): Promise<{ host: string; port: number; grant: RawSession["grant"] }> {
    const raw = await rawSession(farm.tracker.address, { key, route: "direct" });
    const w = { host: host(raw.grant.worker_address), port: parseAddress(raw.grant.worker_address).port };
    try {
      const opened = await rawHello(w.host, w.port, { session_id: raw.grant.session_id, ticket: raw.grant.ticket, role: "host" });
      assert.equal(opened.error, undefined);
      opened.lane.send(encodeHostFrame({ id: 1, close: {} }));
      await new Promise((resolve) => opened.lane.onClose(resolve));
    } finally {
      raw.close();
    }
    await waitForFreeBoards(farm.client, 2);
    return { ...w, grant: raw.grant };
  }

  it("a ticket it did not sign, a changed one and one signed by another key are refused; the real one opens the session", async () => {
    const raw = await rawSession(farm.tracker.address, { key: "a", route: "direct" });
    try {
      const w = { host: host(raw.grant.worker_address), port: parseAddress(raw.grant.worker_address).port };
      const id = raw.grant.session_id;
      const [payload, signature] = raw.grant.ticket.split(".") as [string, string];
      const claims = readClaims(raw.grant.ticket)!;
      assert.equal(claims.session_id, id, "the ticket says its session");
      assert.notEqual(claims.worker_id, "", "the ticket names the worker whose standby lane the grant names");
      // The same claims signed by a key that is not the tracker's, and the real claims with a longer life under the real signature.
      const otherKey = new TicketSigner().issue({ ...claims });
      const bytes = Buffer.from(payload, "base64url");
      bytes.writeUInt8(bytes.readUInt8(bytes.length - 1) ^ 1, bytes.length - 1);
      const changed = `${bytes.toString("base64url")}.${signature}`;
      for (const ticket of [otherKey, changed]) {
        const refused = await rawHello(w.host, w.port, { session_id: id, ticket, role: "host" });
        // Refused by the signature, or (its assignment came meanwhile) by the ticket it holds.
        assert.equal(refused.error?.code, "PERMISSION_DENIED");
        assert.match(refused.error!.message, /wrong ticket|does not carry this farm's tracker's signature/);
        refused.lane.fail(new FarmError("CANCELLED", "done"));
      }
      const real = await rawHello(w.host, w.port, { session_id: id, ticket: raw.grant.ticket, role: "host" });
      assert.equal(real.error, undefined);
      real.lane.send(encodeHostFrame({ id: 1, listdir: {} }));
      assert.deepEqual(decodeBoardFrame(await new Promise<Buffer>((resolve) => real.lane.onFrame(resolve))).listing?.entries, []);
      real.lane.send(encodeHostFrame({ id: 2, close: {} }));
      await new Promise((resolve) => real.lane.onClose(resolve));
    } finally {
      raw.close();
    }
    await waitForFreeBoards(farm.client, 2);
  });

  it("before any assignment, the worker refuses on its own: forged, for another worker, expired, used", async () => {
    const b = await sessionAt("b");
    // A ticket for board a's worker, shown at board b's: signed by the tracker, for another worker.
    const raw = await rawSession(farm.tracker.address, { key: "a", route: "direct" });
    const forAnother = await rawHello(b.host, b.port, { session_id: raw.grant.session_id, ticket: raw.grant.ticket, role: "host" });
    assert.equal(forAnother.error?.code, "PERMISSION_DENIED");
    assert.match(forAnother.error!.message, /opens another worker's standby lane, not this one/);
    // No session of b's was touched: a's session opens at its own worker, and b still serves.
    const a = { host: host(raw.grant.worker_address), port: parseAddress(raw.grant.worker_address).port };
    const real = await rawHello(a.host, a.port, { session_id: raw.grant.session_id, ticket: raw.grant.ticket, role: "host" });
    assert.equal(real.error, undefined);
    real.lane.send(encodeHostFrame({ id: 2, close: {} }));
    await new Promise((resolve) => real.lane.onClose(resolve));
    raw.close();
    await waitForFreeBoards(farm.client, 2);

    // Forged from scratch: a session id the tracker never granted, with claims for b's worker, signed by another key.
    const bClaims = readClaims(b.grant.ticket)!;
    const forged = new TicketSigner().issue({ ...bClaims, session_id: "s424242-abcdef", expires_ms: Date.now() + 60_000 });
    const f = await rawHello(b.host, b.port, { session_id: "s424242-abcdef", ticket: forged, role: "host" });
    assert.equal(f.error?.code, "PERMISSION_DENIED");
    assert.match(f.error!.message, /does not carry this farm's tracker's signature/);

    // Used, then expired: a session of b's opened at its worker by the ticket and closed. Shown again while in date
    // (the open timeout, 1.5 s), the door remembers it; later the ticket's own time says no.
    const once = await sessionAt("b");
    assert.equal(once.port, b.port, "the same worker takes b's next session");
    const used = await rawHello(b.host, b.port, { session_id: once.grant.session_id, ticket: once.grant.ticket, role: "host" });
    assert.equal(used.error?.code, "PERMISSION_DENIED");
    assert.match(used.error!.message, /its ticket is used/);
    const expiresMs = readClaims(once.grant.ticket)!.expires_ms;
    // The worker reads the tracker's clock as the agent saw it at registration, late by that message's trip (tens
    // of ms while the agent starts): lenient by that much, never strict.
    await waitFor("the ticket's expiry to pass", () => Promise.resolve(Date.now() > expiresMs + 1000));
    const expired = await rawHello(b.host, b.port, { session_id: once.grant.session_id, ticket: once.grant.ticket, role: "host" });
    assert.equal(expired.error?.code, "PERMISSION_DENIED");
    assert.match(expired.error!.message, /expired \d+ ms ago/);

    // Both boards still serve, through the SDK.
    for (const key of ["a", "b"]) {
      const s = await farm.client.request(key);
      assert.equal(s.lane, "direct");
      assert.deepEqual(await s.listdir(), []);
      await s.close();
    }
  });
});
