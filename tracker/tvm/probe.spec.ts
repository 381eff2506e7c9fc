import assert from "node:assert/strict";
import { once } from "node:events";
import { createServer, type Server, type Socket } from "node:net";
import { after, describe, it } from "node:test";
import { probeTvmServer } from "./probe.ts";
import { RPC_MAGIC } from "./wire.ts";

/** A listener on loopback that treats each connection as `serve` says; its port, and what each connection sent. */
async function listener(serve: (socket: Socket, received: Buffer[]) => void): Promise<{ server: Server; port: number; received: Buffer[][] }> {
  const received: Buffer[][] = [];
  const server = createServer((socket) => {
    const got: Buffer[] = [];
    received.push(got);
    serve(socket, got);
  });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  return { server, port: (server.address() as { port: number }).port, received };
}

/** As TVM's accept loops read the opening: `bytes` of it, then close without a word. */
function readsThenCloses(bytes: number) {
  return (socket: Socket, got: Buffer[]) =>
    socket.on("data", (chunk: Buffer) => {
      got.push(chunk);
      if (Buffer.concat(got).length >= bytes) socket.end();
    });
}

describe("probeTvmServer", () => {
  const servers: Server[] = [];
  after(() => servers.forEach((s) => s.close()));

  // Its caller (server.ts's probe()) is started with `void`: a rejection would go unhandled and leave it probing.
  it("never rejects: a port net.connect throws on is a failed probe", async () => {
    assert.match((await probeTvmServer("127.0.0.1", 99999, "python", 200)) ?? "", /^its RPC port 127\.0\.0\.1:99999 cannot be probed: /);
  });

  it("a Python server gets 4 bytes that are not the RPC magic (it drops them silently); its close passes the probe", async () => {
    const l = await listener(readsThenCloses(4));
    servers.push(l.server);
    assert.equal(await probeTvmServer("127.0.0.1", l.port, "python"), undefined);
    const sent = Buffer.concat(l.received[0]!);
    assert.equal(sent.length, 4);
    assert.notEqual(sent.readInt32LE(0), RPC_MAGIC);
  });

  it("a C++ server gets the magic and a key length of 1, shorter than any client header (it closes before reading a key)", async () => {
    const l = await listener(readsThenCloses(8));
    servers.push(l.server);
    assert.equal(await probeTvmServer("127.0.0.1", l.port, "c++"), undefined);
    const sent = Buffer.concat(l.received[0]!);
    assert.deepEqual([sent.length, sent.readInt32LE(0), sent.readInt32LE(4)], [8, RPC_MAGIC, 1]);
  });

  it("fails a peer that answers bytes, one that never closes, one that resets, and an address where nothing listens", async () => {
    const talker = await listener((socket) => socket.end("HTTP/1.1 400 Bad Request\r\n\r\n"));
    const silent = await listener(() => {});
    const resetter = await listener((socket) => socket.resetAndDestroy());
    servers.push(talker.server, silent.server, resetter.server);
    assert.match((await probeTvmServer("127.0.0.1", talker.port, "python")) ?? "", /answered a probe with 28 bytes, where a TVM RPC server answers none/);
    assert.match((await probeTvmServer("127.0.0.1", silent.port, "python", 300)) ?? "", /did not close a probe within 300 ms/);
    assert.match((await probeTvmServer("127.0.0.1", resetter.port, "python")) ?? "", /cannot be reached: ECONNRESET|closed a probe abruptly/);
    const closed = await listener(() => {});
    closed.server.close();
    await once(closed.server, "close");
    assert.match((await probeTvmServer("127.0.0.1", closed.port, "python")) ?? "", /cannot be reached: ECONNREFUSED/);
  });
});
