/**
 * The tracker's HTTP side (`--metrics-port`): `/metrics` for Prometheus, the
 * live view page and its ws feed. Parts register routes; nothing here knows
 * what they serve. Unknown paths are 404, a handler that throws is 500 (and
 * logged); the gRPC side is unaffected either way.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { Duplex } from "node:stream";
import { FarmError, type Logger } from "../protos/index.ts";

export type HttpHandler = (req: IncomingMessage, res: ServerResponse) => void | Promise<void>;
export type UpgradeHandler = (req: IncomingMessage, socket: Duplex, head: Buffer) => void;

export class TrackerHttp {
  private readonly routes = new Map<string, HttpHandler>();
  private readonly upgrades = new Map<string, UpgradeHandler>();
  private readonly server: Server;
  private boundPort = 0;
  private readonly closers: Array<() => Promise<void>> = [];

  constructor(private readonly log: Logger) {
    this.server = createServer((req, res) => void this.handle(req, res));
    this.server.on("upgrade", (req: IncomingMessage, socket: Duplex, head: Buffer) => {
      const handler = this.upgrades.get(pathOf(req));
      if (!handler) {
        socket.end("HTTP/1.1 404 Not Found\r\nConnection: close\r\n\r\n");
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

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const handler = this.routes.get(pathOf(req));
    if (req.method !== "GET" && req.method !== "HEAD") {
      res.writeHead(405, { allow: "GET, HEAD", "content-type": "text/plain" }).end("only GET and HEAD\n");
      return;
    }
    if (!handler) {
      res.writeHead(404, { "content-type": "text/plain" }).end(`no such page: ${pathOf(req)}; try /metrics or /\n`);
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

function pathOf(req: IncomingMessage): string {
  return new URL(req.url ?? "/", "http://tracker").pathname;
}
