/**
 * `kfarm status --watch`: the tracker's live feed (ws://HTTP/feed) in a
 * terminal — the summary table from the snapshot, then one line per farm
 * event, until stopped. A dropped feed is said so and redialled with capped,
 * jittered backoff; each reconnect prints the table again.
 */
import { unpack } from "msgpackr";
import WebSocket from "ws";
import { httpClientOptions, type ClientSecurity } from "../runtime/index.ts";
import { formatSummary, type FarmEvent, type FeedMessage, type FeedSnapshot } from "../tracker/index.ts";

export const WATCH_BACKOFF_INITIAL_MS = 500;
export const WATCH_BACKOFF_MAX_MS = 10_000;
/** A dial that has not opened within this is given up and retried. */
export const WATCH_CONNECT_TIMEOUT_MS = 5_000;
/** The feed sends a sample every second; this long without any message means it is dead. */
export const WATCH_SILENCE_MS = 10_000;

export interface WatchOptions {
  /** The tracker's HTTP address, HOST:PORT (its --metrics-port). */
  http: string;
  /** Print JSON lines (the feed's messages, samples left out) instead of text. */
  json?: boolean;
  /** The summary table's widest line (formatSummary's `width`); 0 or none: any. */
  width?: number;
  /** Where lines go; default stdout. */
  write?: (line: string) => void;
  /** Stops watching. */
  signal?: AbortSignal;
  /** TLS (wss://) and the operator token of a protected farm. */
  security?: ClientSecurity;
}

/** Watches until `signal` aborts. */
export async function watchFarm(opts: WatchOptions): Promise<void> {
  const write = opts.write ?? ((line: string) => process.stdout.write(`${line}\n`));
  const url = `${opts.security?.tls ? "wss" : "ws"}://${opts.http}/feed`;
  let failures = 0;
  while (!opts.signal?.aborted) {
    const outcome = await watchOnce(url, opts, write);
    if (opts.signal?.aborted) break;
    if (outcome.gotSnapshot) failures = 0;
    const delay = backoff(failures++);
    write(`${stamp(Date.now())}  ${outcome.why}; retrying in ${(delay / 1000).toFixed(1)} s`);
    await sleep(delay, opts.signal);
  }
}

/** 0.5 s, 1 s, 2 s … 10 s, each ±25 %. */
export function backoff(failures: number): number {
  const base = Math.min(WATCH_BACKOFF_MAX_MS, WATCH_BACKOFF_INITIAL_MS * 2 ** Math.min(failures, 10));
  return Math.round(base * (0.75 + Math.random() * 0.5));
}

/** One connection: resolves when it ends, saying why. */
function watchOnce(url: string, opts: WatchOptions, write: (line: string) => void): Promise<{ gotSnapshot: boolean; why: string }> {
  return new Promise((resolve) => {
    let gotSnapshot = false;
    let settled = false;
    let lastMessage = Date.now();
    const ws = new WebSocket(url, {
      handshakeTimeout: WATCH_CONNECT_TIMEOUT_MS,
      maxPayload: 256 << 20,
      perMessageDeflate: false,
      ...httpClientOptions(opts.security ?? {}),
    });
    const finish = (why: string) => {
      if (settled) return;
      settled = true;
      clearInterval(watchdog);
      opts.signal?.removeEventListener("abort", onAbort);
      ws.removeAllListeners();
      ws.on("error", () => {});
      if (ws.readyState === WebSocket.OPEN || ws.readyState === WebSocket.CONNECTING) ws.terminate();
      resolve({ gotSnapshot, why });
    };
    const onAbort = () => {
      if (ws.readyState === WebSocket.OPEN) ws.close(1000, "watch stopped");
      finish("stopped");
    };
    opts.signal?.addEventListener("abort", onAbort, { once: true });
    const watchdog = setInterval(() => {
      if (ws.readyState === WebSocket.OPEN && Date.now() - lastMessage > WATCH_SILENCE_MS)
        finish(`the feed at ${url} went silent for ${WATCH_SILENCE_MS / 1000} s`);
    }, 1000);
    ws.on("message", (data: Buffer, isBinary: boolean) => {
      lastMessage = Date.now();
      let msg: FeedMessage;
      try {
        if (!isBinary) throw new Error("a text frame");
        msg = unpack(data) as FeedMessage;
      } catch (err) {
        write(`${stamp(Date.now())}  (an undecodable feed message: ${(err as Error).message})`);
        return;
      }
      if (msg.kind === "snapshot") gotSnapshot = true;
      for (const line of opts.json ? jsonLines(msg) : textLines(msg, opts.http, opts.width)) write(line);
    });
    ws.on("close", (code, reason) => finish(`feed disconnected (${code}${reason.length ? ` ${reason.toString()}` : ""})`));
    ws.on("error", (err) => finish(`cannot reach ${url}: ${(err as NodeJS.ErrnoException).code ?? err.message}`));
  });
}

function jsonLines(msg: FeedMessage): string[] {
  return msg.kind === "sample" || msg.kind === "pong" ? [] : [JSON.stringify(msg)];
}

function textLines(msg: FeedMessage, http: string, width: number | undefined): string[] {
  switch (msg.kind) {
    case "snapshot":
      return snapshotLines(msg, http, width);
    case "event":
      return [formatEvent(msg.event)];
    case "events":
      return msg.events.map(formatEvent);
    case "error":
      return [`${stamp(Date.now())}  tracker says: ${msg.message}`];
    default:
      return [];
  }
}

function snapshotLines(s: FeedSnapshot, http: string, width: number | undefined): string[] {
  const failed = s.sessions.filter((x) => x.reason !== "OK").length;
  return [
    formatSummary(s.summary, `${http} (live feed)`, { width }),
    "",
    `Recent sessions: ${s.sessions.length} ended${failed ? `, ${failed} failed` : ""}; ${s.feed.clients} feed client(s)`,
    `${stamp(s.at)}  watching farm events (Ctrl-C to stop)`,
  ];
}

/** "HH:MM:SS.mmm" in local time. */
export function stamp(ms: number): string {
  const d = new Date(ms);
  const p = (n: number, w = 2) => String(n).padStart(w, "0");
  return `${p(d.getHours())}:${p(d.getMinutes())}:${p(d.getSeconds())}.${p(d.getMilliseconds(), 3)}`;
}

function bytes(n: number | undefined): string {
  if (n === undefined) return "?";
  if (n < 1024) return `${n} B`;
  if (n < 1 << 20) return `${(n / 1024).toFixed(1)} KiB`;
  return `${(n / (1 << 20)).toFixed(1)} MiB`;
}

/** One line per event: time, what happened, details. */
export function formatEvent(e: FarmEvent): string {
  const line = (what: string, details: string) => `${stamp(e.at)}  ${what.padEnd(16)}  ${details}`;
  switch (e.type) {
    case "agent":
      return line(`agent ${e.change}`, `${e.name} (${e.agent}) from ${e.peer}${e.reason ? `: ${e.reason}` : ""}`);
    case "board": {
      const b = e.board;
      const session = b.session_id ? ` session=${b.session_id}${b.client_id ? ` client=${b.client_id}` : ""}` : "";
      const health = b.health && b.health !== "healthy" ? ` health=${b.health}` : "";
      return line(`board ${e.change}`, `${b.id} key=${b.key} kind=${b.kind} state=${b.state}${health}${session}${e.reason ? `: ${e.reason}` : ""}`);
    }
    case "session":
      return e.change === "granted"
        ? line("session granted", `${e.session} on ${e.board} (key ${e.key}, client ${e.client}${e.queuedMs !== undefined ? `, queued ${e.queuedMs} ms` : ""})`)
        : line(
            "session ended",
            `${e.session} on ${e.board}: ${e.reason ?? "OK"}${e.message ? ` (${e.message})` : ""} after ${e.durationMs ?? "?"} ms` +
              ` (${bytes(e.bytesToBoard)} to board, ${bytes(e.bytesFromBoard)} back)`,
          );
    case "queue":
      return line("queue", `${e.key}: ${e.pending} pending`);
    case "heartbeat_missed":
      return line("heartbeat missed", `${e.agent} silent for ${e.silentMs} ms`);
    case "health":
      return line("health", `${e.board} ${e.from} → ${e.to}${e.reason ? `: ${e.reason}` : ""}`);
    default: {
      // Event types added after this file: print them whole.
      const { type, at: _at, ...rest } = e as { type: string; at: number } & Record<string, unknown>;
      return line(type, JSON.stringify(rest));
    }
  }
}

function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve();
    const done = () => {
      clearTimeout(timer);
      signal?.removeEventListener("abort", done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal?.addEventListener("abort", done, { once: true });
  });
}
