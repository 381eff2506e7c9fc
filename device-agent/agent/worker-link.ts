/**
 * The session workers' way to the tracker when they have no network of their
 * own (device-agent/agent/sandbox.ts): the agent listens on a unix socket in its
 * scratch folder — a path, which a process in another network namespace can
 * still connect to — and for each connection opens one to the tracker and
 * pipes the bytes both ways, as the tracker's relay does (back-pressure
 * through pipe()). It never parses them.
 *
 * With TLS to the tracker the forwarder speaks it (the agent's CA, client
 * certificate and server name) and workers speak plaintext HTTP/2 to the
 * socket: the agent's private key and token never reach a worker. The socket
 * is the agent's, mode 0660 with the workers' group (0600 when workers run
 * as the agent's user): other local users cannot borrow the agent's
 * certificate through it.
 */
import { chmodSync, chownSync, readFileSync, rmSync } from "node:fs";
import { connect as netConnect, createServer, isIP, type Server, type Socket } from "node:net";
import { connect as tlsConnect } from "node:tls";
import { parseAddress, type Logger } from "../../runtime/index.ts";

/**
 * The part of the agent's ClientSecurity (runtime/credentials.ts) the
 * forwarder uses: TLS only. It has no token to forward — workers' streams
 * are authorised by their session's ticket, never by the agent's identity.
 */
export interface LinkSecurity {
  tls?: { caFile: string; certFile?: string; keyFile?: string; serverName?: string };
}

/** Linux's limit on a socket path (sun_path), with its terminating zero. */
const MAX_SOCKET_PATH = 107;
/** Errors of a connection that never reached the tracker. */
const UNREACHABLE = /^(ECONNREFUSED|ETIMEDOUT|EHOSTUNREACH|ENETUNREACH|ENOTFOUND|EAI_AGAIN)$/;

export class WorkerLink {
  private readonly sockets = new Set<Socket>();

  private constructor(
    private readonly server: Server,
    readonly path: string,
  ) {}

  /** What a worker dials (grpc-js understands `unix:`). */
  get address(): string {
    return `unix:${this.path}`;
  }

  /** Listens at `path` and forwards each connection to `tracker` (HOST:PORT) with `security`'s TLS, if any. */
  static async listen(path: string, tracker: string, security: LinkSecurity, group: number | undefined, log: Logger): Promise<WorkerLink> {
    if (Buffer.byteLength(path) > MAX_SOCKET_PATH) throw new Error(`the workers' socket path ${path} is longer than ${MAX_SOCKET_PATH} bytes; give the agent a shorter --work-root`);
    const { host, port } = parseAddress(tracker);
    rmSync(path, { force: true });
    // Connections come once it listens, below: `link` is set by then.
    const server = createServer((worker) => link.forward(worker, host, port, security, log));
    const link = new WorkerLink(server, path);
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen(path, () => resolve());
    });
    if (group !== undefined) chownSync(path, process.getuid!(), group);
    chmodSync(path, group !== undefined ? 0o660 : 0o600);
    return link;
  }

  private forward(worker: Socket, host: string, port: number, security: LinkSecurity, log: Logger): void {
    let tracker: Socket;
    try {
      tracker = this.dial(host, port, security);
    } catch (err) {
      // A certificate file that cannot be read now (mid-rotation): this worker's stream fails, the agent lives on.
      log.warn({ err: (err as Error).message }, "worker link: cannot dial the tracker");
      worker.destroy();
      return;
    }
    tracker.setNoDelay(true);
    this.pipe(worker, tracker, log);
  }

  private dial(host: string, port: number, security: LinkSecurity): Socket {
    if (security.tls) {
      // Read per connection: a rotated client certificate is used from the next one on.
      const { caFile, certFile, keyFile, serverName } = security.tls;
      return tlsConnect({
        host,
        port,
        ca: readFileSync(caFile),
        ...(certFile && keyFile ? { cert: readFileSync(certFile), key: readFileSync(keyFile) } : {}),
        ALPNProtocols: ["h2"],
        // The certificate is checked against this name (an IP address is checked as one, and is no SNI name).
        ...(serverName ? { servername: serverName } : isIP(host) ? {} : { servername: host }),
      });
    }
    return netConnect({ host, port });
  }

  private pipe(worker: Socket, tracker: Socket, log: Logger): void {
    this.sockets.add(worker).add(tracker);
    const close = (err?: Error) => {
      const code = (err as NodeJS.ErrnoException | undefined)?.code ?? "";
      // Not reaching the tracker at all is the agent's own link's to say (once, tracker-link.ts), not each worker's retry's.
      if (err && UNREACHABLE.test(code)) log.debug({ err: err.message }, "worker link: the tracker cannot be reached");
      else if (err && !/ECONNRESET|EPIPE/.test(code)) log.warn({ err: err.message }, "worker link: a forwarded connection failed");
      worker.destroy();
      tracker.destroy();
      this.sockets.delete(worker);
      this.sockets.delete(tracker);
    };
    worker.on("error", close).on("close", () => close());
    tracker.on("error", close).on("close", () => close());
    worker.pipe(tracker);
    tracker.pipe(worker);
  }

  close(): void {
    this.server.close();
    for (const s of this.sockets) s.destroy();
    rmSync(this.path, { force: true });
  }
}
