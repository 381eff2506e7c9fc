/**
 * Every lane's bytes counted (issue 32), against real processes: a tracker
 * with its HTTP side and an agent with two CPU boards. A session on the
 * direct lane, which no process but its worker carries, shows its bytes —
 * as its worker reported them — in the tracker's `/metrics` and in the live
 * view's feed, per session and per board, while it runs and when it ends;
 * the other board's figures do not move. The relay and grpc lanes, which the
 * tracker carries, are counted once: by the tracker, not by a worker's
 * report as well.
 */
import assert from "node:assert/strict";
import { once } from "node:events";
import { after, before, describe, it } from "node:test";
import { unpack } from "msgpackr";
import WebSocket from "ws";
import type { Session } from "../host-sdk/index.ts";
import type { Route } from "../protos/index.ts";
import type { FarmEvent } from "../tracker/events.ts";
import type { BytesNow } from "../tracker/lane-bytes.ts";
import type { FeedMessage } from "../tracker/live/protocol.ts";
import { scrape, type Scrape } from "./helpers/metrics.ts";
import { startFarm, waitFor } from "./helpers/processes.ts";

/** Host → board: an array of this many bytes, in 1 MiB chunks. */
const N = 3 * (1 << 20) + 12_345;
/** Board → host: an array of this many bytes read back. */
const M = 2 * (1 << 20) + 6789;

/** The feed's messages as they come: the last `bytes` it sent, and every farm event. */
class Feed {
  readonly ws: WebSocket;
  bytes: BytesNow | undefined;
  readonly events: FarmEvent[] = [];

  constructor(http: string) {
    this.ws = new WebSocket(`ws://${http}/feed`);
    this.ws.on("error", () => {});
    this.ws.on("message", (data: Buffer) => {
      const m = unpack(data) as FeedMessage;
      if (m.kind === "snapshot" || m.kind === "sample") this.bytes = m.bytes;
      else if (m.kind === "event") this.events.push(m.event);
      else if (m.kind === "events") this.events.push(...m.events);
    });
  }

  ended(session: string): Extract<FarmEvent, { type: "session" }> | undefined {
    return this.events.find((e): e is Extract<FarmEvent, { type: "session" }> => e.type === "session" && e.change === "ended" && e.session === session);
  }
}

const counter = (t: Scrape, name: string, labels: Record<string, string>) => t.get(name, labels) ?? 0;

describe("every lane's bytes counted: direct as its worker reports, relay and grpc once", () => {
  let farm: Awaited<ReturnType<typeof startFarm>>;
  let http: string;
  let feed: Feed;
  /** Board a serves the sessions; board b serves none. */
  let a: string;
  let b: string;

  before(async () => {
    farm = await startFarm(["cpu:key=cpu,name=a,zone=a", "cpu:key=cpu,name=b,zone=b"], {
      trackerArgs: ["--metrics-port", "0"],
      agentArgs: ["--canary-interval-ms", "0"],
    });
    http = farm.tracker.httpAddress!;
    const boards = (await farm.client.summary()).boards;
    a = boards.find((x) => x.labels.zone === "a")!.id;
    b = boards.find((x) => x.labels.zone === "b")!.id;
    feed = new Feed(http);
    await once(feed.ws, "open");
    await waitFor("the feed's snapshot", () => feed.bytes !== undefined);
  });
  after(async () => {
    feed?.ws.close();
    await farm?.stop();
  });

  /** N bytes up and M down on a session of board a. */
  async function transfer(s: Session): Promise<void> {
    await s.array(new Uint8Array(N).fill(7));
    const down = await s.array({ shape: [M], dtype: "uint8" });
    assert.equal((await down.toArray()).byteLength, M);
  }

  const bytesOf = (t: Scrape, labels: Record<string, string>) => ({
    toBoard: counter(t, labels.board ? "kernelfarm_board_bytes_total" : "kernelfarm_session_bytes_total", { ...labels, direction: "to_board" }),
    fromBoard: counter(t, labels.board ? "kernelfarm_board_bytes_total" : "kernelfarm_session_bytes_total", { ...labels, direction: "from_board" }),
  });
  const relayBytes = (t: Scrape) => ({
    toBoard: counter(t, "kernelfarm_relay_bytes_total", { direction: "to_board" }),
    fromBoard: counter(t, "kernelfarm_relay_bytes_total", { direction: "from_board" }),
  });
  const minus = (x: { toBoard: number; fromBoard: number }, y: { toBoard: number; fromBoard: number }) => ({
    toBoard: x.toBoard - y.toBoard,
    fromBoard: x.fromBoard - y.fromBoard,
  });

  it("a direct-lane session's bytes reach /metrics and the live view, per session and per board, while it runs and at its end", async () => {
    const t0 = await scrape(http);
    const feedB0 = { ...feed.bytes!.boards[b]! };
    const s = await farm.client.request("cpu", { labels: { zone: "a" }, route: "direct", deadlineMs: 20_000 });
    assert.equal(s.lane, "direct");
    await transfer(s);

    // While it runs: its worker's reports (about once a second) reach the feed and the scrape.
    const running = await waitFor(
      "the running session's bytes in the live view",
      () => {
        const now = feed.bytes?.sessions[s.id];
        return now && now.toBoard >= N && now.fromBoard >= M ? now : undefined;
      },
      10_000,
    );
    assert.ok(feed.bytes!.boards[a]!.toBoard >= running.toBoard, "the board's figure includes its running session's");
    const live = await waitFor("the running session's bytes in /metrics", async () => {
      const t = await scrape(http);
      const d = minus(bytesOf(t, { board: a }), bytesOf(t0, { board: a }));
      return d.toBoard >= N && d.fromBoard >= M ? t : undefined;
    });
    assert.deepEqual(bytesOf(live, { board: b }), bytesOf(t0, { board: b }), "the other board's bytes moved");

    await s.close();
    const ended = await waitFor("the session's end in the feed", () => feed.ended(s.id));
    assert.equal(ended.lane, "direct");
    assert.ok(ended.bytesToBoard! >= N, `to board: ${ended.bytesToBoard} bytes, at least the ${N} uploaded`);
    assert.ok(ended.bytesFromBoard! >= M, `from board: ${ended.bytesFromBoard} bytes, at least the ${M} read back`);
    // Nothing but the worker's own session's and board's: the feed's board b and the scrape's agree.
    await waitFor(
      "a sample after the end",
      () => feed.bytes !== undefined && feed.bytes.sessions[s.id] === undefined && feed.bytes.boards[a]!.toBoard >= ended.bytesToBoard!,
    );
    assert.deepEqual(feed.bytes!.boards[b], feedB0, "the other board's bytes moved in the live view");

    const t1 = await waitFor("the session's end in /metrics", async () => {
      const t = await scrape(http);
      return counter(t, "kernelfarm_sessions_ended_total", { key: "cpu", reason: "OK", lane: "direct" }) >
        counter(t0, "kernelfarm_sessions_ended_total", { key: "cpu", reason: "OK", lane: "direct" })
        ? t
        : undefined;
    });
    const session = minus(bytesOf(t1, { lane: "direct" }), bytesOf(t0, { lane: "direct" }));
    assert.deepEqual(session, { toBoard: ended.bytesToBoard, fromBoard: ended.bytesFromBoard }, "the scrape's session bytes are the end event's");
    assert.deepEqual(minus(bytesOf(t1, { board: a }), bytesOf(t0, { board: a })), session, "board a's bytes are its one session's");
    assert.deepEqual(bytesOf(t1, { board: b }), bytesOf(t0, { board: b }), "the other board's bytes moved");
    assert.deepEqual(relayBytes(t1), relayBytes(t0), "the tracker relayed none of a direct lane's bytes");
  });

  for (const route of ["relay", "grpc"] satisfies Route[]) {
    it(`a ${route}-lane session is counted once: by the tracker, as it relays, not by its worker as well`, async () => {
      const t0 = await scrape(http);
      const s = await farm.client.request("cpu", { labels: { zone: "a" }, route, deadlineMs: 20_000 });
      assert.equal(s.lane, route);
      await transfer(s);
      await s.close();
      const ended = await waitFor("the session's end in the feed", () => feed.ended(s.id));
      const t1 = await waitFor("the session's end in /metrics", async () => {
        const t = await scrape(http);
        return counter(t, "kernelfarm_sessions_ended_total", { key: "cpu", reason: "OK", lane: route }) >
          counter(t0, "kernelfarm_sessions_ended_total", { key: "cpu", reason: "OK", lane: route })
          ? t
          : undefined;
      });
      const session = minus(bytesOf(t1, { lane: route }), bytesOf(t0, { lane: route }));
      assert.ok(session.toBoard >= N && session.fromBoard >= M, `${route}: ${JSON.stringify(session)}`);
      assert.deepEqual(session, { toBoard: ended.bytesToBoard, fromBoard: ended.bytesFromBoard });
      assert.deepEqual(minus(relayBytes(t1), relayBytes(t0)), session, "the tracker's relayed bytes are the session's");
      assert.deepEqual(minus(bytesOf(t1, { board: a }), bytesOf(t0, { board: a })), session, "board a counted the session once");
      assert.deepEqual(bytesOf(t1, { lane: "direct" }), bytesOf(t0, { lane: "direct" }), "no direct-lane bytes");
      assert.deepEqual(bytesOf(t1, { board: b }), bytesOf(t0, { board: b }), "the other board's bytes moved");
    });
  }
});
