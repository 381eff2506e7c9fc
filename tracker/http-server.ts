/**
 * The tracker's HTTP side (`--metrics-port`): `/metrics` for Prometheus, the
 * live view page and its ws feed, and the probes `/healthz` and `/readyz`
 * (runtime/probes.ts), which take no token. Parts register routes; nothing
 * here knows what they serve. Unknown paths are 404, a handler that throws is
 * 500 (and logged); the gRPC side is unaffected either way.
 */
import type { IncomingMessage, Server, ServerResponse } from "node:http";
import type { Duplex } from "node:stream";
import { FarmError } from "../protos/index.ts";
import { answerProbe, httpServer, httpToken, isProbePath, type Logger, type Readiness, type ServerTls } from "../runtime/index.ts";

/**
 * Checks a request's token (throws UNAUTHENTICATED / PERMISSION_DENIED);
 * `onLost` ends a long-lived connection when its token is revoked. Returns
 * the release of what it registered.
 */
export type HttpGuard = (token: () => string | undefined, peer: string, what: string, onLost?: (err: FarmError) => void) => () => void;

export interface TrackerHttpOptions {
  /** HTTPS with these files (reloaded when they change). */
  tls?: ServerTls;
  /** Who may see the pages; absent: everyone. Probes are open to all. */
  guard?: HttpGuard;
  /** What `/readyz` says. */
  notReady: Readiness;
}

/** 401 for no or a bad token, 403 for a token that may not: what an HTTP client (Prometheus, a browser) expects. */
function httpStatusOf(err: FarmError): number {
  return err.code === "UNAUTHENTICATED" ? 401 : err.code === "PERMISSION_DENIED" ? 403 : 400;
}

export type HttpHandler = (req: IncomingMessage, res: ServerResponse) => void | Promise<void>;
export type UpgradeHandler = (req: IncomingMessage, socket: Duplex, head: Buffer) => void;

export class TrackerHttp {
  private readonly routes = new Map<string, HttpHandler>();
  private readonly upgrades = new Map<string, UpgradeHandler>();
  private readonly server: Server;
  /** "https" or "http". */
  readonly scheme: "https" | "http";
  private boundPort = 0;
  private readonly closers: Array<() => Promise<void>> = [];

  constructor(
    private readonly log: Logger,
    private readonly opts: TrackerHttpOptions,
  ) {
    const { server, secure, stopWatching } = httpServer(opts.tls, (req, res) => void this.handle(req, res));
    this.server = server;
    this.scheme = secure ? "https" : "http";
    this.closers.push(async () => stopWatching());
    this.server.on("upgrade", (req: IncomingMessage, socket: Duplex, head: Buffer) => {
      const handler = this.upgrades.get(pathOf(req));
      if (!handler) {
        socket.end("HTTP/1.1 404 Not Found\r\nConnection: close\r\n\r\n");
        return;
      }
      try {
        // The feed socket lives on: it ends when its token is revoked.
        const release = this.admit(req, `watch the live feed`, () => socket.destroy());
        socket.once("close", release);
      } catch (err) {
        const e = FarmError.from(err);
        socket.end(`HTTP/1.1 ${httpStatusOf(e)} ${e.code}\r\nConnection: close\r\ncontent-type: text/plain\r\n\r\n${e.message}\n`);
        return;
      }
      handler(req, socket, head);
    });
    // A client that opens connections and never finishes a request must not pin memory.
    this.server.headersTimeout = 10_000;
    this.server.requestTimeout = 30_000;
  }

  /** Serves GET (and HEAD) of `path` with `handler`. */
  route(path: string, handler: HttpHandler): void {
    this.routes.set(path, handler);
  }

  /** Takes over WebSocket upgrades of `path`. */
  upgrade(path: string, handler: UpgradeHandler): void {
    this.upgrades.set(path, handler);
  }

  /** Runs `fn` first when the HTTP side closes: upgraded sockets (ws) would otherwise keep close() waiting. */
  onClose(fn: () => Promise<void>): void {
    this.closers.push(fn);
  }

  get port(): number {
    return this.boundPort;
  }

  async listen(host: string, port: number): Promise<number> {
    await new Promise<void>((resolve, reject) => {
      const onError = (err: Error) => reject(new FarmError("UNAVAILABLE", `tracker cannot serve HTTP on ${host}:${port}: ${err.message}`, { cause: err }));
      this.server.once("error", onError);
      this.server.listen(port, host, () => {
        this.server.off("error", onError);
        resolve();
      });
    });
    this.boundPort = (this.server.address() as { port: number }).port;
    return this.boundPort;
  }

  async close(): Promise<void> {
    await Promise.all(this.closers.map((fn) => fn()));
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  /** Runs the guard, if any: throws a FarmError to refuse; returns the release of a hold. */
  private admit(req: IncomingMessage, what: string, onLost?: () => void): () => void {
    if (!this.opts.guard) return () => {};
    // The token is read inside the guard: a malformed one is a refusal it audits.
    return this.opts.guard(() => httpToken(req), peerOf(req), what, onLost && (() => onLost()));
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const handler = this.routes.get(pathOf(req));
    if (req.method !== "GET" && req.method !== "HEAD") {
      res.writeHead(405, { allow: "GET, HEAD", "content-type": "text/plain" }).end("only GET and HEAD\n");
      return;
    }
    if (isProbePath(pathOf(req))) {
      answerProbe(pathOf(req), res, this.opts.notReady);
      return;
    }
    if (!handler) {
      res.writeHead(404, { "content-type": "text/plain" }).end(`no such page: ${pathOf(req)}; try /metrics or /\n`);
      return;
    }
    try {
      this.admit(req, `read ${pathOf(req)}`)();
    } catch (err) {
      const e = FarmError.from(err);
      res
        .writeHead(httpStatusOf(e), {
          "content-type": "text/plain",
          ...(e.code === "UNAUTHENTICATED" ? { "www-authenticate": 'Bearer realm="kernelfarm"' } : {}),
        })
        .end(`${e.message}\n`);
      return;
    }
    try {
      await handler(req, res);
    } catch (err) {
      this.log.error({ path: pathOf(req), err: (err as Error).message }, "HTTP handler failed");
      if (!res.headersSent) res.writeHead(500, { "content-type": "text/plain" });
      res.end(`internal error: ${(err as Error).message}\n`);
    }
  }
}

function peerOf(req: IncomingMessage): string {
  return `${req.socket.remoteAddress ?? "?"}:${req.socket.remotePort ?? "?"}`;
}

/**
 * The path of a request's target, without its query. Not through `new URL`:
 * a target such as `//` or `//:99999` reads there as an authority without a
 * host and throws — from an event handler, which took the tracker down.
 * Any target that is not origin-form (`/path?query`) matches no route.
 */
export function pathOf(req: Pick<IncomingMessage, "url">): string {
  const target = req.url ?? "/";
  if (!target.startsWith("/")) return target.startsWith("*") ? "*" : "";
  const end = target.search(/[?#]/);
  return end < 0 ? target : target.slice(0, end);
}
