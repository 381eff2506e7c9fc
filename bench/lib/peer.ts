/**
 * The far end of the physical baselines, run as its own process: a plain
 * Node `net` server on 127.0.0.1 port 0 that prints its port, then serves
 * each connection in the mode named by the connection's first byte:
 *
 * | byte | mode                                                              |
 * |------|-------------------------------------------------------------------|
 * | `U`  | sink: read a u64 count, receive that many bytes, answer one byte  |
 * | `D`  | source: read a u64 count, send that many bytes                    |
 * | `P`  | ping-pong: echo every byte back as it arrives                     |
 *
 * A connection may repeat U/D transfers; P lasts until the client leaves.
 * Started with `--relay PORT` it serves no mode itself but forwards each
 * connection to another peer on PORT: the same two hops as host → tracker →
 * worker, with nothing but Node sockets in the way.
 */
import { connect, createServer, type Socket } from "node:net";
import { CHUNK_BYTES } from "../../protos/index.ts";

const payload = Buffer.alloc(CHUNK_BYTES, 0x5a);

function serve(socket: Socket): void {
  socket.setNoDelay(true);
  let header = Buffer.alloc(0);
  let sinkLeft = 0;
  let echo = false;
  socket.on("data", (chunk: Buffer) => {
    if (echo) {
      socket.write(chunk);
      return;
    }
    if (sinkLeft > 0) {
      const take = Math.min(sinkLeft, chunk.length);
      sinkLeft -= take;
      chunk = chunk.subarray(take);
      if (sinkLeft === 0) socket.write(Buffer.from("k"));
      if (chunk.length === 0) return;
    }
    header = Buffer.concat([header, chunk]);
    if (header.length >= 1 && header[0] === 0x50) {
      echo = true;
      if (header.length > 1) socket.write(header.subarray(1));
      return;
    }
    if (header.length < 9) return;
    const mode = header[0];
    const count = Number(header.readBigUInt64LE(1));
    const rest = header.subarray(9);
    header = Buffer.alloc(0);
    if (mode === 0x55) {
      sinkLeft = count - rest.length;
      if (sinkLeft === 0) socket.write(Buffer.from("k"));
    } else if (mode === 0x44) {
      void source(socket, count);
    } else {
      socket.destroy(new Error(`unknown mode byte ${mode}`));
    }
  });
  socket.on("error", () => {});
}

async function source(socket: Socket, count: number): Promise<void> {
  let left = count;
  while (left > 0) {
    const n = Math.min(left, payload.length);
    left -= n;
    if (!socket.write(n === payload.length ? payload : payload.subarray(0, n))) {
      await new Promise((r) => socket.once("drain", r));
    }
  }
}

/** With `--relay PORT`: forward every connection, bytes untouched, to a peer on PORT (a two-hop path like the tracker's). */
function relay(port: number): (socket: Socket) => void {
  return (socket) => {
    socket.setNoDelay(true);
    const upstream = connect({ port, host: "127.0.0.1", noDelay: true });
    socket.pipe(upstream).on("error", () => {});
    upstream.pipe(socket).on("error", () => {});
    socket.on("error", () => upstream.destroy());
    upstream.on("error", () => socket.destroy());
  };
}

const relayArg = process.argv.indexOf("--relay");
const server = createServer({ noDelay: true }, relayArg > 0 ? relay(Number(process.argv[relayArg + 1])) : serve);
server.listen(0, "127.0.0.1", () => {
  const address = server.address();
  if (address && typeof address === "object") console.log(`peer listening on ${address.port}`);
});
// The parent holds our stdin: when it goes, so do we.
process.stdin.on("end", () => process.exit(0));
process.stdin.resume();
