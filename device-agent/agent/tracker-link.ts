/**
 * The agent's Attach stream to the tracker: register, heartbeat, receive
 * assignments. When the tracker goes away (stream error, or `maxMissed`
 * heartbeats unanswered) the link re-dials with capped backoff and
 * registers again, so boards come back within a second of the tracker
 * listening again. Each re-dial after a loss opens a new connection: across
 * a partition the old one is silently dead, and TCP's retransmit backoff on
 * it (seconds after a long outage) would hold the agent out well after the
 * network is back; a registration unanswered within ATTACH_TIMEOUT_MS is a
 * loss too, so a dial into a black hole is abandoned rather than waited on.
 *
 * | state        | meaning                                       |
 * |--------------|-----------------------------------------------|
 * | `connecting` | dialing / waiting for Registered              |
 * | `attached`   | registered; heartbeats flowing                |
 * | `backoff`    | lost the tracker; waiting to re-dial          |
 * | `closed`     | stopped for good                              |
 */
import { randomBytes } from "node:crypto";
import type * as grpc from "@grpc/grpc-js";
import { AgentService, FARM_VERSION, FarmError, type AgentServiceClient } from "../../protos/index.ts";
import { callMetadata, diagnoseTransport, makeClient, type ClientSecurity, type Logger } from "../../runtime/index.ts";
import type { AgentMessage } from "../../protos/gen/farm/v1/AgentMessage.ts";
import type { BoardSpec } from "../../protos/gen/farm/v1/BoardSpec.ts";
import type { TrackerMessage__Output } from "../../protos/gen/farm/v1/TrackerMessage.ts";
import type { AssignSession__Output } from "../../protos/gen/farm/v1/AssignSession.ts";
import type { Registered__Output } from "../../protos/gen/farm/v1/Registered.ts";

export type LinkState = "connecting" | "attached" | "backoff" | "closed";

export interface LinkEvents {
  attached(registered: Registered__Output): void;
  detached(why: string): void;
  assign(a: AssignSession__Output): void;
  end(sessionId: string, reason: FarmError | null): void;
  drain(boardName: string): void;
  /** An auto-routed session's host fell back to the tracker's data port. */
  openRelay(sessionId: string): void;
}

/** Where hosts reach this agent's direct lane (Register.data_*). */
export interface DirectLane {
  port: number;
  /** Empty: the address the tracker sees the agent at. */
  host: string;
  tls: boolean;
}

const BACKOFF_START_MS = 50;
/**
 * The link's re-dial and its channel's reconnect are two backoffs in a row:
 * an Attach made while the channel waits out its own backoff fails at once
 * and waits for the next re-dial. At 250 ms each, a restarted tracker has
 * the agent back within ~0.6 s of listening (the target is 1 s).
 */
const BACKOFF_MAX_MS = 250;
/** A dial whose registration is not answered within this long is abandoned and tried again on a new connection. */
export const ATTACH_TIMEOUT_MS = 2000;
/** A transport problem is looked into (a TLS probe) at most this often during an outage. */
const EXPLAIN_EVERY_MS = 5000;
/** During a long outage the agent says it is still trying this often: alive, not flooding. */
export const OUTAGE_REMINDER_MS = 60_000;
/**
 * After the tracker refused the agent's token (UNAUTHENTICATED,
 * PERMISSION_DENIED): a new token or scope takes an operator, so retry
 * slowly rather than twice a second into the tracker's audit log.
 */
const REFUSED_RETRY_MS = 10_000;
/**
 * After NAME_IN_USE (another live agent holds this agent's name): retried
 * sooner, so that this agent takes the name within 2 s of the other leaving
 * (each try costs the tracker one Ping to the holder).
 */
const NAME_RETRY_MS = 2000;
const REFUSALS: ReadonlyMap<string, number> = new Map([
  ["UNAUTHENTICATED", REFUSED_RETRY_MS],
  ["PERMISSION_DENIED", REFUSED_RETRY_MS],
  ["NAME_IN_USE", NAME_RETRY_MS],
]);

export class TrackerLink {
  state: LinkState = "connecting";
  private client: AgentServiceClient;
  private call: grpc.ClientDuplexStream<AgentMessage, TrackerMessage__Output> | undefined;
  private heartbeat: NodeJS.Timeout | undefined;
  private retry: NodeJS.Timeout | undefined;
  private attachTimer: NodeJS.Timeout | undefined;
  private backoffMs = BACKOFF_START_MS;
  private seq = 0;
  private acked = 0;
  /** This process's own id on every registration: the tracker tells its re-dials from another agent of the same name. */
  private readonly instance = randomBytes(8).toString("hex");

  constructor(
    readonly address: string,
    private readonly agentName: string,
    private readonly boards: BoardSpec[],
    private readonly events: LinkEvents,
    private readonly log: Logger,
    private readonly security: ClientSecurity = {},
    private readonly direct?: DirectLane,
  ) {
    this.client = this.connect();
    this.dial();
  }

  private connect(): AgentServiceClient {
    return makeClient<AgentServiceClient>(
      AgentService,
      this.address,
      this.security,
      {
        "grpc.initial_reconnect_backoff_ms": 100,
        "grpc.min_reconnect_backoff_ms": 100,
        "grpc.max_reconnect_backoff_ms": BACKOFF_MAX_MS,
      },
      { reloadCertificates: true },
    );
  }

  /** The last refusal or transport problem logged, so a long outage logs each reason once. */
  private lastProblem = "";
  /** Since when, and how many dials, the tracker has not been reached; said again on a reminder and when it ends. */
  private outage: { since: number; tries: number; saidAt: number } | undefined;

  send(msg: AgentMessage): void {
    if (this.state === "attached" && this.call && !this.call.writableEnded) this.call.write(msg);
  }

  private dial(): void {
    if (this.state === "closed") return;
    this.state = "connecting";
    const call = this.client.Attach(callMetadata(this.security)) as unknown as grpc.ClientDuplexStream<AgentMessage, TrackerMessage__Output>;
    this.call = call;
    let lost = false;
    const lose = (why: string, retryMs?: number) => {
      if (lost || this.call !== call) return;
      lost = true;
      this.lost(why, retryMs);
    };
    call.on("data", (msg: TrackerMessage__Output) => this.onMessage(msg));
    call.on("error", (err) => {
      const e = FarmError.from(err);
      lose(e.message, REFUSALS.get(e.code));
    });
    call.on("end", () => lose("the tracker closed the stream"));
    call.on("status", (s: grpc.StatusObject) => lose(`the tracker ended the stream: ${s.details}`));
    this.attachTimer = setTimeout(() => {
      call.cancel();
      lose(`the tracker did not answer the registration within ${ATTACH_TIMEOUT_MS} ms`);
    }, ATTACH_TIMEOUT_MS);
    call.write({
      register: {
        agent_name: this.agentName,
        boards: this.boards,
        version: FARM_VERSION,
        instance: this.instance,
        ...(this.direct ? { data_port: this.direct.port, data_host: this.direct.host, data_tls: this.direct.tls } : {}),
      },
    });
  }

  private onMessage(msg: TrackerMessage__Output): void {
    if (msg.registered) {
      clearTimeout(this.attachTimer);
      this.state = "attached";
      this.backoffMs = BACKOFF_START_MS;
      this.startHeartbeats(msg.registered.heartbeat_interval_ms, msg.registered.max_missed_heartbeats);
      const outage = this.outage;
      this.outage = undefined;
      this.lastProblem = "";
      const after = outage
        ? ` after ${((Date.now() - outage.since) / 1000).toFixed(1)} s and ${outage.tries} failed ${outage.tries === 1 ? "try" : "tries"}`
        : "";
      this.log.info({ tracker: this.address, agent_id: msg.registered.agent_id }, `attached to the tracker at ${this.address}${after}`);
      this.events.attached(msg.registered);
    } else if (msg.heartbeat_ack) {
      this.acked = Math.max(this.acked, msg.heartbeat_ack.seq);
    } else if (msg.assign) {
      this.events.assign(msg.assign);
    } else if (msg.end_session) {
      this.events.end(msg.end_session.session_id, msg.end_session.reason ? FarmError.fromWire(msg.end_session.reason) : null);
    } else if (msg.drain) {
      this.events.drain(msg.drain.board_name);
    } else if (msg.open_relay) {
      this.events.openRelay(msg.open_relay.session_id);
    } else if (msg.ping) {
      // Another agent registers with this one's name: answering keeps it.
      this.send({ heartbeat: { seq: ++this.seq } });
    }
  }

  private startHeartbeats(intervalMs: number, maxMissed: number): void {
    clearInterval(this.heartbeat);
    this.seq = 0;
    this.acked = 0;
    this.heartbeat = setInterval(() => {
      if (this.seq - this.acked > maxMissed + 1) {
        // The tracker stopped answering without closing the stream (frozen, partitioned).
        this.call?.cancel();
        this.lost(`the tracker answered no heartbeat for ${(this.seq - this.acked) * intervalMs} ms`);
        return;
      }
      this.send({ heartbeat: { seq: ++this.seq } });
    }, intervalMs || 500);
  }

  /** `retryMs`: the tracker refused this agent (REFUSALS), and says when to try again. */
  private lost(why: string, retryMs?: number): void {
    clearInterval(this.heartbeat);
    clearTimeout(this.attachTimer);
    this.call = undefined;
    if (this.state === "closed") return;
    // A new connection for the next dial: the old one may be dead without knowing it (a partition).
    this.client.close();
    this.client = this.connect();
    const wasAttached = this.state === "attached";
    this.state = "backoff";
    const delay = retryMs ?? this.backoffMs * (0.75 + Math.random() / 2);
    this.backoffMs = Math.min(BACKOFF_MAX_MS, this.backoffMs * 2);
    if (this.outage) this.outage.tries++;
    else this.outage = { since: Date.now(), tries: 1, saidAt: 0 };
    if (retryMs !== undefined) this.explainRefusal(why, retryMs);
    else if (wasAttached) this.log.warn({ tracker: this.address }, `lost the tracker at ${this.address}: ${why}; trying again every ${BACKOFF_MAX_MS} ms`);
    else this.explain(transportReason(why), delay);
    this.events.detached(why);
    this.retry = setTimeout(() => this.dial(), delay);
  }

  /** A refused token or a name in use will not fix itself: an error, said once per reason. */
  private explainRefusal(why: string, retryMs: number): void {
    if (why === this.lastProblem) return;
    this.lastProblem = why;
    this.log.error({ tracker: this.address }, `the tracker refused this agent: ${why}; retrying every ${retryMs / 1000} s`);
  }

  private lastExplainAt = 0;

  /**
   * Says why attaching fails (TLS on one side only, a certificate refused,
   * nothing listening) when the reason is new, and then once a minute while
   * the outage lasts — not at every retry, which come four times a second.
   */
  private explain(why: string, nextMs: number): void {
    if (Date.now() - this.lastExplainAt < EXPLAIN_EVERY_MS) return;
    this.lastExplainAt = Date.now();
    void diagnoseTransport(this.address, this.security.tls ?? false).then((transport) => {
      const outage = this.outage;
      if (!outage || this.state === "attached" || this.state === "closed") return;
      const problem = transport ?? why;
      const next = `next try in ${Math.round(nextMs)} ms, then every ${BACKOFF_MAX_MS} ms`;
      if (problem !== this.lastProblem) {
        this.lastProblem = problem;
        outage.saidAt = Date.now();
        this.log.warn(
          { tracker: this.address },
          `cannot attach to the tracker at ${this.address}: ${problem}; ${next} (said again every ${OUTAGE_REMINDER_MS / 1000} s while it lasts)`,
        );
      } else if (Date.now() - outage.saidAt >= OUTAGE_REMINDER_MS) {
        outage.saidAt = Date.now();
        const s = ((Date.now() - outage.since) / 1000).toFixed(0);
        this.log.warn(
          { tracker: this.address },
          `still cannot attach to the tracker at ${this.address} after ${s} s and ${outage.tries} tries: ${problem}; ${next}`,
        );
      }
    });
  }

  close(): void {
    this.state = "closed";
    clearInterval(this.heartbeat);
    clearTimeout(this.retry);
    clearTimeout(this.attachTimer);
    // Half-close first so the tracker sees a clean detach, then drop the call.
    this.call?.end();
    const call = this.call;
    setTimeout(() => {
      call?.cancel();
      this.client.close();
    }, 50).unref();
  }
}

/**
 * The part of a grpc-js transport failure a reader acts on: "No connection
 * established. Last error: Error: connect ECONNREFUSED 127.0.0.1:1.
 * Resolution note: " says "connect ECONNREFUSED 127.0.0.1:1".
 */
export function transportReason(message: string): string {
  const m = /Last error: (?:Error: )?(.*?)\.?\s*(?:Resolution note:.*)?$/s.exec(message);
  return m?.[1] ? m[1] : message;
}
