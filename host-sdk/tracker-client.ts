/**
 * connectTracker(): the host's handle on a farm. `request(key)` waits in the
 * key's queue for a board and opens a Session on it (TVM's
 * `tracker.request(key)`).
 */
import type { BoardInfo__Output } from "../protos/index.ts";
import { randomBytes } from "node:crypto";
import { hostname } from "node:os";
import { connectivityState, type Metadata } from "@grpc/grpc-js";
import {
  BOARD_ACTION,
  DEFAULT_TRACKER_PORT,
  FarmError,
  checkOptions,
  HostService,
  fromWireMessage,
  toWireMessage,
  type TokensReply__Output,
  type TokensRequest,
  SESSION_REQUEST_HEADER,
  encodeSessionRequest,
  parseRoute,
  type HostServiceClient,
  type Route,
} from "../protos/index.ts";
import { callMetadata, clientSecurity, diagnoseTransport, makeClient, parseAddress, type ClientSecurity, type ClientTls } from "../runtime/index.ts";
import type { SummaryReply__Output } from "../protos/index.ts";
import { SessionChannel, connectionFailed, type SessionStream } from "./frame-channel.ts";
import { Session } from "./session.ts";
import { wrongPortHint } from "./wrong-port.ts";

export interface ConnectOptions {
  /** Who this host is, for fairness between clients. Default host name + pid + random. On a farm with tokens the tracker uses the token's name instead. */
  clientId?: string;
  /** A client (or operator) token from `kfarm token create`. Default: $KFARM_TOKEN. */
  token?: string;
  /** TLS: the farm's CA (and a client certificate for mutual TLS). Default: $KFARM_TLS_CA (with $KFARM_TLS_CERT, $KFARM_TLS_KEY), else plaintext. */
  tls?: ClientTls;
  /** How long to wait for the tracker to answer at all. Default 5000 ms. */
  connectTimeoutMs?: number;
  /** Deadline of short RPCs (summary, release). Default 10000 ms. */
  rpcTimeoutMs?: number;
}

export interface RequestOptions {
  /** Larger is served first. Default 1 (TVM's default). */
  priority?: number;
  /** Every label must match the board's. */
  labels?: Record<string, string>;
  /**
   * Longest wait in the queue; default the tracker's (`kfarm tracker
   * --default-deadline-ms`, 60 s unless set). Given here, it is also how long
   * a request for a key no board serves yet waits for one to attach (an agent
   * started just before the script); without it such a request fails
   * NO_BOARD at once, naming the keys served.
   */
  deadlineMs?: number;
  /** The lease ends after this long; 0 or absent: the longest the tracker (and your token) allows. */
  sessionTimeoutMs?: number;
  /**
   * How the session's frames travel (protos/routes.ts): `direct` to the
   * board's agent, `relay` through the tracker's data port, `grpc` on the
   * tracker's gRPC port, `auto` direct with relay as its fallback. Default
   * $KFARM_ROUTE, else auto. `session.lane` says which it got.
   */
  route?: Route;
  /** auto: how long the direct lane may take before the relay is tried. Default 1000 ms. */
  directTimeoutMs?: number;
  /** Only this board (its id, AGENT/NAME, as `kfarm status` shows it), which must serve the key. */
  board?: string;
  /** Gives up waiting (CANCELLED): the request leaves the tracker's queue, or a grant still opening its lane goes back. */
  signal?: AbortSignal;
}

/** The tracker a client dials when it names none and KFARM_TRACKER is not set: where a default `kfarm tracker` listens. */
export const DEFAULT_TRACKER_ADDRESS = `127.0.0.1:${DEFAULT_TRACKER_PORT}`;

/** The tracker meant when none is named: KFARM_TRACKER, else DEFAULT_TRACKER_ADDRESS; `why` says which, for error messages. */
export function defaultTracker(env: NodeJS.ProcessEnv = process.env): { address: string; why: string } {
  const fromEnv = env.KFARM_TRACKER?.trim();
  return fromEnv
    ? { address: fromEnv, why: "KFARM_TRACKER's value" }
    : { address: DEFAULT_TRACKER_ADDRESS, why: "the default: no tracker address was given and KFARM_TRACKER is not set" };
}

export const DEFAULT_CONNECT_TIMEOUT_MS = 5000;
export const DEFAULT_RPC_TIMEOUT_MS = 10_000;
export const DEFAULT_DIRECT_TIMEOUT_MS = 1000;
/**
 * A client whose tracker went away re-dials with backoff; grpc-js lets it grow
 * to 2 minutes, so a host retrying through a long restart or a partition would
 * find the tracker back that much late. Capped here (grpc-js adds jitter): a
 * waiting host is back within ~2 s of the tracker (tests/multihost/faults.test.ts).
 */
export const TRACKER_RECONNECT_MAX_MS = 2000;
/** Grace on top of a deadline the host gave, for the tracker's own answer to arrive first. */
const REQUEST_DEADLINE_SLACK_MS = 2000;

export class TrackerClient {
  readonly clientId: string;
  private readonly rpcTimeoutMs: number;

  constructor(
    readonly address: string,
    private readonly client: HostServiceClient,
    opts: ConnectOptions,
    private readonly security: ClientSecurity = {},
  ) {
    this.clientId = opts.clientId ?? `${hostname()}-${process.pid}-${randomBytes(2).toString("hex")}`;
    this.rpcTimeoutMs = opts.rpcTimeoutMs ?? DEFAULT_RPC_TIMEOUT_MS;
  }

  /** Each call's metadata: the token, when there is one. */
  private closed = false;

  /** Every call's first step: a closed client says so (grpc-js would say "Channel has been shut down"). */
  private metadata(): Metadata {
    if (this.closed)
      throw new FarmError(
        "INVALID_ARGUMENT",
        `this tracker client (${this.address}) was closed with close(): connect again with connectTracker("${this.address}")`,
      );
    return callMetadata(this.security);
  }

  /** A call's failure, naming the tracker when the call never reached it (the tracker's own answers say what they mean). */
  private unreachable(err: unknown): FarmError {
    const e = FarmError.from(err);
    if (connectionFailed(e)) return new FarmError("UNAVAILABLE", `cannot reach the tracker at ${this.address}: ${e.message}`, { cause: err });
    return e;
  }

  /**
   * Waits for a board of `key` and opens a session on it: one Session stream
   * at the tracker, whose first message is the grant, then the lane.
   */
  async request(key: string, opts: RequestOptions = {}): Promise<Session> {
    const route = parseRoute(opts.route ?? process.env.KFARM_ROUTE, "request()");
    checkOptions("request", opts);
    const metadata = this.metadata();
    metadata.set(
      SESSION_REQUEST_HEADER,
      Buffer.from(
        encodeSessionRequest({
          key,
          priority: opts.priority ?? 1,
          labels: opts.labels ?? {},
          // 0: the tracker's own default; the host keeps no copy of it.
          deadline_ms: opts.deadlineMs ?? 0,
          client_id: this.clientId,
          session_timeout_ms: opts.sessionTimeoutMs ?? 0,
          route,
          board_id: opts.board ?? "",
        }),
      ),
    );
    // No gRPC deadline: the stream lives as long as the lease. The tracker answers at the queue deadline; the
    // host's own limit only guards against a tracker that never does.
    if (opts.signal?.aborted) throw new FarmError("CANCELLED", `request for key "${key}": cancelled by the caller before it was sent`);
    const stream = this.client.Session(metadata) as unknown as SessionStream;
    const channel = new SessionChannel(stream, {
      tracker: this.address,
      security: this.security,
      directTimeoutMs: opts.directTimeoutMs ?? DEFAULT_DIRECT_TIMEOUT_MS,
      ...(opts.deadlineMs ? { grantTimeoutMs: opts.deadlineMs + REQUEST_DEADLINE_SLACK_MS } : {}),
    });
    const abort = () => stream.cancel();
    opts.signal?.addEventListener("abort", abort, { once: true });
    // The tracker sends its response headers once the request waits in the queue (tracker/tracker.ts).
    let queuedAt: number | undefined;
    stream.once("metadata", () => (queuedAt = Date.now()));
    let grant;
    try {
      grant = await channel.granted;
    } catch (err) {
      opts.signal?.removeEventListener("abort", abort);
      if (opts.signal?.aborted) throw new FarmError("CANCELLED", `request for key "${key}": cancelled by the caller while it waited`, { cause: err });
      const e = FarmError.from(err);
      if (queuedAt !== undefined && connectionFailed(e)) {
        throw new FarmError(
          "UNAVAILABLE",
          `the tracker at ${this.address} went away while this request for key "${key}" waited in its queue (for ${Date.now() - queuedAt} ms; ${e.message}): request again; a restarted tracker takes requests as soon as it listens, and its agents re-attach within a second`,
          { cause: err },
        );
      }
      throw this.unreachable(e);
    }
    // A lease that ended while its lane opened fails the open with why; a lane that failed gives the lease back at
    // once (the channel cancels the Session stream) rather than at the tracker's open timeout.
    try {
      const { lane, note } = await channel.opened;
      return new Session(grant.session_id, grant.board!, channel, { lane, ...(note ? { laneNote: note } : {}) });
    } finally {
      opts.signal?.removeEventListener("abort", abort);
    }
  }

  /**
   * The farm's state: queues per key, boards, agents (TVM's query_rpc_tracker);
   * with `key`, that key's boards and queue only; with `healthHistory`, each
   * board's last health changes (`health_history`) too.
   */
  summary(opts: { key?: string; healthHistory?: boolean } = {}): Promise<SummaryReply__Output> {
    return new Promise((resolve, reject) =>
      this.client.Summary(
        { key: opts.key ?? "", health_history: opts.healthHistory ?? false },
        this.metadata(),
        { deadline: Date.now() + this.rpcTimeoutMs },
        (err, reply) =>
          err ? reject(this.unreachable(err)) : resolve(fromWireMessage("farm.v1.SummaryReply", reply!, "the tracker's summary", "PROTOCOL_ERROR")),
      ),
    );
  }

  /**
   * An operator command on one board (`<agent>/<board>` as in the summary):
   * drain, quarantine or restore; `reason` says why, shown after who asked
   * ("quarantined by alice: fan failing"). Answered once the tracker has it
   * in its state file, when it has one: the command then survives a restart.
   */
  boardCommand(boardId: string, action: "drain" | "quarantine" | "restore", operator = this.clientId, reason = ""): Promise<BoardInfo__Output> {
    return new Promise((resolve, reject) =>
      this.client.BoardCommand(
        { board_id: boardId, action: BOARD_ACTION.toWire(BOARD_ACTION.parse(action, "boardCommand()")), operator, reason },
        this.metadata(),
        { deadline: Date.now() + this.rpcTimeoutMs },
        (err, reply) =>
          err
            ? reject(this.unreachable(err))
            : resolve(fromWireMessage("farm.v1.BoardInfo", reply!.board!, "the tracker's board command reply", "PROTOCOL_ERROR")),
      ),
    );
  }

  /** Token administration (an operator token): create, list or revoke tokens on the tracker. */
  tokens(req: TokensRequest): Promise<TokensReply__Output> {
    return new Promise((resolve, reject) =>
      this.client.Tokens(toWireMessage("farm.v1.TokensRequest", req), this.metadata(), { deadline: Date.now() + this.rpcTimeoutMs }, (err, reply) =>
        err ? reject(this.unreachable(err)) : resolve(fromWireMessage("farm.v1.TokensReply", reply!, "the tracker's tokens reply", "PROTOCOL_ERROR")),
      ),
    );
  }

  close(): void {
    this.closed = true;
    this.client.close();
  }
}

/** Calls `then` the first time `channel` fails to connect (before `deadline`); not after it is ready or shut down. */
function onFirstFailure(channel: ReturnType<HostServiceClient["getChannel"]>, deadline: number, then: () => void): void {
  const watch = (state: connectivityState) =>
    channel.watchConnectivityState(state, deadline, (err) => {
      if (err) return;
      const now = channel.getConnectivityState(false);
      if (now === connectivityState.TRANSIENT_FAILURE) then();
      else if (now !== connectivityState.READY && now !== connectivityState.SHUTDOWN) watch(now);
    });
  watch(channel.getConnectivityState(false));
}

/**
 * Connects to a tracker at HOST:PORT (none: KFARM_TRACKER, else
 * 127.0.0.1:9190, as TVM's query_rpc_tracker); fails with UNAVAILABLE naming
 * the address (and where it came from, when not from the caller) if nothing
 * answers, saying so when the reason is TLS on one side only, and saying
 * what answered (and which port to use) when it is the tracker's HTTP or TVM
 * port — at once, not at the timeout.
 */
export async function connectTracker(address?: string, opts: ConnectOptions = {}): Promise<TrackerClient> {
  checkOptions("connectTracker", opts);
  const implied = address === undefined ? defaultTracker() : undefined;
  if (implied) address = implied.address;
  try {
    parseAddress(address!);
    return await dial(address!, opts);
  } catch (err) {
    if (!implied) throw err;
    const e = FarmError.from(err);
    throw new FarmError(e.code, `${e.message} (the address ${address} is ${implied.why})`, { details: e.details, cause: err });
  }
}

async function dial(address: string, opts: ConnectOptions): Promise<TrackerClient> {
  const env = process.env;
  const tls = opts.tls ?? (env.KFARM_TLS_CA ? { caFile: env.KFARM_TLS_CA, certFile: env.KFARM_TLS_CERT, keyFile: env.KFARM_TLS_KEY } : undefined);
  const security = clientSecurity(
    { tlsCa: tls?.caFile, tlsCert: tls?.certFile, tlsKey: tls?.keyFile, tlsServerName: tls?.serverName, token: opts.token ?? (env.KFARM_TOKEN || undefined) },
    "connectTracker",
  );
  const client = makeClient<HostServiceClient>(HostService, address, security, {
    "grpc.initial_reconnect_backoff_ms": 200,
    "grpc.max_reconnect_backoff_ms": TRACKER_RECONNECT_MAX_MS,
  });
  const timeoutMs = opts.connectTimeoutMs ?? DEFAULT_CONNECT_TIMEOUT_MS;
  const deadline = Date.now() + timeoutMs;
  await new Promise<void>((resolve, reject) => {
    let settled = false;
    const fail = (why: string, err?: unknown) => {
      if (settled) return;
      settled = true;
      client.close();
      reject(new FarmError("UNAVAILABLE", why, err === undefined ? {} : { cause: err }));
    };
    client.waitForReady(deadline, (err) => {
      if (settled) return;
      if (!err) {
        settled = true;
        return resolve();
      }
      void (async () => (await wrongPortHint(address)) ?? (await diagnoseTransport(address, security.tls ?? false)))().then((why) =>
        fail(why ?? `cannot reach the tracker at ${address} within ${timeoutMs} ms; is \`kfarm tracker\` running there?`, err),
      );
    });
    // Another protocol on the port fails the channel's first attempt within a round trip: say what answered now, not at the timeout.
    onFirstFailure(
      client.getChannel(),
      deadline,
      () =>
        void wrongPortHint(address).then((hint) => {
          if (hint) fail(hint);
        }),
    );
  });
  return new TrackerClient(address, client, opts, security);
}
