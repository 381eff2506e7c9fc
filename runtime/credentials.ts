/**
 * Credentials: the one place where every part builds its channel and server
 * credentials, its call metadata and its HTTP(S) servers and clients — the
 * tracker's gRPC server, the host SDK, the agent's link, the session
 * workers' link, the live view and `/metrics`. No call site builds its own.
 *
 * Two independent layers:
 * * **TLS** (transport): PEM files on disk. Servers re-read them when they
 *   change (certificate rotation without a restart); a client that names a
 *   CA refuses a server whose certificate that CA did not sign; a server with
 *   a client CA (mutual TLS) refuses a client without a certificate it signed.
 * * **Tokens** (identity): a bearer token in the `authorization` metadata of
 *   every gRPC call (callMetadata: call credentials would not do, grpc-js
 *   refuses them on the plaintext channels of loopback farms) and in the
 *   `Authorization` header of HTTP requests. What a token may do is the tracker's business
 *   (tracker/auth.ts); this module only carries it.
 */
import { readFileSync, watchFile, unwatchFile } from "node:fs";
import { createServer as createHttpServer, type IncomingMessage, type RequestListener, type Server } from "node:http";
import { createServer as createHttpsServer } from "node:https";
import { connect as netConnect, createServer as createNetServer, isIP, type OnReadOpts, type Server as NetServer, type Socket } from "node:net";
import {
  checkServerIdentity,
  connect as tlsConnect,
  createSecureContext,
  createServer as createTlsServer,
  type ConnectionOptions,
  type SecureContextOptions,
} from "node:tls";
import * as grpc from "@grpc/grpc-js";
import { FarmError } from "../protos/errors.ts";
import { CHANNEL_OPTIONS } from "./grpc-options.ts";
import { MAX_TOKEN_CHARS } from "../protos/gen/contract.ts";

/** Metadata key (gRPC) and header (HTTP) that carry a token. */
export const AUTHORIZATION_HEADER = "authorization";
/** The longest token any part accepts; a longer one is refused before it is parsed (declared for both SDKs in contract.json). */
export { MAX_TOKEN_CHARS };
/** How often servers look at their certificate files for a rotation. */
export const CERT_RELOAD_INTERVAL_MS = 1000;

/** TLS as a client: the CA to trust, and a certificate of its own for mutual TLS. */
export interface ClientTls {
  /** PEM file of the CA that signed the server's certificate. */
  caFile: string;
  /** PEM certificate and key of this client, when the server asks for one (mutual TLS). */
  certFile?: string;
  keyFile?: string;
  /** The name to check the server's certificate against, when the address's host is not it (a unix socket, an IP not in the certificate). */
  serverName?: string;
}

/** How a client reaches a farm port: plaintext without `tls`, anonymous without `token`. */
export interface ClientSecurity {
  tls?: ClientTls;
  /** A kernelfarm token (`kfarm token create`), sent with every call. */
  token?: string;
}

/** TLS as a server. */
export interface ServerTls {
  certFile: string;
  keyFile: string;
  /** Mutual TLS: clients must present a certificate signed by this CA. */
  clientCaFile?: string;
}

/** The security options every part's `XxxOptions` takes, with the same names on the command line (`--tls-ca`, `--token`, …). */
export interface SecurityFlags {
  tlsCa?: string;
  tlsCert?: string;
  tlsKey?: string;
  tlsServerName?: string;
  token?: string;
}

/** Flags (absent or empty meaning "not given") to the client form; a half-given pair is refused naming the missing half. */
export function clientSecurity(flags: SecurityFlags, what = "the client"): ClientSecurity {
  const { tlsCa, tlsCert, tlsKey, tlsServerName, token } = flags;
  if (!!tlsCert !== !!tlsKey)
    throw new FarmError(
      "INVALID_ARGUMENT",
      `${what}: --tls-cert and --tls-key go together (a client certificate and its key), got only ${tlsCert ? "--tls-cert" : "--tls-key"}`,
    );
  if ((tlsCert || tlsServerName) && !tlsCa)
    throw new FarmError(
      "INVALID_ARGUMENT",
      `${what}: ${tlsCert ? "--tls-cert" : "--tls-server-name"} needs --tls-ca, the CA that signed the tracker's certificate`,
    );
  for (const [flag, file] of [
    ["--tls-ca", tlsCa],
    ["--tls-cert", tlsCert],
    ["--tls-key", tlsKey],
  ] as const)
    if (file) readPem(file, flag);
  if (token !== undefined) checkTokenShape(token);
  return {
    ...(tlsCa
      ? { tls: { caFile: tlsCa, ...(tlsCert ? { certFile: tlsCert, keyFile: tlsKey! } : {}), ...(tlsServerName ? { serverName: tlsServerName } : {}) } }
      : {}),
    ...(token ? { token } : {}),
  };
}

/** A token's outer shape: printable, not over-long. Whether it is known is the tracker's to say. */
export function checkTokenShape(token: string): void {
  if (token.length > MAX_TOKEN_CHARS)
    throw new FarmError("UNAUTHENTICATED", `the token is ${token.length} characters long; kernelfarm tokens are at most ${MAX_TOKEN_CHARS}`);
  if (!/^[\x21-\x7e]*$/.test(token))
    throw new FarmError("UNAUTHENTICATED", "the token holds spaces or control characters; pass it as `kfarm token create` printed it");
}

function readPem(file: string, what: string): Buffer {
  let pem: Buffer;
  try {
    pem = readFileSync(file);
  } catch (err) {
    throw new FarmError(
      "INVALID_ARGUMENT",
      `${what} ${file}: cannot be read (${(err as NodeJS.ErrnoException).code ?? (err as Error).message}); \`kfarm certs init DIR\` makes a CA and certificates`,
      { cause: err },
    );
  }
  if (!pem.includes("-----BEGIN ")) throw new FarmError("INVALID_ARGUMENT", `${what} ${file}: not a PEM file (no "-----BEGIN" line)`);
  return pem;
}

// ---------------------------------------------------------------- gRPC

/**
 * The metadata a call of a client with `security` starts with: its token.
 * Every call site passes it (session streams add their id and ticket to
 * it): an interceptor would do the same for every call, but grpc-js then
 * routes every message of every stream through the interceptor chain.
 */
export function callMetadata(security: ClientSecurity): grpc.Metadata {
  const metadata = new grpc.Metadata();
  if (security.token) metadata.set(AUTHORIZATION_HEADER, `Bearer ${security.token}`);
  return metadata;
}

/**
 * Credentials and options for a gRPC client of a farm port: CHANNEL_OPTIONS
 * plus `extra` and the TLS server name override. The token is not here but
 * in each call's metadata (callMetadata).
 */
export function grpcClient(
  security: ClientSecurity,
  extra: grpc.ChannelOptions = {},
  opts: { reloadCertificates?: boolean } = {},
): { credentials: grpc.ChannelCredentials; options: grpc.ClientOptions } {
  const options: grpc.ClientOptions = { ...CHANNEL_OPTIONS, ...extra };
  if (!security.tls) return { credentials: grpc.credentials.createInsecure(), options };
  const { caFile, certFile, keyFile, serverName } = security.tls;
  if (serverName) {
    options["grpc.ssl_target_name_override"] = serverName;
    options["grpc.default_authority"] = serverName;
  }
  const ca = readPem(caFile, "TLS CA");
  const key = keyFile ? readPem(keyFile, "TLS key") : null;
  const cert = certFile ? readPem(certFile, "TLS certificate") : null;
  if (!opts.reloadCertificates) return { credentials: grpc.credentials.createSsl(ca, key, cert), options };
  // A long-lived client (an agent) takes a renewed CA or client certificate at its next connection, without a restart.
  // (The file watchers' timers keep a process alive: short-lived clients, whose owners may forget close(), read once.)
  const credentials = grpc.experimental.createCertificateProviderChannelCredentials(
    new CheckedCertificateProvider({ caCertificateFile: caFile, refreshIntervalMs: CERT_RELOAD_INTERVAL_MS }),
    certFile && keyFile
      ? new CheckedCertificateProvider({ certificateFile: certFile, privateKeyFile: keyFile, refreshIntervalMs: CERT_RELOAD_INTERVAL_MS })
      : null,
  );
  return { credentials, options };
}

/** Creates a client of `service` at `address` with `security` (the one constructor every part uses). */
export function makeClient<T>(
  service: grpc.ServiceClientConstructor | unknown,
  address: string,
  security: ClientSecurity,
  extra: grpc.ChannelOptions = {},
  opts: { reloadCertificates?: boolean } = {},
): T {
  const { credentials, options } = grpcClient(security, extra, opts);
  return new (service as grpc.ServiceClientConstructor)(address, credentials, options) as unknown as T;
}

/**
 * The tracker's gRPC server credentials: plaintext without `tls`; otherwise
 * certificates read from files and read again when they change, so a rotated
 * certificate is served without a restart.
 */
export function grpcServerCredentials(tls: ServerTls | undefined): grpc.ServerCredentials {
  if (!tls) return grpc.ServerCredentials.createInsecure();
  if (tls.clientCaFile) readPem(tls.clientCaFile, "client CA");
  checkPair(readPem(tls.certFile, "TLS certificate"), readPem(tls.keyFile, "TLS key"), tls);
  const identity = new CheckedCertificateProvider({ certificateFile: tls.certFile, privateKeyFile: tls.keyFile, refreshIntervalMs: CERT_RELOAD_INTERVAL_MS });
  const ca = tls.clientCaFile ? new CheckedCertificateProvider({ caCertificateFile: tls.clientCaFile, refreshIntervalMs: CERT_RELOAD_INTERVAL_MS }) : null;
  // (The exported name's first parameter is the identity provider, the second the CA's.)
  return grpc.experimental.createCertificateProviderServerCredentials(identity, ca, !!tls.clientCaFile);
}

/** Refuses at start a key that is not the certificate's (a server with it would refuse every client). */
function checkPair(cert: Buffer, key: Buffer, tls: ServerTls): void {
  try {
    createSecureContext({ cert, key });
  } catch (err) {
    throw new FarmError(
      "INVALID_ARGUMENT",
      `--tls-cert ${tls.certFile} and --tls-key ${tls.keyFile} do not go together (${(err as Error).message}): pass the key made with that certificate`,
      { cause: err },
    );
  }
}

/**
 * grpc-js's file watcher, passing on only what works, starting with what it
 * read at construction. The watcher reads the files every interval and
 * hands on whatever it read; a key that does not match its certificate (a
 * rotation caught between its two files, or files copied by hand one at a
 * time) or an unreadable file would make the server drop every new
 * connection until the next good read. Here such a read is skipped and the
 * last good one stays in service. And the watcher's first read is
 * asynchronous: until it lands the server drops connections, after it has
 * said it is listening; the files read here are handed to each new listener
 * on the next tick, before the server's bind completes.
 */
class CheckedCertificateProvider implements grpc.experimental.CertificateProvider {
  private readonly inner: grpc.experimental.FileWatcherCertificateProvider;
  private readonly caListeners = new Map<grpc.experimental.CaCertificateUpdateListener, grpc.experimental.CaCertificateUpdateListener>();
  private readonly identityListeners = new Map<grpc.experimental.IdentityCertificateUpdateListener, grpc.experimental.IdentityCertificateUpdateListener>();
  private lastCa: grpc.experimental.CaCertificateUpdate | undefined;
  private lastIdentity: grpc.experimental.IdentityCertificateUpdate | undefined;

  constructor(config: grpc.experimental.FileWatcherCertificateProviderConfig) {
    this.inner = new grpc.experimental.FileWatcherCertificateProvider(config);
    if (config.caCertificateFile) this.lastCa = goodCa({ caCertificate: readFileSync(config.caCertificateFile) });
    if (config.certificateFile && config.privateKeyFile)
      this.lastIdentity = goodIdentity({ certificate: readFileSync(config.certificateFile), privateKey: readFileSync(config.privateKeyFile) });
  }

  addCaCertificateListener(listener: grpc.experimental.CaCertificateUpdateListener): void {
    const checked: grpc.experimental.CaCertificateUpdateListener = (u) => {
      const good = goodCa(u);
      if (good) listener((this.lastCa = good));
    };
    this.caListeners.set(listener, checked);
    this.inner.addCaCertificateListener(checked);
    if (this.lastCa) process.nextTick(listener, this.lastCa);
  }

  removeCaCertificateListener(listener: grpc.experimental.CaCertificateUpdateListener): void {
    const checked = this.caListeners.get(listener);
    this.caListeners.delete(listener);
    if (checked) this.inner.removeCaCertificateListener(checked);
  }

  addIdentityCertificateListener(listener: grpc.experimental.IdentityCertificateUpdateListener): void {
    const checked: grpc.experimental.IdentityCertificateUpdateListener = (u) => {
      const good = goodIdentity(u);
      if (good) listener((this.lastIdentity = good));
    };
    this.identityListeners.set(listener, checked);
    this.inner.addIdentityCertificateListener(checked);
    if (this.lastIdentity) process.nextTick(listener, this.lastIdentity);
  }

  removeIdentityCertificateListener(listener: grpc.experimental.IdentityCertificateUpdateListener): void {
    const checked = this.identityListeners.get(listener);
    this.identityListeners.delete(listener);
    if (checked) this.inner.removeIdentityCertificateListener(checked);
  }
}

function goodCa(u: grpc.experimental.CaCertificateUpdate | null): grpc.experimental.CaCertificateUpdate | undefined {
  return u && u.caCertificate.includes("-----END CERTIFICATE-----") && usable(() => createSecureContext({ ca: u.caCertificate })) ? u : undefined;
}

function goodIdentity(u: grpc.experimental.IdentityCertificateUpdate | null): grpc.experimental.IdentityCertificateUpdate | undefined {
  return u && usable(() => createSecureContext({ cert: u.certificate, key: u.privateKey })) ? u : undefined;
}

function usable(make: () => unknown): boolean {
  try {
    make();
    return true;
  } catch {
    return false;
  }
}

/** The token a call presented, or undefined; malformed or over-long ones are refused with UNAUTHENTICATED. */
export function bearerToken(metadata: grpc.Metadata): string | undefined {
  const values = metadata.get(AUTHORIZATION_HEADER);
  if (values.length === 0) return undefined;
  if (values.length > 1) throw new FarmError("UNAUTHENTICATED", "the call carries more than one authorization header");
  return parseBearer(String(values[0]));
}

function parseBearer(header: string): string {
  if (header.length > MAX_TOKEN_CHARS + 7)
    throw new FarmError("UNAUTHENTICATED", `the authorization header is ${header.length} characters long; kernelfarm tokens are at most ${MAX_TOKEN_CHARS}`);
  const m = /^Bearer (\S+)$/i.exec(header.trim());
  if (!m) throw new FarmError("UNAUTHENTICATED", 'the authorization header must be "Bearer <token>"');
  checkTokenShape(m[1]!);
  return m[1]!;
}

// ---------------------------------------------------------------- HTTP

/**
 * An HTTP server, or HTTPS with `tls`: the certificate is read again when
 * its files change (`setSecureContext`), so a rotation needs no restart.
 * Returns the server and a function that stops watching the files.
 */
export function httpServer(tls: ServerTls | undefined, listener: RequestListener): { server: Server; secure: boolean; stopWatching: () => void } {
  if (!tls) return { server: createHttpServer(listener), secure: false, stopWatching: () => {} };
  const first = serverContext(tls);
  const server = createHttpsServer({ ...first, ...(tls.clientCaFile ? { requestCert: true, rejectUnauthorized: true } : {}) }, listener);
  return { server, secure: true, stopWatching: watchServerContext(tls, server) };
}

/**
 * A TCP server for session lanes (the tracker's data port, an agent's direct
 * lane), or TLS with `tls`, its certificate re-read like httpServer's.
 * `onSocket` gets each connection once it is secure.
 */
export function socketServer(tls: ServerTls | undefined, onSocket: (socket: Socket) => void): { server: NetServer; secure: boolean; stopWatching: () => void } {
  if (!tls) return { server: createNetServer(onSocket), secure: false, stopWatching: () => {} };
  const server = createTlsServer({ ...serverContext(tls), ...(tls.clientCaFile ? { requestCert: true, rejectUnauthorized: true } : {}) }, onSocket);
  // A failed handshake is the peer's business; it must not reach the process.
  server.on("tlsClientError", () => {});
  return { server, secure: true, stopWatching: watchServerContext(tls, server) };
}

/** Connects to a lane port: TCP, or TLS checked against the client's CA (with its certificate for mutual TLS). */
/**
 * With `unread`, a plaintext socket reads nothing until someone listens: it
 * can be handed to another process (child_process.send) without losing a
 * byte that arrived meanwhile.
 */
/**
 * A TCP (or TLS) connection to `what` at host:port. `first`: bytes written at
 * once, before the connection is up (sent with the handshake's end, saving
 * this process a wake-up); `unread`: nothing is read here (the socket goes to
 * another process); `onread`: a plaintext socket reads into the buffers it
 * names (runtime/lane.ts LaneReads) instead of emitting 'data'.
 */
export function connectSocket(
  host: string,
  port: number,
  security: ClientSecurity,
  timeoutMs: number,
  what: string,
  opts: { unread?: boolean; first?: Uint8Array; onread?: OnReadOpts } = {},
): Promise<Socket> {
  return new Promise((resolve, reject) => {
    let socket: Socket;
    try {
      if (opts.onread && security.tls) throw new FarmError("INTERNAL", "a TLS socket reads into its own buffers: no onread");
      socket = security.tls
        ? tlsConnect({ host, port, ...tlsClientOptions(security.tls, host) })
        : netConnect({ host, port, ...(opts.onread ? { onread: opts.onread } : {}) });
      // Paused before it connects, a net.Socket never starts reading its handle.
      if (opts.unread && !security.tls) socket.pause();
      if (opts.first) socket.write(opts.first);
    } catch (err) {
      reject(FarmError.from(err));
      return;
    }
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new FarmError("UNAVAILABLE", `${what} at ${host}:${port} did not answer within ${timeoutMs} ms`));
    }, timeoutMs);
    socket.once(security.tls ? "secureConnect" : "connect", () => {
      clearTimeout(timer);
      socket.removeAllListeners("error");
      resolve(socket);
    });
    socket.once("error", (err) => {
      clearTimeout(timer);
      socket.destroy();
      reject(new FarmError("UNAVAILABLE", `cannot reach ${what} at ${host}:${port}: ${err.message}`, { cause: err }));
    });
  });
}

function tlsClientOptions(tls: ClientTls, host: string): ConnectionOptions {
  const name = tls.serverName ?? host;
  return {
    ca: readPem(tls.caFile, "TLS CA"),
    ...(tls.certFile && tls.keyFile ? { cert: readPem(tls.certFile, "TLS certificate"), key: readPem(tls.keyFile, "TLS key") } : {}),
    ...(isIP(name) ? {} : { servername: name }),
    checkServerIdentity: (_host, cert) => checkServerIdentity(name, cert),
  };
}

/** A server's certificate, key and client CA as read now; a key that is not the certificate's is refused. */
function serverContext(tls: ServerTls): { cert: Buffer; key: Buffer; ca?: Buffer } {
  const context = {
    cert: readPem(tls.certFile, "TLS certificate"),
    key: readPem(tls.keyFile, "TLS key"),
    ...(tls.clientCaFile ? { ca: readPem(tls.clientCaFile, "client CA") } : {}),
  };
  checkPair(context.cert, context.key, tls);
  return context;
}

/** Re-reads the certificate files into `server` when they change; returns the function that stops watching. */
function watchServerContext(tls: ServerTls, server: { setSecureContext(options: SecureContextOptions): void }): () => void {
  const files = [tls.certFile, tls.keyFile, ...(tls.clientCaFile ? [tls.clientCaFile] : [])];
  const reload = () => {
    try {
      server.setSecureContext(serverContext(tls));
    } catch {
      // A half-written pair (cert renewed, key not yet): the next change completes it.
    }
  };
  for (const f of files) watchFile(f, { interval: CERT_RELOAD_INTERVAL_MS, persistent: false }, reload);
  return () => files.forEach((f) => unwatchFile(f, reload));
}

/** The token of an HTTP request: `Authorization: Bearer …`, or `?token=` (a browser opening the live view page cannot set headers). */
export function httpToken(req: IncomingMessage): string | undefined {
  const header = req.headers.authorization;
  if (header) return parseBearer(header);
  // The query alone, without parsing the target as a URL (`new URL` throws on targets such as `//`).
  const url = req.url ?? "";
  const at = url.indexOf("?");
  const query = at < 0 ? null : new URLSearchParams(url.slice(at + 1)).get("token");
  if (query === null) return undefined;
  checkTokenShape(query);
  return query;
}

/** Options for an HTTP(S) or ws client of a farm port: the CA, the client certificate and the token header. */
export function httpClientOptions(security: ClientSecurity): {
  ca?: Buffer;
  cert?: Buffer;
  key?: Buffer;
  servername?: string;
  headers: Record<string, string>;
} {
  const headers: Record<string, string> = security.token ? { authorization: `Bearer ${security.token}` } : {};
  if (!security.tls) return { headers };
  const { caFile, certFile, keyFile, serverName } = security.tls;
  return {
    ca: readPem(caFile, "TLS CA"),
    ...(certFile && keyFile ? { cert: readPem(certFile, "TLS certificate"), key: readPem(keyFile, "TLS key") } : {}),
    ...(serverName ? { servername: serverName } : {}),
    headers,
  };
}

// ---------------------------------------------------------------- addresses and diagnosis

/** True for 127.0.0.0/8, ::1, localhost: plaintext and no tokens are allowed there by default. */
export function isLoopbackHost(host: string): boolean {
  const h = host.replace(/^\[(.*)\]$/, "$1");
  if (h === "localhost" || h === "::1") return true;
  if (isIP(h) === 4) return h.startsWith("127.");
  return false;
}

/**
 * Why a client could not talk to `host:port`, when the reason is TLS: the
 * port speaks TLS and the client did not, or the other way round; and, when
 * `used` is the client's TLS settings, what the certificate check said (the
 * tracker's certificate not signed by the client's CA, or not naming the
 * address; the tracker refusing the client's certificate, or wanting one).
 * Undefined when that is not it (or nothing answers at all). Never rejects:
 * its callers run it fire-and-forget, and a throw (tls.connect's, for a port
 * out of range) would be a rejection nobody handles; that is undefined too.
 */
export async function diagnoseTransport(address: string, used: boolean | ClientTls, timeoutMs = 2000): Promise<string | undefined> {
  const i = address.lastIndexOf(":");
  const host = address.slice(0, i).replace(/^\[(.*)\]$/, "$1");
  const port = Number(address.slice(i + 1));
  try {
    const tls = await speaksTls(host, port, timeoutMs);
    if (tls === true && !used) return `${address} speaks TLS and this client spoke plaintext: pass --tls-ca (the farm's ca.crt) to connect`;
    if (tls === false && used)
      return `${address} does not speak TLS (it answered a TLS hello with something else): drop --tls-ca, or start that server with --tls-cert and --tls-key`;
    if (tls === true && typeof used === "object") return await certificateProblem(address, host, port, used, timeoutMs);
    return undefined;
  } catch {
    return undefined;
  }
}

/** true: a TLS handshake completes (whatever the certificate); false: the peer answered, not in TLS; undefined: no answer. */
function speaksTls(host: string, port: number, timeoutMs: number): Promise<boolean | undefined> {
  return new Promise((resolve) => {
    const socket = tlsConnect({ host, port, rejectUnauthorized: false, ALPNProtocols: ["h2"], ...(isIP(host) ? {} : { servername: host }) });
    const timer = setTimeout(() => finish(undefined), timeoutMs);
    const finish = (v: boolean | undefined) => {
      clearTimeout(timer);
      socket.destroy();
      resolve(v);
    };
    socket.once("secureConnect", () => finish(true));
    socket.once("error", (err: NodeJS.ErrnoException) => {
      // A TLS alert (a mutual-TLS server that wants our certificate) is still TLS.
      if (/alert|certificate|handshake failure/i.test(err.message)) return finish(true);
      finish(/ECONNREFUSED|EHOSTUNREACH|ENETUNREACH|ETIMEDOUT/.test(err.code ?? "") ? undefined : false);
    });
  });
}

/**
 * A handshake as the client makes it (its CA, its certificate, its server
 * name), held until the server's first HTTP/2 frame: in TLS 1.3 a server
 * refuses a client certificate only after the client thinks the handshake
 * is done, so the alert comes then. Undefined when it all goes through.
 */
function certificateProblem(address: string, host: string, port: number, used: ClientTls, timeoutMs: number): Promise<string | undefined> {
  let options: { ca: Buffer; cert?: Buffer; key?: Buffer };
  try {
    options = {
      ca: readPem(used.caFile, "TLS CA"),
      ...(used.certFile && used.keyFile ? { cert: readPem(used.certFile, "TLS certificate"), key: readPem(used.keyFile, "TLS key") } : {}),
    };
  } catch (err) {
    return Promise.resolve((err as Error).message);
  }
  const name = used.serverName ?? host;
  return new Promise((resolve) => {
    const socket = tlsConnect({
      host,
      port,
      ...options,
      ALPNProtocols: ["h2"],
      ...(isIP(name) ? {} : { servername: name }),
      checkServerIdentity: (_host, cert) => checkServerIdentity(name, cert),
    });
    const timer = setTimeout(() => finish(undefined), timeoutMs);
    const finish = (v: string | undefined) => {
      clearTimeout(timer);
      socket.destroy();
      resolve(v);
    };
    let handshook = false;
    socket.once("secureConnect", () => {
      handshook = true;
      // An HTTP/2 server speaks first (its SETTINGS frame): data means it took this client.
      socket.write("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n");
      socket.once("data", () => finish(undefined));
    });
    socket.once("error", (err: NodeJS.ErrnoException) => finish(explainTlsError(address, used, name, err)));
    // Node's TLS server checks a client certificate after the handshake and, when its CA did not sign it, hangs up without an alert.
    socket.once("close", () =>
      finish(
        handshook && used.certFile
          ? `the tracker at ${address} hung up right after the TLS handshake: it refused this client's certificate ${used.certFile}; it takes only valid certificates signed by the CA of its --tls-client-ca (\`kfarm certs issue DIR --client NAME\` with that CA)`
          : undefined,
      ),
    );
  });
}

/** A TLS error in the words of the flags that fix it. */
function explainTlsError(address: string, used: ClientTls, name: string, err: NodeJS.ErrnoException): string {
  const code = err.code ?? "";
  // OpenSSL's message spans lines and names its source files; its reason is the part a person reads.
  const reason = (err as { reason?: string }).reason ?? err.message;
  const what = `${reason}${code && !reason.includes(code) ? ` [${code}]` : ""}`;
  if (/CERTIFICATE_REQUIRED|HANDSHAKE_FAILURE/.test(code) && !used.certFile) {
    return `the tracker at ${address} requires a client certificate (mutual TLS) and this client has none (${what}): pass --tls-cert and --tls-key, a certificate signed by the CA of its --tls-client-ca`;
  }
  if (
    /ALERT_(UNKNOWN_CA|BAD_CERTIFICATE|CERTIFICATE_UNKNOWN|DECRYPT_ERROR|CERTIFICATE_EXPIRED|UNSUPPORTED_CERTIFICATE|CERTIFICATE_REQUIRED|HANDSHAKE_FAILURE)/.test(
      code,
    )
  ) {
    return `the tracker at ${address} refused this client's certificate ${used.certFile} (${what}): it takes only valid certificates signed by the CA of its --tls-client-ca (\`kfarm certs issue DIR --client NAME\`)`;
  }
  if (code === "ERR_TLS_CERT_ALTNAME_INVALID") {
    return `the tracker's certificate at ${address} does not name ${name} (${what}): connect by a name it holds, pass --tls-server-name, or re-issue it with --host ${name}`;
  }
  if (/CERT_HAS_EXPIRED|CERT_NOT_YET_VALID/.test(code))
    return `the tracker's certificate at ${address} is not valid now (${what}): re-issue it (\`kfarm certs issue DIR --server server\`)`;
  if (/SELF_SIGNED|UNABLE_TO_GET_ISSUER|UNABLE_TO_VERIFY|CERT_SIGNATURE_FAILURE|CERT_UNTRUSTED/.test(code)) {
    return `the tracker's certificate at ${address} is not signed by the CA in ${used.caFile} (${what}): pass the farm's ca.crt as --tls-ca`;
  }
  return `TLS to ${address} failed: ${what}`;
}
