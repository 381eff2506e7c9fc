/**
 * What answered where connectTracker found no tracker's gRPC: the tracker's
 * other ports answer too, in their own protocols — its HTTP side
 * (`--metrics-port`: /metrics, the live view) in HTTP/1.1, its TVM port
 * (`--tvm-port`) with TVM's tracker handshake. A user who copied the wrong
 * port from `kfarm tracker`'s output would otherwise be asked whether a
 * tracker runs there, which it does.
 */
import { connect } from "node:net";

/** TVM's RPC_TRACKER_MAGIC (tracker/tvm/wire.ts): a TVM tracker answers a client's with its own. */
const TVM_TRACKER_MAGIC = 0x2f271;

/** Where the SDK should go instead: what `kfarm tracker` prints first. */
const USE_GRPC_PORT = 'connect to the tracker\'s gRPC port instead: the one `kfarm tracker` prints as "listening on" (its --port, 9190 unless set)';

/**
 * The sentence that says what answered at `address` and which port to use,
 * or undefined when it is neither a tracker's HTTP nor its TVM port (nothing
 * answers, TLS, anything else). Never rejects.
 */
export async function wrongPortHint(address: string, timeoutMs = 1000): Promise<string | undefined> {
  const i = address.lastIndexOf(":");
  const host = address.slice(0, i).replace(/^\[(.*)\]$/, "$1");
  const port = Number(address.slice(i + 1));
  const magic = Buffer.alloc(4);
  magic.writeInt32LE(TVM_TRACKER_MAGIC);
  // Both at once, each on its own connection: an HTTP server waits for a whole request line, a TVM tracker for its 4 bytes.
  const [http, tvm] = await Promise.all([
    exchange(host, port, Buffer.from(`HEAD / HTTP/1.1\r\nHost: ${host}\r\nConnection: close\r\n\r\n`), 5, timeoutMs),
    exchange(host, port, magic, 4, timeoutMs),
  ]);
  if (http?.subarray(0, 5).toString("latin1") === "HTTP/") {
    return `${address} answered in HTTP/1.1, not gRPC: it is an HTTP port (the tracker's --metrics-port serves /metrics and the live view there); ${USE_GRPC_PORT}`;
  }
  if (tvm && tvm.length >= 4 && tvm.readInt32LE(0) === TVM_TRACKER_MAGIC) {
    return `${address} answered with TVM's tracker magic (0x${TVM_TRACKER_MAGIC.toString(16)}), not gRPC: it is a TVM tracker port (the tracker's --tvm-port, for TVM's own clients: tvm.rpc.connect_tracker); ${USE_GRPC_PORT}`;
  }
  return undefined;
}

/** Sends `hello` and collects the answer until `want` bytes, the peer's close, or `timeoutMs`; undefined when the connection fails. */
function exchange(host: string, port: number, hello: Buffer, want: number, timeoutMs: number): Promise<Buffer | undefined> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let got = 0;
    let socket: ReturnType<typeof connect>;
    try {
      socket = connect({ host, port });
    } catch {
      resolve(undefined);
      return;
    }
    const finish = (v: Buffer | undefined) => {
      clearTimeout(timer);
      socket.destroy();
      resolve(v);
    };
    const timer = setTimeout(() => finish(Buffer.concat(chunks)), timeoutMs);
    socket.once("connect", () => socket.write(hello));
    socket.on("data", (c: Buffer) => {
      chunks.push(c);
      got += c.length;
      if (got >= want) finish(Buffer.concat(chunks));
    });
    socket.once("end", () => finish(Buffer.concat(chunks)));
    socket.once("error", () => finish(chunks.length ? Buffer.concat(chunks) : undefined));
  });
}
