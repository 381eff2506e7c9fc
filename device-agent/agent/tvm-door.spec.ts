/** TVM clients at the agent's direct-lane port: the handshake told from a host's hello, the match key read. */
import assert from "node:assert/strict";
import { once } from "node:events";
import { createServer, connect, type AddressInfo, type Socket } from "node:net";
import { after, before, describe, it } from "node:test";
import { FarmError } from "../../protos/index.ts";
import { TVM_RPC_MAGIC, TVM_RPC_MISMATCH, parseTvmClientKey, refuseTvm, sniffTvm } from "./tvm-door.ts";

function handshake(key: string): Buffer {
  const k = Buffer.from(key);
  const head = Buffer.alloc(8);
  head.writeInt32LE(TVM_RPC_MAGIC, 0);
  head.writeInt32LE(k.length, 4);
  return Buffer.concat([head, k]);
}

/** A ticket's shape: a payload and a 64-byte Ed25519 signature, each base64url (runtime/session-tickets.ts). */
const TICKET = `CgpzMy1hMWIyYzM.${"A_-z".repeat(21)}Bw`;

describe("parseTvmClientKey", () => {
  it("reads the session, its ticket and TVM's -timeout=", () => {
    assert.deepEqual(parseTvmClientKey(`client:s3-a1b2c3:${TICKET} -timeout=60`), { sessionId: "s3-a1b2c3", ticket: TICKET, timeoutS: 60 });
    assert.deepEqual(parseTvmClientKey(`client:s3-a1b2c3:${TICKET}`), { sessionId: "s3-a1b2c3", ticket: TICKET, timeoutS: 0 });
  });

  it("refuses a key this agent never gave out (a TVM server's K:random, a bare key, a server's key)", () => {
    for (const key of [
      "client:rasp4:ABCD",
      "client:rasp4:0.4561234",
      "client:",
      `server:s1-aa:${TICKET}`,
      "client:s1-aa",
      `client:s1-aa:${TICKET}:11`,
      `client:s1-aa:${TICKET}x`,
    ]) {
      assert.throws(
        () => parseTvmClientKey(key),
        (e: unknown) => e instanceof FarmError && e.code === "PERMISSION_DENIED",
        key,
      );
    }
  });
});

describe("sniffTvm", () => {
  let server: ReturnType<typeof createServer>;
  let accepted: (s: Socket) => void = () => {};
  before(async () => {
    server = createServer((s) => accepted(s)).listen(0, "127.0.0.1");
    await once(server, "listening");
  });
  after(() => server.close());

  /** A connection whose first bytes are `bytes`; the agent's side of it. */
  async function arrive(bytes: Buffer[]): Promise<{ mine: Socket; theirs: Socket }> {
    const got = new Promise<Socket>((resolve) => (accepted = resolve));
    const theirs = connect((server.address() as AddressInfo).port, "127.0.0.1");
    await once(theirs, "connect");
    for (const b of bytes) {
      theirs.write(b);
      await new Promise((r) => setImmediate(r));
    }
    return { mine: await got, theirs };
  }

  it("reads a TVM client's whole handshake, split over writes", async () => {
    const bytes = handshake("client:s1-abcdef:0123 -timeout=5");
    const { mine, theirs } = await arrive([bytes.subarray(0, 3), bytes.subarray(3, 9), bytes.subarray(9)]);
    const h = await sniffTvm(mine, 2000);
    assert.equal(h?.key, "client:s1-abcdef:0123 -timeout=5");
    assert.deepEqual(h?.bytes, bytes);
    mine.destroy();
    theirs.destroy();
  });

  it("gives a kernelfarm host's bytes back to the socket, in order", async () => {
    const hello = Buffer.from([0, 0, 0, 5, 1, 2, 3, 4, 5]);
    const { mine, theirs } = await arrive([hello]);
    assert.equal(await sniffTvm(mine, 2000), undefined);
    const read = await new Promise<Buffer>((resolve) => {
      let got = Buffer.alloc(0);
      mine.on("data", (c: Buffer) => {
        got = Buffer.concat([got, c]);
        if (got.length >= hello.length) resolve(got);
      });
      mine.resume();
    });
    assert.deepEqual(read, hello);
    mine.destroy();
    theirs.destroy();
  });

  it("refuses a key past its limit and bytes sent before the answer", async () => {
    const big = Buffer.alloc(8);
    big.writeInt32LE(TVM_RPC_MAGIC, 0);
    big.writeInt32LE(1 << 20, 4);
    const a = await arrive([big]);
    await assert.rejects(sniffTvm(a.mine, 2000), /PROTOCOL_ERROR|4096/);
    const b = await arrive([Buffer.concat([handshake("client:s1-aa:00"), Buffer.from([7])])]);
    await assert.rejects(sniffTvm(b.mine, 2000), /bytes after the TVM handshake/);
    for (const s of [a.mine, a.theirs, b.mine, b.theirs]) s.destroy();
  });

  it("answers a refused client with TVM's mismatch code", async () => {
    const { mine, theirs } = await arrive([handshake("client:nope")]);
    await sniffTvm(mine, 2000);
    const answer = once(theirs, "data");
    refuseTvm(mine);
    const [bytes] = (await answer) as [Buffer];
    assert.equal(bytes.readInt32LE(0), TVM_RPC_MISMATCH);
    theirs.destroy();
  });
});
