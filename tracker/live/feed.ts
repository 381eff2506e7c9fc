/**
 * The live view: `GET /` serves the page (page.html, its `{{FARM_VERSION}}`
 * filled in: the header says the version before the feed connects), `/feed` is a
 * WebSocket that sends a snapshot of the farm and then every farm event
 * (protocol.ts, docs/live-view.md).
 *
 * Cost with many pages open: each flush is encoded once and the same buffer
 * goes to every socket; events of one flush window (`flushIntervalMs`) go out
 * as one message, with superseded board and queue states dropped. A backlog
 * past `maxBatchEvents` is replaced by a fresh snapshot. Memory per client is
 * bounded: one whose unsent bytes pass `maxBufferedBytes` is closed (1013).
 */
import { readFileSync } from "node:fs";
import type { IncomingMessage } from "node:http";
import type { Duplex } from "node:stream";
import { Packr, Unpackr } from "msgpackr";
import { WebSocketServer, type RawData, type WebSocket } from "ws";
import { FARM_VERSION, FarmError } from "../../protos/index.ts";
import { type Logger } from "../../runtime/index.ts";
import type { FarmEvent, FarmEvents } from "../events.ts";
import type { TrackerHttp } from "../http-server.ts";
import type { Registry } from "../registry.ts";
import type { Scheduler } from "../scheduler.ts";
import { buildSummary } from "../summary.ts";
import { bytesNow } from "../lane-bytes.ts";
import { LiveHistory } from "./history.ts";
import { FEED_PATH, type FeedMessage, type FeedSnapshot, type FeedStats } from "./protocol.ts";

export const DEFAULT_MAX_BUFFERED_BYTES = 1 << 20;
export const DEFAULT_MAX_FEED_CLIENTS = 64;
export const DEFAULT_FLUSH_INTERVAL_MS = 50;
export const DEFAULT_MAX_BATCH_EVENTS = 5000;
export const DEFAULT_SAMPLE_INTERVAL_MS = 1000;
export const DEFAULT_SERIES_MS = 5 * 60_000;
export const DEFAULT_RECENT_SESSIONS = 100;
/** Server pings; a client that has not answered the previous one is cut. */
export const DEFAULT_PING_INTERVAL_MS = 30_000;
/** Largest message a page may send (it only ever sends a ping). */
export const MAX_CLIENT_MESSAGE_BYTES = 4096;
/** On shutdown, how long a feed client has to answer the close before its socket is cut. */
export const CLOSE_GRACE_MS = 500;
/** Code a dropped slow client is closed with ("try again later"). */
export const SLOW_CLIENT_CLOSE_CODE = 1013;

export interface LiveViewOptions {
  /** A client with more unsent bytes than this is dropped. */
  maxBufferedBytes?: number;
  maxClients?: number;
  /** Events within this window after a flush go out together. */
  flushIntervalMs?: number;
  /** A flush window with more events than this sends a snapshot instead. */
  maxBatchEvents?: number;
  sampleIntervalMs?: number;
  /** How much of the series is kept (and sent in a snapshot). */
  seriesMs?: number;
  recentSessions?: number;
  pingIntervalMs?: number;
}

export type ResolvedLiveViewOptions = Required<LiveViewOptions>;

export function resolveLiveViewOptions(opts: LiveViewOptions = {}): ResolvedLiveViewOptions {
  const resolved: ResolvedLiveViewOptions = {
    maxBufferedBytes: opts.maxBufferedBytes ?? DEFAULT_MAX_BUFFERED_BYTES,
    maxClients: opts.maxClients ?? DEFAULT_MAX_FEED_CLIENTS,
    flushIntervalMs: opts.flushIntervalMs ?? DEFAULT_FLUSH_INTERVAL_MS,
    maxBatchEvents: opts.maxBatchEvents ?? DEFAULT_MAX_BATCH_EVENTS,
    sampleIntervalMs: opts.sampleIntervalMs ?? DEFAULT_SAMPLE_INTERVAL_MS,
    seriesMs: opts.seriesMs ?? DEFAULT_SERIES_MS,
    recentSessions: opts.recentSessions ?? DEFAULT_RECENT_SESSIONS,
    pingIntervalMs: opts.pingIntervalMs ?? DEFAULT_PING_INTERVAL_MS,
  };
  for (const [name, value] of Object.entries(resolved)) {
    if (!Number.isFinite(value) || value < 0)
      throw new FarmError("INVALID_ARGUMENT", `live view option ${name} must be a non-negative number, got ${value}`, { details: { option: name } });
  }
  if (resolved.sampleIntervalMs < 100)
    throw new FarmError("INVALID_ARGUMENT", `live view option sampleIntervalMs must be at least 100, got ${resolved.sampleIntervalMs}`, {
      details: { option: "sampleIntervalMs" },
    });
  return resolved;
}

/** What the live view reads from the tracker (the Tracker has all of it). */
export interface LiveViewSource {
  readonly events: FarmEvents;
  readonly registry: Registry;
  readonly scheduler: Scheduler;
  readonly options: { readonly logger: Logger };
}

const PAGE_URL = new URL("./page.html", import.meta.url);
/** Where page.html says the farm's version. */
const VERSION_PLACEHOLDER = "{{FARM_VERSION}}";
const PAGE_HEADERS = {
  "content-type": "text/html; charset=utf-8",
  "cache-control": "no-cache",
  // Everything is inline and nothing is fetched but the feed.
  "content-security-policy":
    "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src data:; connect-src 'self'; base-uri 'none'; form-action 'none'",
  "x-content-type-options": "nosniff",
};

/**
 * Plain msgpack only: no records, and fields that are undefined left out
 * rather than sent as msgpackr's undefined extension. (`skipValues` is in
 * msgpackr's pack.js but not in its typings, hence the untyped object.)
 */
const PACK_OPTIONS = { useRecords: false, skipValues: [undefined] };

interface Client {
  readonly ws: WebSocket;
  readonly peer: string;
  alive: boolean;
}

/**
 * Serves the live view on `http` for `tracker`. Sockets close with the HTTP
 * side (`http.close()`); `close()` on the result stops it earlier.
 */
export function installLiveView(http: TrackerHttp, tracker: LiveViewSource, opts: LiveViewOptions = {}): LiveView {
  const view = new LiveView(tracker, resolveLiveViewOptions(opts));
  let page: Buffer | undefined;
  http.route("/", (_req, res) => {
    page ??= Buffer.from(readFileSync(PAGE_URL, "utf8").replaceAll(VERSION_PLACEHOLDER, FARM_VERSION));
    res.writeHead(200, { ...PAGE_HEADERS, "content-length": page.length }).end(page);
  });
  http.upgrade(FEED_PATH, (req, socket, head) => view.handleUpgrade(req, socket, head));
  http.onClose(() => view.close());
  return view;
}

export class LiveView {
  private readonly log: Logger;
  private readonly wss = new WebSocketServer({ noServer: true, maxPayload: MAX_CLIENT_MESSAGE_BYTES, perMessageDeflate: false });
  private readonly clients = new Set<Client>();
  private readonly history: LiveHistory;
  private readonly packr = new Packr(PACK_OPTIONS);
  private readonly unpackr = new Unpackr({ useRecords: false, mapsAsObjects: true });
  private readonly startedAt = Date.now();
  private readonly unsubscribe: () => void;
  private readonly sampler: NodeJS.Timeout;
  private readonly pinger: NodeJS.Timeout;
  private pending: FarmEvent[] = [];
  private flushTimer: NodeJS.Timeout | undefined;
  private flushImmediate: NodeJS.Immediate | undefined;
  private lastFlush = 0;
  private dropped = 0;
  private closed = false;

  constructor(
    private readonly source: LiveViewSource,
    readonly options: ResolvedLiveViewOptions,
  ) {
    this.log = source.options.logger.child({ component: "live-view" });
    this.history = new LiveHistory(source.registry, source.scheduler, {
      maxSessions: options.recentSessions,
      maxSamples: Math.max(1, Math.ceil(options.seriesMs / options.sampleIntervalMs)),
    });
    this.unsubscribe = source.events.subscribe((event) => this.onEvent(event));
    this.sampler = setInterval(() => this.onSample(), options.sampleIntervalMs).unref();
    this.pinger = setInterval(() => this.pingAll(), options.pingIntervalMs || 2 ** 30).unref();
  }

  get stats(): FeedStats {
    return { clients: this.clients.size, dropped: this.dropped };
  }

  /** The snapshot a client gets on connect. */
  snapshot(): FeedSnapshot {
    const summary = buildSummary(this.source.registry, this.source.scheduler, this.startedAt);
    return {
      kind: "snapshot",
      at: Date.now(),
      summary: summary as FeedSnapshot["summary"],
      sessions: this.history.sessions(),
      boardIssues: this.history.boardIssues(),
      series: { intervalMs: this.options.sampleIntervalMs, samples: this.history.series() },
      feed: this.stats,
      bytes: bytesNow(this.source.registry.boards()),
    };
  }

  handleUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer): void {
    const reject = (status: string, why: string) => {
      this.log.info({ peer: req.socket.remoteAddress, why }, "live view: refused a feed connection");
      socket.end(`HTTP/1.1 ${status}\r\nConnection: close\r\nContent-Type: text/plain\r\n\r\n${why}\n`);
    };
    if (this.closed) return reject("503 Service Unavailable", "the tracker is shutting down");
    if (this.clients.size >= this.options.maxClients) return reject("503 Service Unavailable", `too many feed clients (${this.options.maxClients})`);
    // A page of another site must not read the farm through an operator's browser.
    const origin = req.headers.origin;
    if (origin && !sameHost(origin, req.headers.host)) return reject("403 Forbidden", `origin ${origin} is not this tracker`);
    this.wss.handleUpgrade(req, socket, head, (ws) => this.accept(ws, `${req.socket.remoteAddress}:${req.socket.remotePort}`));
  }

  /**
   * Closes every feed socket (1001, "the tracker is shutting down") and stops
   * the timers; resolves when the sockets are closed — peers get
   * `CLOSE_GRACE_MS` to answer the close, then their sockets are cut.
   */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.unsubscribe();
    clearInterval(this.sampler);
    clearInterval(this.pinger);
    clearTimeout(this.flushTimer);
    if (this.flushImmediate) clearImmediate(this.flushImmediate);
    const sockets = [...this.wss.clients];
    this.clients.clear();
    await Promise.all(
      sockets.map(async (ws) => {
        if (ws.readyState === ws.CLOSED) return;
        const closed = new Promise<void>((resolve) => ws.once("close", () => resolve()));
        if (ws.readyState === ws.OPEN) ws.close(1001, "the tracker is shutting down");
        const cut = setTimeout(() => ws.terminate(), CLOSE_GRACE_MS);
        await closed;
        clearTimeout(cut);
      }),
    );
    this.wss.close();
  }

  private accept(ws: WebSocket, peer: string): void {
    if (this.closed) {
      ws.terminate();
      return;
    }
    const client: Client = { ws, peer, alive: true };
    this.clients.add(client);
    this.log.debug({ peer, clients: this.clients.size }, "live view: feed client connected");
    ws.on("pong", () => (client.alive = true));
    ws.on("message", (data, isBinary) => this.onClientMessage(client, data, isBinary));
    ws.on("error", (err) => this.log.debug({ peer, err: err.message }, "live view: feed socket error"));
    ws.on("close", (code) => {
      this.clients.delete(client);
      this.log.debug({ peer, code, clients: this.clients.size }, "live view: feed client left");
    });
    this.sendTo(client, this.encode(this.snapshot()));
  }

  private onClientMessage(client: Client, data: RawData, isBinary: boolean): void {
    let kind: unknown;
    try {
      if (!isBinary) throw new Error("text frame (the feed speaks msgpack in binary frames)");
      const msg: unknown = this.unpackr.unpack(Buffer.isBuffer(data) ? data : Buffer.concat(Array.isArray(data) ? data : [Buffer.from(data)]));
      kind = msg && typeof msg === "object" ? (msg as { kind?: unknown }).kind : undefined;
      if (kind !== "ping")
        throw new Error(
          `unknown message ${kind === undefined ? (msg === null ? "null" : typeof msg) : JSON.stringify(kind)} (only { kind: "ping" } is understood)`,
        );
    } catch (err) {
      const message = `ignored a message from the page: ${(err as Error).message}`;
      this.log.debug({ peer: client.peer }, message);
      this.sendTo(client, this.encode({ kind: "error", message }));
      return;
    }
    this.sendTo(client, this.encode({ kind: "pong", at: Date.now() }));
  }

  private onEvent(event: FarmEvent): void {
    this.history.record(event);
    if (this.clients.size === 0) return;
    this.pending.push(event);
    if (this.flushTimer || this.flushImmediate) return;
    const wait = this.lastFlush + this.options.flushIntervalMs - Date.now();
    if (wait <= 0) this.flushImmediate = setImmediate(() => this.flush());
    else this.flushTimer = setTimeout(() => this.flush(), wait);
  }

  private flush(): void {
    this.flushTimer = undefined;
    this.flushImmediate = undefined;
    this.lastFlush = Date.now();
    const events = coalesce(this.pending);
    this.pending = [];
    if (events.length === 0 || this.clients.size === 0) return;
    let msg: FeedMessage;
    if (events.length > this.options.maxBatchEvents) {
      this.log.debug({ events: events.length }, "live view: event flood, sending a snapshot instead");
      msg = this.snapshot();
    } else {
      msg = events.length === 1 ? { kind: "event", event: events[0]! } : { kind: "events", events };
    }
    this.broadcast(this.encode(msg));
  }

  private onSample(): void {
    const sample = this.history.sample();
    if (this.clients.size > 0) this.broadcast(this.encode({ kind: "sample", sample, feed: this.stats, bytes: bytesNow(this.source.registry.boards()) }));
  }

  private pingAll(): void {
    for (const c of this.clients) {
      if (!c.alive) {
        this.log.info({ peer: c.peer }, "live view: feed client did not answer a ping; closing it");
        c.ws.terminate();
        this.clients.delete(c);
        continue;
      }
      c.alive = false;
      c.ws.ping();
    }
  }

  private encode(msg: FeedMessage): Buffer {
    return this.packr.pack(msg);
  }

  private broadcast(buf: Buffer): void {
    for (const c of this.clients) this.sendTo(c, buf);
  }

  /** Sends unless the client is too far behind, in which case it is dropped. */
  private sendTo(client: Client, buf: Buffer): void {
    const ws = client.ws;
    if (ws.readyState !== ws.OPEN) return;
    if (ws.bufferedAmount + buf.length > this.options.maxBufferedBytes) {
      this.dropped++;
      this.clients.delete(client);
      const reason = `too slow: more than ${this.options.maxBufferedBytes} bytes unsent`;
      this.log.warn({ peer: client.peer, bufferedBytes: ws.bufferedAmount, dropped: this.dropped }, `live view: dropped a feed client (${reason})`);
      ws.close(SLOW_CLIENT_CLOSE_CODE, reason);
      // A reader that never catches up never answers the close: cut it loose then.
      setTimeout(() => ws.terminate(), 10_000).unref();
      return;
    }
    ws.send(buf, { binary: true });
  }
}

/**
 * Drops events a later one in the same batch supersedes: a board "changed"
 * followed by any later event of that board, a queue depth followed by a
 * later one of that key. Order is kept.
 */
export function coalesce(events: FarmEvent[]): FarmEvent[] {
  if (events.length < 2) return events;
  const seenBoards = new Set<string>();
  const seenQueues = new Set<string>();
  const out: FarmEvent[] = [];
  for (let i = events.length - 1; i >= 0; i--) {
    const e = events[i]!;
    if (e.type === "board") {
      const id = e.board.id ?? "";
      if (e.change === "changed" && seenBoards.has(id)) continue;
      seenBoards.add(id);
    } else if (e.type === "queue") {
      if (seenQueues.has(e.key)) continue;
      seenQueues.add(e.key);
    }
    out.push(e);
  }
  return out.reverse();
}

function sameHost(origin: string, host: string | undefined): boolean {
  try {
    return new URL(origin).host === host;
  } catch {
    return false;
  }
}
