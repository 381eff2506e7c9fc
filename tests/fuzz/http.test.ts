/**
 * Fuzz: the tracker's HTTP side (tracker/http-server.ts: the live view,
 * its ws feed, /metrics, the probes) against a real tracker, over raw TCP so
 * that nothing a client library would refuse is left out: random methods,
 * request targets (`//`, `*`, absolute forms, dot segments, bytes), header
 * names and values, bodies, and websocket upgrades with bad (and good) keys
 * followed by random frames. Every request gets an answer that is not a
 * server error (or its connection closed), the tracker never dies, and a
 * normal session is served afterwards.
 */
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { connect } from "node:net";
import { after, before, describe, it } from "node:test";
import fc from "fast-check";
import { pathOf } from "../../tracker/http-server.ts";
import { fuzz, receiveUntil } from "../helpers/fuzz.ts";
import { checkVadd } from "../helpers/kernels.ts";
import { startFarm } from "../helpers/processes.ts";

const METHODS = ["GET", "HEAD", "POST", "PUT", "DELETE", "OPTIONS", "PATCH", "TRACE", "CONNECT", "PRI"];
const TARGETS = [
  "/",
  "//",
  "///",
  "//a",
  "//:99999",
  "//[",
  "*",
  "/metrics",
  "/feed",
  "/healthz",
  "/readyz",
  "/metrics?token=x",
  "/feed?token=%",
  "http://[",
  "http://tracker/metrics",
  "/%zz",
  "/..%2f..%2fetc",
  "/./metrics",
  "/\\\\x",
  "/metrics#frag",
];
const HEADER_NAMES = [
  "Host",
  "Authorization",
  "Connection",
  "Upgrade",
  "Sec-WebSocket-Key",
  "Sec-WebSocket-Version",
  "Sec-WebSocket-Extensions",
  "Origin",
  "Content-Length",
  "Transfer-Encoding",
  "Cookie",
  "Expect",
  "X-Forwarded-For",
];

/** One request as bytes: a request line, headers, maybe an upgrade, maybe a body. */
const request = fc
  .record({
    method: fc.oneof(fc.constantFrom(...METHODS), fc.stringMatching(/^[A-Z]{1,12}$/), fc.string({ maxLength: 8 })),
    target: fc.oneof(
      fc.constantFrom(...TARGETS),
      fc.webPath(),
      fc
        .array(fc.constantFrom("", ".", "..", "%00", "%2F", "metrics", "feed", "?", "#", "é", "\u0000", ":", "@"), { maxLength: 6 })
        .map((p) => `/${p.join("/")}`),
      fc.string({ unit: "binary", maxLength: 40 }),
    ),
    version: fc.constantFrom("HTTP/1.1", "HTTP/1.0", "HTTP/2.0", "HTTP/9", ""),
    headers: fc.array(
      fc.tuple(
        fc.oneof(fc.constantFrom(...HEADER_NAMES), fc.string({ maxLength: 12 })),
        fc.oneof(
          fc.string({ maxLength: 40 }),
          fc.string({ unit: "binary", maxLength: 40 }),
          fc.constantFrom("websocket", "Upgrade", "13", "8", "-1", "99999999999999999999", "chunked", "Bearer kf1.x.y", "Bearer", "http://evil.example"),
        ),
      ),
      { maxLength: 8 },
    ),
    upgrade: fc.option(
      fc.record({
        key: fc.oneof(
          fc.constant(""),
          fc.string({ maxLength: 30 }),
          fc.uint8Array({ minLength: 16, maxLength: 16 }).map((b) => Buffer.from(b).toString("base64")),
        ),
        version: fc.constantFrom("13", "8", "", "x"),
        path: fc.constantFrom("/feed", "/", "/metrics", "/nope"),
      }),
    ),
    body: fc.uint8Array({ maxLength: 256 }),
    frames: fc.uint8Array({ maxLength: 256 }),
  })
  .map((r) => {
    const lines = [`${r.method} ${r.upgrade ? r.upgrade.path : r.target} ${r.version}`.trimEnd(), "Host: 127.0.0.1"];
    if (r.upgrade)
      lines.push("Upgrade: websocket", "Connection: Upgrade", `Sec-WebSocket-Key: ${r.upgrade.key}`, `Sec-WebSocket-Version: ${r.upgrade.version}`);
    for (const [k, v] of r.headers) lines.push(`${k}: ${v}`);
    return { head: Buffer.from(`${lines.join("\r\n")}\r\n\r\n`, "utf8"), body: Buffer.from(r.body), frames: Buffer.from(r.frames), upgrade: !!r.upgrade };
  });

/** Sends one raw request; resolves with the status of the answer (0: none, the connection closed). */
async function send(host: string, port: number, r: { head: Buffer; body: Buffer; frames: Buffer }): Promise<number> {
  const socket = connect({ host, port });
  socket.on("connect", () => {
    socket.write(r.head);
    socket.end(r.body);
  });
  let status: number | undefined;
  await receiveUntil(
    socket,
    5000,
    () => `no answer and no close within 5 s to ${JSON.stringify(r.head.toString("latin1").slice(0, 200))}`,
    (got) => {
      if (status === undefined && got.includes("\r\n")) {
        status = Number(/^HTTP\/1\.[01] (\d{3})/.exec(got.toString("latin1"))?.[1] ?? -1);
        // An open feed: send it random frames, then go (it would stay open).
        if (status === 101) {
          socket.write(r.frames, () => socket.destroy());
          setImmediate(() => socket.destroy());
        }
      }
      return false; // the close ends it
    },
  );
  return status ?? 0;
}

describe("fuzz: the tracker's HTTP side", () => {
  let farm: Awaited<ReturnType<typeof startFarm>>;
  let host: string;
  let port: number;
  before(async () => {
    farm = await startFarm(["cpu:key=cpu"], { trackerArgs: ["--metrics-port", "0"] });
    [host, port] = [farm.tracker.httpAddress!.replace(/:\d+$/, ""), Number(farm.tracker.httpAddress!.split(":").at(-1))];
  });
  after(async () => {
    await farm?.stop();
  });

  it("answers every request without a server error, and keeps serving", async () => {
    const n = await fuzz("http paths and headers", { runs: 3000, seconds: 10 }, request, async (r) => {
      const status = await send(host, port, r);
      assert.ok(status === 0 || (status >= 100 && status < 500), `status ${status} for ${JSON.stringify(r.head.toString("latin1").slice(0, 300))}`);
      assert.equal(farm.tracker.proc.exitCode, null, `the tracker died:\n${farm.tracker.stderr().slice(-2000)}`);
    });
    assert.ok(n > 0);
    const metrics = await fetch(`http://${farm.tracker.httpAddress}/metrics`);
    assert.equal(metrics.status, 200);
    const s = await farm.client.request("cpu", { deadlineMs: 10_000 });
    try {
      await checkVadd(s);
    } finally {
      await s.close();
    }
  });

  it("regressions the fuzzer found, kept: `//` and other targets with an empty authority", async () => {
    // `new URL("//", base)` throws: the tracker died of an uncaught exception on `GET // HTTP/1.1`.
    for (const target of ["//", "///", "//:99999", "//["]) {
      assert.equal(
        await send(host, port, { head: Buffer.from(`GET ${target} HTTP/1.1\r\nHost: x\r\n\r\n`), body: Buffer.alloc(0), frames: Buffer.alloc(0) }),
        404,
        target,
      );
      assert.equal(
        await send(host, port, {
          head: Buffer.from(
            `GET ${target} HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: ${randomBytes(16).toString("base64")}\r\nSec-WebSocket-Version: 13\r\n\r\n`,
          ),
          body: Buffer.alloc(0),
          frames: Buffer.alloc(0),
        }),
        404,
        `upgrade of ${target}`,
      );
    }
    assert.equal(farm.tracker.proc.exitCode, null);
    assert.equal(pathOf({ url: "/metrics?token=x#y" }), "/metrics");
    assert.equal(pathOf({ url: "http://tracker/metrics" }), "");
  });
});
