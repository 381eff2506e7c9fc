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
 *   every gRPC call (a client interceptor, so it works on plaintext loopback
 *   too, where grpc-js refuses call credentials) and in the `Authorization`
 *   header of HTTP requests. What a token may do is the tracker's business
 *   (tracker/auth.ts); this module only carries it.
 */
import { readFileSync, watchFile, unwatchFile } from "node:fs";
import { createServer as createHttpServer, type IncomingMessage, type RequestListener, type Server } from "node:http";
import { createServer as createHttpsServer } from "node:https";
import { isIP } from "node:net";
import { connect as tlsConnect } from "node:tls";
import * as grpc from "@grpc/grpc-js";
import { FarmError } from "./errors.ts";
import { CHANNEL_OPTIONS } from "./grpc.ts";

/** Metadata key (gRPC) and header (HTTP) that carry a token. */
export const AUTHORIZATION_HEADER = "authorization";
/** The longest token any part accepts; a longer one is refused before it is parsed. */
export const MAX_TOKEN_CHARS = 512;
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
  if (!!tlsCert !== !!tlsKey) throw new FarmError("INVALID_ARGUMENT", `${what}: --tls-cert and --tls-key go together (a client certificate and its key), got only ${tlsCert ? "--tls-cert" : "--tls-key"}`);
  if ((tlsCert || tlsServerName) && !tlsCa) throw new FarmError("INVALID_ARGUMENT", `${what}: ${tlsCert ? "--tls-cert" : "--tls-server-name"} needs --tls-ca, the CA that signed the tracker's certificate`);
  for (const [flag, file] of [["--tls-ca", tlsCa], ["--tls-cert", tlsCert], ["--tls-key", tlsKey]] as const) if (file) readPem(file, flag);
  if (token !== undefined) checkTokenShape(token);
  return {
    ...(tlsCa ? { tls: { caFile: tlsCa, ...(tlsCert ? { certFile: tlsCert, keyFile: tlsKey! } : {}), ...(tlsServerName ? { serverName: tlsServerName } : {}) } } : {}),
    ...(token ? { token } : {}),
  };
}

/** A token's outer shape: printable, not over-long. Whether it is known is the tracker's to say. */
export function checkTokenShape(token: string): void {
  if (token.length > MAX_TOKEN_CHARS) throw new FarmError("UNAUTHENTICATED", `the token is ${token.length} characters long; kernelfarm tokens are at most ${MAX_TOKEN_CHARS}`);
  if (!/^[\x21-\x7e]*$/.test(token)) throw new FarmError("UNAUTHENTICATED", "the token holds spaces or control characters; pass it as `kfarm token create` printed it");
}

function readPem(file: string, what: string): Buffer {
  let pem: Buffer;
  try {
    pem = readFileSync(file);
  } catch (err) {
    throw new FarmError("INVALID_ARGUMENT", `${what} ${file}: cannot be read (${(err as NodeJS.ErrnoException).code ?? (err as Error).message}); \`kfarm certs init DIR\` makes a CA and certificates`, { cause: err });
  }
  if (!pem.includes("-----BEGIN ")) throw new FarmError("INVALID_ARGUMENT", `${what} ${file}: not a PEM file (no "-----BEGIN" line)`);
  return pem;
}

// ---------------------------------------------------------------- gRPC

/** Adds the token to every call's metadata (works on plaintext channels, unlike call credentials). */
function tokenInterceptor(token: string): grpc.Interceptor {
  return (options, nextCall) =>
    new grpc.InterceptingCall(nextCall(options), {
      start(metadata, listener, next) {
        metadata.set(AUTHORIZATION_HEADER, `Bearer ${token}`);
        next(metadata, listener);
      },
    });
}

/**
 * Credentials and options for a gRPC client of a farm port: CHANNEL_OPTIONS
 * plus `extra`, the token interceptor, and the TLS server name override.
 */
export function grpcClient(security: ClientSecurity, extra: grpc.ChannelOptions = {}): { credentials: grpc.ChannelCredentials; options: grpc.ClientOptions } {
  const options: grpc.ClientOptions = { ...CHANNEL_OPTIONS, ...extra };
  if (security.token) options.interceptors = [tokenInterceptor(security.token)];
  if (!security.tls) return { credentials: grpc.credentials.createInsecure(), options };
  const { caFile, certFile, keyFile, serverName } = security.tls;
  if (serverName) {
    options["grpc.ssl_target_name_override"] = serverName;
    options["grpc.default_authority"] = serverName;
  }
  const credentials = grpc.credentials.createSsl(readPem(caFile, "TLS CA"), keyFile ? readPem(keyFile, "TLS key") : null, certFile ? readPem(certFile, "TLS certificate") : null);
  return { credentials, options };
}

/** Creates a client of `service` at `address` with `security` (the one constructor every part uses). */
export function makeClient<T>(service: grpc.ServiceClientConstructor | unknown, address: string, security: ClientSecurity, extra: grpc.ChannelOptions = {}): T {
  const { credentials, options } = grpcClient(security, extra);
  return new (service as grpc.ServiceClientConstructor)(address, credentials, options) as unknown as T;
}

/**
 * The tracker's gRPC server credentials: plaintext without `tls`; otherwise
 * certificates read from files and read again when they change, so a rotated
 * certificate is served without a restart.
 */
export function grpcServerCredentials(tls: ServerTls | undefined): grpc.ServerCredentials {
  if (!tls) return grpc.ServerCredentials.createInsecure();
  readPem(tls.certFile, "TLS certificate");
  readPem(tls.keyFile, "TLS key");
  if (tls.clientCaFile) readPem(tls.clientCaFile, "client CA");
  const identity = new grpc.experimental.FileWatcherCertificateProvider({ certificateFile: tls.certFile, privateKeyFile: tls.keyFile, refreshIntervalMs: CERT_RELOAD_INTERVAL_MS });
  const ca = tls.clientCaFile ? new grpc.experimental.FileWatcherCertificateProvider({ caCertificateFile: tls.clientCaFile, refreshIntervalMs: CERT_RELOAD_INTERVAL_MS }) : null;
  // (The exported name's first parameter is the identity provider, the second the CA's.)
  return grpc.experimental.createCertificateProviderServerCredentials(identity, ca, !!tls.clientCaFile);
}

/** The token a call presented, or undefined; malformed or over-long ones are refused with UNAUTHENTICATED. */
export function bearerToken(metadata: grpc.Metadata): string | undefined {
  const values = metadata.get(AUTHORIZATION_HEADER);
  if (values.length === 0) return undefined;
  if (values.length > 1) throw new FarmError("UNAUTHENTICATED", "the call carries more than one authorization header");
  return parseBearer(String(values[0]));
}

function parseBearer(header: string): string {
  if (header.length > MAX_TOKEN_CHARS + 7) throw new FarmError("UNAUTHENTICATED", `the authorization header is ${header.length} characters long; kernelfarm tokens are at most ${MAX_TOKEN_CHARS}`);
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
  const contextOptions = () => ({
    cert: readPem(tls.certFile, "TLS certificate"),
    key: readPem(tls.keyFile, "TLS key"),
    ...(tls.clientCaFile ? { ca: readPem(tls.clientCaFile, "client CA") } : {}),
  });
  const server = createHttpsServer({ ...contextOptions(), ...(tls.clientCaFile ? { requestCert: true, rejectUnauthorized: true } : {}) }, listener);
  const files = [tls.certFile, tls.keyFile, ...(tls.clientCaFile ? [tls.clientCaFile] : [])];
  const reload = () => {
    try {
      server.setSecureContext(contextOptions());
    } catch {
      // A half-written pair (cert renewed, key not yet): the next change completes it.
    }
  };
  for (const f of files) watchFile(f, { interval: CERT_RELOAD_INTERVAL_MS, persistent: false }, reload);
  return { server, secure: true, stopWatching: () => files.forEach((f) => unwatchFile(f, reload)) };
}

/** The token of an HTTP request: `Authorization: Bearer …`, or `?token=` (a browser opening the live view page cannot set headers). */
export function httpToken(req: IncomingMessage): string | undefined {
  const header = req.headers.authorization;
  if (header) return parseBearer(header);
  const query = new URL(req.url ?? "/", "http://x").searchParams.get("token");
  if (query === null) return undefined;
  checkTokenShape(query);
  return query;
}

/** Options for an HTTP(S) or ws client of a farm port: the CA, the client certificate and the token header. */
export function httpClientOptions(security: ClientSecurity): { ca?: Buffer; cert?: Buffer; key?: Buffer; servername?: string; headers: Record<string, string> } {
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
 * Why a client could not talk to `host:port`, when the reason is a TLS
 * mismatch: the port speaks TLS and the client did not, or the other way
 * round. Undefined when that is not it (or nothing answers at all).
 */
export async function diagnoseTransport(address: string, usedTls: boolean, timeoutMs = 2000): Promise<string | undefined> {
  const i = address.lastIndexOf(":");
  const host = address.slice(0, i).replace(/^\[(.*)\]$/, "$1");
  const port = Number(address.slice(i + 1));
  const tls = await speaksTls(host, port, timeoutMs);
  if (tls === true && !usedTls) return `${address} speaks TLS and this client spoke plaintext: pass --tls-ca (the farm's ca.crt) to connect`;
  if (tls === false && usedTls) return `${address} does not speak TLS (it answered a TLS hello with something else): drop --tls-ca, or start that server with --tls-cert and --tls-key`;
  return undefined;
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
      // A mutual-TLS server that wants our certificate still spoke TLS.
      if (/alert|certificate|handshake failure/i.test(err.message)) return finish(true);
      finish(/ECONNREFUSED|EHOSTUNREACH|ENETUNREACH|ETIMEDOUT/.test(err.code ?? "") ? undefined : false);
    });
  });
}
