/**
 * A protocol-level TVM tracker client and RPC server for the tests, written
 * from the protocol description (docs/tvm-tracker.md, "TVM's protocol"), as
 * tests/tvm/fake_tvm.py is in Python: what kernelfarm's TVM port must serve
 * as TVM's own tracker would. Nothing here imports the tracker's code.
 */
import { once } from "node:events";
import { connect, createServer, type Server, type Socket } from "node:net";

export const TRACKER_MAGIC = 0x2f271;
export const RPC_MAGIC = 0xff271;
export const RPC_CODE_SUCCESS = RPC_MAGIC;
export const RPC_CODE_MISMATCH = RPC_MAGIC + 2;
export const CODES = { FAIL: -1, SUCCESS: 0, PING: 1, STOP: 2, PUT: 3, REQUEST: 4, UPDATE_INFO: 5, SUMMARY: 6, GET_PENDING_MATCHKEYS: 7 } as const;

export function int32(n: number): Buffer {
  const b = Buffer.alloc(4);
  b.writeInt32LE(n);
  return b;
}

export function frame(value: unknown): Buffer {
  const body = Buffer.from(JSON.stringify(value), "utf8");
  return Buffer.concat([int32(body.length), body]);
}

/** Reads exact byte counts from a socket, in order; a close fails what waits. */
export class SocketReader {
  private buffered = Buffer.alloc(0);
  private waiting: { n: number; resolve: (b: Buffer) => void; reject: (e: Error) => void } | undefined;
  private ended: Error | undefined;

  constructor(readonly socket: Socket) {
    socket.on("data", (c: Buffer) => {
      this.buffered = Buffer.concat([this.buffered, c]);
      this.pump();
    });
    socket.on("error", (e) => this.end(e));
    socket.on("close", () => this.end(new Error("the connection closed")));
  }

  /** The next `n` bytes. */
  read(n: number): Promise<Buffer> {
    return new Promise((resolve, reject) => {
      this.waiting = { n, resolve, reject };
      this.pump();
    });
  }

  /** Resolves when the peer closes (what it sent meanwhile is dropped). */
  closed(): Promise<void> {
    return this.ended ? Promise.resolve() : once(this.socket, "close").then(() => undefined);
  }

  private pump(): void {
    const w = this.waiting;
    if (!w) return;
    if (this.buffered.length >= w.n) {
      this.waiting = undefined;
      const out = this.buffered.subarray(0, w.n);
      this.buffered = this.buffered.subarray(w.n);
      w.resolve(out);
    } else if (this.ended) {
      this.waiting = undefined;
      w.reject(this.ended);
    }
  }

  private end(e: Error): void {
    this.ended ??= e;
    this.pump();
  }
}

export function splitAddress(address: string): { host: string; port: number } {
  const i = address.lastIndexOf(":");
  return { host: address.slice(0, i).replace(/^\[(.*)\]$/, "$1"), port: Number(address.slice(i + 1)) };
}

/** A tracker connection after the magic exchange. */
export class TrackerConn {
  private constructor(
    readonly socket: Socket,
    private readonly reader: SocketReader,
  ) {}

  static async open(address: string, opts: { localAddress?: string } = {}): Promise<TrackerConn> {
    const socket = connect({ ...splitAddress(address), noDelay: true, ...opts });
    await once(socket, "connect");
    const conn = new TrackerConn(socket, new SocketReader(socket));
    socket.write(int32(TRACKER_MAGIC));
    const magic = (await conn.reader.read(4)).readInt32LE(0);
    if (magic !== TRACKER_MAGIC) throw new Error(`${address} is not an RPC tracker (answered 0x${magic.toString(16)})`);
    return conn;
  }

  send(request: unknown): void {
    this.socket.write(frame(request));
  }

  async next(): Promise<unknown> {
    const n = (await this.reader.read(4)).readInt32LE(0);
    return JSON.parse((await this.reader.read(n)).toString("utf8"));
  }

  call(request: unknown): Promise<unknown> {
    this.send(request);
    return this.next();
  }

  /** REQUEST: [0, [host, port, matchkey]] or [-1, reason], when the tracker answers. */
  request(key: string, priority = 1, user = ""): Promise<unknown> {
    return this.call([CODES.REQUEST, key, user, priority]);
  }

  async summary(): Promise<{ queue_info: Record<string, { free: number; pending: number }>; server_info: Array<Record<string, unknown>> }> {
    const reply = (await this.call([CODES.SUMMARY])) as [number, never];
    if (reply[0] !== CODES.SUCCESS) throw new Error(`Invalid return value ${JSON.stringify(reply)}`);
    return reply[1];
  }

  closed(): Promise<void> {
    return this.reader.closed();
  }

  close(): void {
    this.socket.destroy();
  }
}

/** A TVM client's handshake with an RPC server: the session's socket, or an Error on a refusal. */
export async function rpcConnect(host: string, port: number, matchkey: string): Promise<{ socket: Socket; remoteKey: string }> {
  const socket = connect({ host, port });
  await once(socket, "connect");
  const reader = new SocketReader(socket);
  const key = Buffer.from(`client:${matchkey}`, "utf8");
  socket.write(Buffer.concat([int32(RPC_MAGIC), int32(key.length), key]));
  const code = (await reader.read(4)).readInt32LE(0);
  if (code === RPC_CODE_MISMATCH) {
    socket.destroy();
    throw new Error(`cannot find server that matches key ${matchkey}`);
  }
  if (code !== RPC_CODE_SUCCESS) {
    socket.destroy();
    throw new Error(`${host}:${port} is not TVM RPC server`);
  }
  const n = (await reader.read(4)).readInt32LE(0);
  return { socket, remoteKey: (await reader.read(n)).toString("utf8") };
}

/**
 * TVM's `rpc_server --tracker ADDR --key KEY` at the protocol level (docs/tvm-tracker.md, "TVM's protocol" §3):
 * UPDATE_INFO, PUT with a fresh match key, a GET_PENDING_MATCHKEYS poll
 * every `pollMs` while it waits, the key given up at the 4th poll out, the
 * client's key checked (MISMATCH otherwise), one session at a time — until
 * the client closes — then a new PUT. Connections that arrive meanwhile wait,
 * as in a listen backlog.
 */
export class FakeRpcServer {
  matchkey = "";
  readonly sessions: string[] = [];
  mismatches = 0;
  /** Connections that did not open with the RPC magic: dropped unanswered and unlogged, as TVM's Python server does. */
  dropped = 0;
  /** Polls in a row that no longer listed its key (a client was given it and has not come); at 4 it gives the key up. */
  misses = 0;
  puts = 0;
  /** What stopped its loop, if anything did before stop(). */
  error: Error | undefined;
  private readonly listener: Server;
  private readonly arrived: Socket[] = [];
  private wake: (() => void) | undefined;
  private conn: TrackerConn | undefined;
  private stopped = false;
  private frozen = false;
  private readonly used = new Set<string>();

  private constructor(
    private readonly tracker: string,
    readonly key: string,
    readonly port: number,
    listener: Server,
    private readonly opts: { pollMs: number; customAddr: string | null },
  ) {
    this.listener = listener;
    listener.on("connection", (s: Socket) => {
      this.arrived.push(s);
      this.wake?.();
    });
    this.run().catch((err: Error) => {
      if (!this.stopped) this.error = err;
    });
  }

  static async start(tracker: string, key: string, opts: { pollMs?: number; customAddr?: string | null } = {}): Promise<FakeRpcServer> {
    const listener = createServer();
    listener.listen(0, "127.0.0.1", 1);
    await once(listener, "listening");
    const port = (listener.address() as { port: number }).port;
    return new FakeRpcServer(tracker, key, port, listener, { pollMs: opts.pollMs ?? 2000, customAddr: opts.customAddr ?? null });
  }

  /** SIGSTOP, as the tracker sees it: no more polls, nothing accepted. */
  freeze(): void {
    this.frozen = true;
  }

  stop(): void {
    this.stopped = true;
    this.wake?.();
    this.conn?.close();
    this.listener.close();
    for (const s of this.arrived) s.destroy();
  }

  private async run(): Promise<void> {
    this.conn = await TrackerConn.open(this.tracker);
    const info = await this.conn.call([CODES.UPDATE_INFO, { key: `server:${this.key}`, addr: [this.opts.customAddr, this.port] }]);
    if (info !== CODES.SUCCESS) throw new Error(`UPDATE_INFO answered ${JSON.stringify(info)}`);
    while (!this.stopped) {
      await this.put();
      this.misses = 0;
      for (;;) {
        if (this.stopped) return;
        const client = await this.nextConnection();
        if (this.stopped) return;
        if (!client) {
          const pending = (await this.conn.call([CODES.GET_PENDING_MATCHKEYS])) as string[];
          this.misses = pending.includes(this.matchkey) ? 0 : this.misses + 1;
          // TVM's rule (misses · 2 s > 4 s + 2 s: its ping period and unmatch timeout) in polls: the 4th poll out gives the key up.
          if (this.misses >= 4) {
            await this.put();
            this.misses = 0;
          }
          continue;
        }
        if (await this.serve(client)) break;
      }
    }
  }

  private async put(): Promise<void> {
    do this.matchkey = `${this.key}:${Math.random()}`;
    while (this.used.has(this.matchkey));
    this.used.add(this.matchkey);
    const reply = await this.conn!.call([CODES.PUT, this.key, [this.port, this.matchkey], this.opts.customAddr]);
    if (reply !== CODES.SUCCESS) throw new Error(`PUT answered ${JSON.stringify(reply)}`);
    this.puts++;
  }

  /** The next connection, or undefined after a poll period without one (a frozen server waits forever). */
  private async nextConnection(): Promise<Socket | undefined> {
    const deadline = Date.now() + this.opts.pollMs;
    for (;;) {
      if (this.stopped) return undefined;
      if (!this.frozen && this.arrived.length) return this.arrived.shift();
      const left = deadline - Date.now();
      if (!this.frozen && left <= 0) return undefined;
      // Woken by a connection or stop(); frozen, only those wake it (it never polls again).
      await new Promise<void>((resolve) => {
        const t = this.frozen ? undefined : setTimeout(resolve, left);
        this.wake = () => {
          clearTimeout(t);
          resolve();
        };
      });
    }
  }

  /** One connection: true when it was a session (then a new PUT follows). */
  private async serve(client: Socket): Promise<boolean> {
    const reader = new SocketReader(client);
    try {
      const magic = (await reader.read(4)).readInt32LE(0);
      if (magic !== RPC_MAGIC) {
        this.dropped++;
        return false;
      }
      const n = (await reader.read(4)).readInt32LE(0);
      const words = (await reader.read(n)).toString("utf8").split(/\s+/);
      if (words[0] !== `client:${this.matchkey}`) {
        await new Promise<void>((resolve) => client.end(int32(RPC_CODE_MISMATCH), resolve));
        this.mismatches++;
        return false;
      }
      const serverKey = Buffer.from(`server:${this.key}`, "utf8");
      client.write(Buffer.concat([int32(RPC_CODE_SUCCESS), int32(serverKey.length), serverKey]));
      this.sessions.push(words[0]!);
      await reader.closed();
      return true;
    } catch {
      return false;
    } finally {
      client.destroy();
    }
  }
}
