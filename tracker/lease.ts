/**
 * A lease: one session's exclusive hold on one board.
 *
 * | state     | meaning                                                       |
 * |-----------|---------------------------------------------------------------|
 * | `granted` | the host got the grant; host and worker streams are arriving  |
 * | `active`  | both streams are open and the relay runs                      |
 * | `ended`   | over; `reason` says why (null: closed cleanly by the host)    |
 *
 * Every way a lease ends goes through `end()`, which tells both streams the
 * reason, stops timers and hands the board back through `onEnded`.
 */
import type { ServerDuplexStream } from "@grpc/grpc-js";
import { FarmError } from "../protos/index.ts";
import type { Board } from "./registry.ts";
import { Relay } from "./relay.ts";

export type SessionStream = ServerDuplexStream<Buffer, Buffer>;
export type LeaseState = "granted" | "active" | "ended";

export interface LeaseTimeouts {
  openTimeoutMs: number;
  sessionTimeoutMs: number;
  workerReportGraceMs: number;
}

export class Lease {
  state: LeaseState = "granted";
  reason: FarmError | null = null;
  readonly grantedAt = Date.now();
  private host: SessionStream | undefined;
  private worker: SessionStream | undefined;
  private relay: Relay | undefined;
  /** When it ended (ms since the epoch). */
  endedAt = 0;
  private readonly timers = new Set<NodeJS.Timeout>();
  private awaitingReport = false;

  constructor(
    readonly id: string,
    readonly token: string,
    readonly board: Board,
    readonly clientId: string,
    /** The token id granted this session (undefined on a farm without tokens). */
    readonly owner: string | undefined,
    private readonly timeouts: LeaseTimeouts,
    private readonly onEnded: (lease: Lease) => void,
  ) {
    this.after(timeouts.openTimeoutMs, () => {
      if (this.state === "granted") {
        const missing = !this.host ? "host" : "board's worker";
        this.end(new FarmError("CANCELLED", `session ${id} was released: the ${missing} did not open it within ${timeouts.openTimeoutMs} ms`));
      }
    });
    if (timeouts.sessionTimeoutMs > 0) {
      this.after(timeouts.sessionTimeoutMs, () =>
        this.end(new FarmError("SESSION_TIMEOUT", `session ${id} exceeded its session timeout of ${timeouts.sessionTimeoutMs} ms; request a longer sessionTimeoutMs`)),
      );
    }
  }


  attachHost(call: SessionStream): void {
    if (this.host) throw new FarmError("PROTOCOL_ERROR", `session ${this.id} is already open`);
    this.host = call;
    this.watch(call, "host");
    this.maybeStart();
  }

  attachWorker(call: SessionStream): void {
    if (this.worker) throw new FarmError("PROTOCOL_ERROR", `session ${this.id} already has a worker stream`);
    this.worker = call;
    this.watch(call, "worker");
    this.maybeStart();
  }

  private watch(call: SessionStream, side: "host" | "worker"): void {
    // A stream that breaks without a clean half-close.
    const broken = () => {
      if (this.state === "ended") return;
      if (side === "host") this.end(new FarmError("CANCELLED", `the host left session ${this.id}`));
      else this.awaitAgentReport();
    };
    call.on("cancelled", broken);
    call.on("error", broken);
  }

  private maybeStart(): void {
    if (this.state !== "granted" || !this.host || !this.worker) return;
    this.state = "active";
    this.relay = new Relay(
      this.host,
      this.worker,
      () => this.awaitAgentReport(),
      () => this.end(null),
    );
  }

  /**
   * The worker's stream ended or broke without its GOODBYE. Only its agent
   * knows why (crash, call timeout), and it reports either way (SessionEnded);
   * give the report a moment before settling for a generic reason.
   */
  private awaitAgentReport(): void {
    if (this.state === "ended" || this.awaitingReport) return;
    this.awaitingReport = true;
    this.after(this.timeouts.workerReportGraceMs, () =>
      this.end(new FarmError("RUNTIME_CRASH", `the session worker of board ${this.board.id} went away and its agent did not say why`)),
    );
  }

  private readonly endListeners: Array<() => void> = [];

  /** Runs `fn` when the lease ends (at once if it has). */
  whenEnded(fn: () => void): void {
    if (this.state === "ended") fn();
    else this.endListeners.push(fn);
  }

  /** Ends the lease once; `reason` null means a clean close. */
  end(reason: FarmError | null): void {
    if (this.state === "ended") return;
    this.state = "ended";
    this.reason = reason;
    this.endedAt = Date.now();
    for (const fn of this.endListeners.splice(0)) fn();
    for (const t of this.timers) clearTimeout(t);
    this.timers.clear();
    this.relay?.stop();
    for (const call of [this.host, this.worker]) {
      if (!call) continue;
      if (reason) failStream(call, reason);
      else endStream(call);
    }
    this.onEnded(this);
  }

  /** Bytes relayed so far, host → board and board → host. */
  get relayed(): { toBoard: number; fromBoard: number } {
    return { toBoard: this.relay?.stats.hostToBoardBytes ?? 0, fromBoard: this.relay?.stats.boardToHostBytes ?? 0 };
  }

  private after(ms: number, fn: () => void): void {
    const t = setTimeout(() => {
      this.timers.delete(t);
      fn();
    }, ms);
    this.timers.add(t);
  }
}

function endStream(call: SessionStream): void {
  if (!call.writableEnded && !call.destroyed) call.end();
}

/** Ends a server stream with the error as its status (code + `farm-code` trailer). */
function failStream(call: SessionStream, reason: FarmError): void {
  if (call.destroyed || call.writableEnded) return;
  call.emit("error", reason.toGrpc());
}
