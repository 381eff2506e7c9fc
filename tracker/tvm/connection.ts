/**
 * One connection to the TVM port: TVM's tracker protocol (tracker/tvm/wire.ts)
 * read, checked and answered. A connection is a client's (REQUEST, SUMMARY,
 * PING), a server's once it sends UPDATE_INFO `{"key": "server:K"}` (then
 * PUT and its polls; tracker/tvm/server.ts), or both.
 *
 * A REQUEST waits as with TVM's tracker: for any key, also one no server
 * serves yet, with no cap unless the operator sets `--tvm-deadline-ms`; and
 * a tracker that stops closes the connection rather than answering, since
 * TVM's client reconnects and asks again after a closed connection but gives
 * up on a failure reply. Differences from TVM's tracker, each on purpose
 * (docs/tvm-tracker.md):
 * * every reply leaves in one write on a TCP_NODELAY socket;
 * * a request that is wrong is answered `[-1, "[CODE] what to do"]` (a TVM
 *   client raises it as "Invalid return value …"), where TVM's tracker
 *   closes the connection;
 * * a client that disconnects leaves the queue at once;
 * * STOP is never obeyed: the tracker is stopped by its operator's signal.
 *
 * Only what breaks the byte stream (a wrong magic, a frame length outside
 * 1…MAX_FRAME_BYTES), a frame nested past MAX_JSON_DEPTH, or a peer that
 * stops reading its replies ends the connection; nothing a peer sends
 * touches another connection, and nothing it sends may throw out of this
 * class into the process (a throw ends this connection, logged).
 *
 * A PUT registers the address the peer connects from, never one it names:
 * the tracker probes that address (probe.ts) and hands it to clients, and a
 * peer that could name any address would make the tracker a port scanner
 * (docs/security.md, "TVM's tracker protocol").
 */
import type { Socket } from "node:net";
import { FarmError } from "../../protos/index.ts";
import { joinHostPort } from "../registry.ts";
import type { Waiter } from "../scheduler.ts";
import { plainAddress, type TvmAdmission } from "./admission.ts";
import { farmBoardGrant } from "./farm-board.ts";
import type { TvmServerDialect } from "./probe.ts";
import { TvmServer, type TvmFarm, type TvmServerLink } from "./server.ts";
import { TRACKER_CODES, TRACKER_MAGIC, WireReader, encodeFrame, int32 } from "./wire.ts";

/** A peer that has not sent the tracker magic by then is dropped. */
export const HANDSHAKE_TIMEOUT_MS = 10_000;
/**
 * TCP keepalive on every connection: the first probe after 5 s of silence,
 * then Node (libuv) probes every 1 s, 10 times — a server whose host vanished
 * without a FIN (during a session it sends nothing) leaves in about 15 s.
 */
export const KEEPALIVE_IDLE_MS = 5000;
/** Requests one connection may have waiting at once (TVM's client has one). */
export const MAX_WAITING_PER_CONNECTION = 64;
/** Replies a peer may leave unread before it is dropped. */
export const MAX_UNREAD_BYTES = 1 << 20;
/** Keys, users, match keys and addresses longer than this are refused. */
export const MAX_NAME_CHARS = 256;
/** After its last answer, how long a peer has to close its side before the connection is cut. */
const LINGER_MS = 1000;

export type RefusalReason = "network" | "key" | "address" | "protocol";

/** What a connection needs from the TVM port. */
export interface TvmPortContext {
  readonly admission: TvmAdmission;
  readonly farm: TvmFarm;
  /** The tracker's session cap: a TVM client's session timeout stays between it and its server, so its lease gets the cap. */
  readonly maxSessionTimeoutMs: number;
  /** The tracker is stopping: a request it fails is not answered, its connection closes (TVM's client reconnects then). */
  readonly stopping: boolean;
  /** The farm in the SUMMARY reply's format. */
  summary(): unknown;
  refused(reason: RefusalReason): void;
  closed(connection: TvmConnection): void;
}

const CODE_NAMES = Object.fromEntries(Object.entries(TRACKER_CODES).map(([name, code]) => [code, name])) as Record<number, string>;

export class TvmConnection implements TvmServerLink {
  readonly peerHost: string;
  readonly peer: string;
  /** The server this connection registered, after UPDATE_INFO `server:K`. */
  server: TvmServer | undefined;
  /** Its UPDATE_INFO dicts, merged (as TVM's tracker keeps them). */
  readonly info: Record<string, unknown> = {};
  /** Which TVM server it is, as its UPDATE_INFO tells: C++'s `tvm_rpc` sends its port as a string (probe.ts opens to each differently). */
  dialect: TvmServerDialect = "python";
  private readonly reader = new WireReader();
  private readonly waiting = new Set<Waiter>();
  /** Why this peer is not admitted; its first request is answered with it, then the connection ends. */
  private readonly refusal: string | undefined;
  private handshakeTimer: NodeJS.Timeout | undefined;
  /** Ending: nothing more is read or answered. */
  private closing = false;
  /** The socket closed. */
  private closed = false;

  constructor(
    private readonly socket: Socket,
    private readonly ctx: TvmPortContext,
  ) {
    socket.setNoDelay(true);
    socket.setKeepAlive(true, KEEPALIVE_IDLE_MS);
    this.peerHost = plainAddress(socket.remoteAddress);
    this.peer = joinHostPort(this.peerHost, socket.remotePort ?? 0);
    this.refusal = ctx.admission.refusesPeer(this.peerHost);
    if (this.refusal) this.refuse("network", this.refusal);
    this.handshakeTimer = setTimeout(() => this.close(`sent no tracker handshake within ${HANDSHAKE_TIMEOUT_MS} ms`, "info"), HANDSHAKE_TIMEOUT_MS);
    socket.on("data", (chunk: Buffer) => {
      // The last line of defence: whatever a peer's bytes make throw ends this connection, never the tracker.
      try {
        this.read(chunk);
      } catch (err) {
        this.ctx.refused("protocol");
        this.close(`its bytes broke the tracker's reading of them (${FarmError.from(err).message})`);
      }
    });
    // A reset or a failed keepalive: 'close' follows and says the rest.
    socket.on("error", (err: NodeJS.ErrnoException) =>
      this.ctx.farm.log.debug({ peer: this.peer, err: err.code ?? err.message }, "tvm port: connection error"),
    );
    socket.on("close", () => this.ended());
  }

  /** TvmServerLink: ends the connection, the server with it. */
  close(why: string, level: "info" | "warn" = "warn"): void {
    this.finish(why, level);
    this.socket.destroy();
  }

  /** Ends the connection after what was written (a last answer) is sent; a peer that keeps its side open is cut after LINGER_MS. */
  finish(why: string, level: "info" | "warn"): void {
    if (this.closing) return;
    this.closing = true;
    this.ctx.farm.log[level]({ peer: this.peer, board: this.server?.board?.id }, `tvm port: closing the connection from ${this.peer}: ${why}`);
    this.server?.gone(why);
    this.socket.end();
    setTimeout(() => this.socket.destroy(), LINGER_MS).unref();
  }

  private read(chunk: Buffer): void {
    if (this.closing) return;
    let events;
    try {
      events = this.reader.push(chunk);
    } catch (err) {
      const e = FarmError.from(err);
      this.ctx.refused("protocol");
      // Past the handshake the peer reads frames: it gets the reason before the connection ends.
      if (this.handshakeTimer === undefined) this.write([TRACKER_CODES.FAIL, e.toString()]);
      this.finish(e.message, "info");
      return;
    }
    for (const event of events) {
      if (this.closing) return;
      if (event.type === "hello") {
        // A refused peer gets the handshake, so that its first request can be answered with the refusal.
        if (!this.refusal) {
          clearTimeout(this.handshakeTimer);
          this.handshakeTimer = undefined;
        }
        this.socket.write(int32(TRACKER_MAGIC));
      } else if (this.refusal) {
        this.write([TRACKER_CODES.FAIL, new FarmError("PERMISSION_DENIED", this.refusal).toString()]);
        this.finish("refused (not admitted)", "info");
      } else if (event.error) {
        this.fail(event.error, "a frame");
      } else {
        this.handle(event.value);
      }
    }
  }

  private handle(request: unknown): void {
    if (!Array.isArray(request) || request.length === 0 || !Number.isInteger(request[0])) {
      this.fail(
        new FarmError(
          "INVALID_ARGUMENT",
          `a tracker request is a JSON array whose first element is a tracker code (e.g. [1] for PING), got ${clip(JSON.stringify(request))}`,
        ),
        "a request",
      );
      return;
    }
    const code = request[0] as number;
    const what = CODE_NAMES[code] ?? `code ${code}`;
    this.server?.heard();
    try {
      switch (code) {
        case TRACKER_CODES.PING:
          return this.write(TRACKER_CODES.SUCCESS);
        case TRACKER_CODES.STOP:
          throw new FarmError("PERMISSION_DENIED", "STOP is not obeyed on kernelfarm's TVM port: its operator stops the tracker (SIGTERM to kfarm tracker)");
        case TRACKER_CODES.PUT:
          return this.put(request);
        case TRACKER_CODES.REQUEST:
          return this.request(request);
        case TRACKER_CODES.UPDATE_INFO:
          return this.updateInfo(request);
        case TRACKER_CODES.SUMMARY:
          return this.write([TRACKER_CODES.SUCCESS, this.ctx.summary()]);
        case TRACKER_CODES.GET_PENDING_MATCHKEYS:
          this.server?.polled();
          return this.write(this.server?.pendingKeys() ?? []);
        default:
          throw new FarmError(
            "INVALID_ARGUMENT",
            `unknown tracker code ${code}; codes: ${Object.entries(TRACKER_CODES)
              .filter(([, c]) => c > 0)
              .map(([n, c]) => `${c} ${n}`)
              .join(", ")}`,
          );
      }
    } catch (err) {
      this.fail(FarmError.from(err), what);
    }
  }

  /** `[3, key, [port, matchkey], custom_addr | null]` */
  private put(request: unknown[]): void {
    const [, key, slot, customAddr] = request;
    if (!this.server)
      throw new FarmError(
        "INVALID_ARGUMENT",
        `PUT before UPDATE_INFO: a TVM server says who it is first, [5, {"key": "server:<key>", "addr": [null, <port>]}] (as rpc_server does)`,
      );
    const refused = this.ctx.admission.refusesKey(name(key, "PUT's key"));
    if (refused) {
      this.refuse("key", refused);
      throw new FarmError("PERMISSION_DENIED", refused);
    }
    if (!Array.isArray(slot) || slot.length !== 2)
      throw new FarmError("INVALID_ARGUMENT", `PUT's third element is [port, matchkey], got ${clip(JSON.stringify(slot))}`);
    const custom = customAddr === undefined || customAddr === null ? null : plainAddress(name(customAddr, "PUT's custom address"));
    if (custom !== null && custom !== this.peerHost) {
      const why = `PUT names ${clip(custom)} as the address its clients connect to, but this server's tracker connection comes from ${this.peerHost}: the TVM port registers (and probes) only the address a server connects from, so that no peer can make the tracker connect where it says; start rpc_server without --custom-addr (or with its own address, ${this.peerHost})`;
      this.refuse("address", why);
      throw new FarmError("PERMISSION_DENIED", why);
    }
    this.server.put({ key: key as string, port: portOf(slot[0], "PUT's port"), matchkey: name(slot[1], "PUT's match key") }, this.peerHost);
    this.write(TRACKER_CODES.SUCCESS);
  }

  /** `[4, key, user, priority]`: answered `[0, [host, port, matchkey]]` when a server is granted. */
  private request(request: unknown[]): void {
    const [, key, user = "", priority = 1] = request;
    const k = name(key, "REQUEST's key");
    const u = user === null ? "" : typeof user === "string" && user.length <= MAX_NAME_CHARS ? user : name(user, "REQUEST's user");
    if (typeof priority !== "number" || !Number.isInteger(priority) || priority < -(2 ** 31) || priority >= 2 ** 31) {
      throw new FarmError("INVALID_ARGUMENT", `REQUEST's priority is a 32-bit integer (larger is served first), got ${clip(JSON.stringify(priority))}`);
    }
    const refused = this.ctx.admission.refusesKey(k);
    if (refused) {
      this.refuse("key", refused);
      throw new FarmError("PERMISSION_DENIED", refused);
    }
    if (this.waiting.size >= MAX_WAITING_PER_CONNECTION) {
      throw new FarmError(
        "INVALID_ARGUMENT",
        `this connection has ${this.waiting.size} requests waiting already, the most one connection may; wait for their answers, or open another connection`,
      );
    }
    // Fairness is per client: the user it names (TVM's client names none) at the address it comes from.
    const clientId = `tvm:${u ? `${u}@` : ""}${this.peerHost}`;
    const { farm, maxSessionTimeoutMs } = this.ctx;
    let waiter: Waiter | undefined;
    let settled = false;
    // eslint-disable-next-line prefer-const -- a grant may come inside request(), before this assignment: `waiter` is read there
    waiter = farm.scheduler.request(
      { key: k, priority, labels: {}, deadline_ms: 0, client_id: clientId, session_timeout_ms: maxSessionTimeoutMs, route: "direct", board_id: "" },
      {
        grant: (lease, queuedMs) => {
          settled = true;
          if (waiter) this.waiting.delete(waiter);
          if (this.closing || this.socket.destroyed) {
            lease.end(new FarmError("CANCELLED", `session ${lease.id}: the TVM client at ${this.peer} left before its grant`));
            return;
          }
          // A TVM server's board, or a kernelfarm board of kind tvm (tracker/tvm/farm-board.ts).
          const reply = farm.servers.get(lease.board.agent.id)?.grantOf(lease) ?? farmBoardGrant(lease);
          if (!reply) return lease.end(new FarmError("INTERNAL", `session ${lease.id}: board ${lease.board.id} is no TVM server's and no tvm board`));
          this.write([TRACKER_CODES.SUCCESS, reply]);
          farm.audit.record({
            event: "grant",
            who: clientId,
            kind: "tvm",
            peer: this.peer,
            session: lease.id,
            board: lease.board.id,
            key: k,
            priority,
            queuedMs,
          });
          lease.whenEnded(() =>
            farm.audit.record({
              event: "session_end",
              who: clientId,
              kind: "tvm",
              session: lease.id,
              board: lease.board.id,
              reason: lease.reason?.code ?? "OK",
              lane: lease.lane ?? null,
            }),
          );
        },
        fail: (err) => {
          settled = true;
          if (waiter) this.waiting.delete(waiter);
          // A closed connection is what TVM's client retries on (it reconnects for 60 s); a failure reply it raises.
          if (this.ctx.stopping) this.finish("the tracker is shutting down: its TVM client reconnects and asks again", "info");
          else if (!this.closing) this.fail(err, "REQUEST");
        },
      },
      undefined,
      "direct",
      "tvm",
    );
    if (waiter && !settled) this.waiting.add(waiter);
  }

  /** `[5, {"key": "server:K", "addr": [custom_addr | null, port], …}]`, merged into this connection's info. */
  private updateInfo(request: unknown[]): void {
    const info = request[1];
    if (typeof info !== "object" || info === null || Array.isArray(info)) {
      throw new FarmError(
        "INVALID_ARGUMENT",
        `UPDATE_INFO carries a JSON object, e.g. {"key": "server:<key>", "addr": [null, <port>]}, got ${clip(JSON.stringify(info))}`,
      );
    }
    const update = { ...(info as Record<string, unknown>) };
    if ("addr" in update) {
      const addr = update.addr;
      if (!Array.isArray(addr) || addr.length !== 2)
        throw new FarmError("INVALID_ARGUMENT", `UPDATE_INFO's addr is [host | null, port], got ${clip(JSON.stringify(addr))}`);
      this.dialect = typeof addr[1] === "string" ? "c++" : "python";
      // As TVM's tracker: a server that names no address is where its connection comes from.
      update.addr = [
        addr[0] === null ? this.peerHost : name(addr[0], "UPDATE_INFO's addr host"),
        addr[1] === null ? null : portOf(addr[1], "UPDATE_INFO's addr port"),
      ];
    }
    const key = "key" in update ? update.key : this.info.key;
    if (this.server && key !== `server:${this.server.key}`) {
      throw new FarmError(
        "INVALID_ARGUMENT",
        `this connection registered TVM server "server:${this.server.key}"; it cannot become ${clip(JSON.stringify(key))} (reconnect to register another)`,
      );
    }
    if (typeof key === "string" && key.startsWith("server:")) {
      const rpcKey = name(key.slice("server:".length), "UPDATE_INFO's server key");
      const refused = this.ctx.admission.refusesKey(rpcKey);
      if (refused) {
        this.refuse("key", refused);
        throw new FarmError("PERMISSION_DENIED", refused);
      }
      Object.assign(this.info, update);
      this.server ??= new TvmServer(this.ctx.farm, this, rpcKey, this.info);
    } else {
      Object.assign(this.info, update);
    }
    this.write(TRACKER_CODES.SUCCESS);
  }

  private fail(err: FarmError, what: string): void {
    this.ctx.farm.log.info({ peer: this.peer, code: err.code }, `tvm port: ${what} from ${this.peer} refused: ${err.message}`);
    this.write([TRACKER_CODES.FAIL, err.toString()]);
  }

  private refuse(reason: "network" | "key" | "address", why: string): void {
    this.ctx.refused(reason);
    this.ctx.farm.log.warn({ peer: this.peer, reason }, `tvm port: refused ${this.peer}: ${why}`);
    this.ctx.farm.audit.record({
      event: "refused",
      who: "unknown",
      kind: "tvm",
      peer: this.peer,
      doing: "use the TVM port",
      code: "PERMISSION_DENIED",
      reason: why,
    });
  }

  /** One frame in one write; a peer that leaves too many replies unread is dropped. */
  private write(value: unknown): void {
    if (this.closing || this.socket.destroyed) return;
    this.socket.write(encodeFrame(value));
    if (this.socket.writableLength > MAX_UNREAD_BYTES) this.close(`it left ${this.socket.writableLength} bytes of replies unread`);
  }

  private ended(): void {
    if (this.closed) return;
    this.closed = true;
    this.closing = true;
    clearTimeout(this.handshakeTimer);
    for (const waiter of this.waiting) this.ctx.farm.scheduler.cancel(waiter);
    this.waiting.clear();
    this.server?.gone(`its tracker connection from ${this.peer} closed`);
    this.ctx.closed(this);
  }
}

/** A non-empty string of at most MAX_NAME_CHARS, or INVALID_ARGUMENT naming `what`. */
function name(value: unknown, what: string): string {
  if (typeof value === "string" && value.length > 0 && value.length <= MAX_NAME_CHARS) return value;
  throw new FarmError("INVALID_ARGUMENT", `${what} is a string of 1 to ${MAX_NAME_CHARS} characters, got ${clip(JSON.stringify(value))}`);
}

/** A TCP port, as a number or (the C++ server's UPDATE_INFO) a string of digits. */
function portOf(value: unknown, what: string): number {
  const n = typeof value === "string" && /^\d{1,5}$/.test(value) ? Number(value) : value;
  if (typeof n === "number" && Number.isInteger(n) && n >= 1 && n <= 65535) return n;
  throw new FarmError("INVALID_ARGUMENT", `${what} is a TCP port (1 to 65535), got ${clip(JSON.stringify(value))}`);
}

/** What a peer sent, cut short for a message. */
function clip(text: string | undefined): string {
  const t = text ?? "undefined";
  return t.length > 80 ? `${t.slice(0, 77)}...` : t;
}
