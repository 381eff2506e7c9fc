/**
 * Matches session requests with free boards: one queue per key, label
 * selectors, deadlines, and the hand-over of a board to a new lease.
 */
import { randomBytes } from "node:crypto";
import { FarmError, type Route } from "../protos/index.ts";
import { LongTimer, type Logger, type TicketSigner } from "../runtime/index.ts";
import type { SessionRequest__Output } from "../protos/index.ts";
import { Lease, type LeaseTimeouts } from "./lease.ts";
import { labelsMatch, RequestQueue, type Fairness, type PendingRequest } from "./queue.ts";
import type { FarmEvents } from "./events.ts";
import { boardState, describeBoard, servesAsker, type Board, type BoardLease, type BoardProtocol, type Registry } from "./registry.ts";

export interface Waiter extends PendingRequest {
  readonly sessionTimeoutMs: number;
  /** The token id of the requester (undefined on a farm without tokens): only it may open and release the session. */
  readonly owner: string | undefined;
  /** How the host wants the session's frames to travel. */
  readonly route: Route;
  /** Who asks: a kernelfarm host, or a TVM client (tracker/tvm/); each is granted boards of its own protocol only. */
  readonly protocol: BoardProtocol;
  /** Only this board (AGENT/NAME), when the host named one (`kfarm vta program` does). */
  readonly boardId: string | undefined;
  grant(lease: BoardLease, queuedMs: number): void;
  fail(err: FarmError): void;
  /** Its deadline; none where it has no cap (`--default-deadline-ms 0` and a request naming none). */
  timer?: LongTimer;
}

export interface SchedulerHooks {
  /** A lease was granted: tell the board's agent. */
  assigned(lease: BoardLease): void;
  /** A lease ended: tell the board's agent, account for it. */
  ended(lease: BoardLease): void;
  /** When the last board of `key` left (tracker/board-memory.ts), if one was ever attached. */
  lastLeft(key: string): number | undefined;
}

/**
 * A request for a key no attached board serves waits (up to its deadline) if
 * a board of that key left within this long: its agent is restarting, its
 * host is partitioned, the tracker itself restarted and the agents are
 * re-attaching. A key no board has served in that time fails NO_BOARD at
 * once, naming the keys served (docs/architecture.md, "Scheduling").
 */
export const RECENT_KEY_MS = 10 * 60_000;

/**
 * What the operator sets for each kind of asker (`kfarm tracker
 * --default-deadline-ms` for kernelfarm's hosts; `--tvm-deadline-ms`,
 * `--tvm-fairness` for TVM's clients on the TVM port).
 */
export interface AskerPolicy {
  /** The queue wait of a request that names none; 0: no cap. */
  readonly deadlineMs: number;
  /** Equal priorities: `per-client`, the client served least recently first; `fifo`, arrival order. */
  readonly fairness: Fairness;
}

/**
 * What differs between the clients a request comes from — kernelfarm's
 * hosts (the SDK) and TVM's clients (the TVM port) — as data, so the
 * scheduler asks no one which they are.
 */
const CLIENTS: Record<
  BoardProtocol,
  {
    /**
     * A request no board can serve now waits all the same (TVM's tracker
     * waits for any key: a server may register later, and TVM's client
     * cannot tell a refusal from a bug); otherwise it fails NO_BOARD at once.
     */
    waitsForAnyKey: boolean;
    /**
     * A request that names its own deadline waits up to it for a key no board
     * serves yet (an agent started just before the script attaches a moment
     * later, as TVM's servers register); one without fails NO_BOARD at once,
     * saying how to wait.
     */
    waitsWithItsDeadline: boolean;
    /** A key whose boards left a moment ago (an agent restarting) is waited for rather than refused. */
    waitsForReturningBoards: boolean;
    /** Why no board can serve `key`: the keys its kind of boards serve, and how many boards of `key` serve the other kind only. */
    noBoard(key: string, keys: string[], others: number): string;
  }
> = {
  kernelfarm: {
    waitsForAnyKey: false,
    waitsWithItsDeadline: true,
    waitsForReturningBoards: true,
    noBoard: (key, keys, others) =>
      `no board serves key "${key}"; keys served: ${keys.length ? keys.join(", ") : "(none: no agent is attached)"}${others ? `; ${others} TVM server(s) of key "${key}" serve TVM clients only, on the TVM port` : ""}`,
  },
  tvm: {
    waitsForAnyKey: true,
    waitsWithItsDeadline: true,
    waitsForReturningBoards: false,
    noBoard: (key, keys, others) =>
      `no TVM server serves key "${key}"; keys TVM servers serve: ${keys.length ? keys.join(", ") : "(none: no TVM server is registered)"}${others ? `; ${others} kernelfarm board(s) of key "${key}" serve kernelfarm's SDK only` : ""}`,
  },
};

export class Scheduler {
  private readonly queues = new Map<string, RequestQueue<Waiter>>();
  readonly leases = new Map<string, BoardLease>();
  private seq = 0;
  private nextSession = 1;
  /** Set by close(): the tracker is stopping, nothing is queued or granted any more. */
  private closedWith: FarmError | undefined;

  constructor(
    private readonly registry: Registry,
    private readonly timeouts: Omit<LeaseTimeouts, "sessionTimeoutMs">,
    private readonly askers: Readonly<Record<BoardProtocol, AskerPolicy>>,
    private readonly hooks: SchedulerHooks,
    private readonly log: Logger,
    private readonly events: FarmEvents,
    /** Signs each grant's ticket (runtime/session-tickets.ts). */
    private readonly tickets: TicketSigner,
  ) {}

  private queueChanged(key: string): void {
    // An empty queue of a key no board serves goes: TVM's clients wait for any key they name, and each would stay.
    if (this.queues.get(key)?.size === 0 && this.registry.boardsWithKey(key).size === 0) this.queues.delete(key);
    this.events.emit({ type: "queue", at: Date.now(), key, pending: this.pendingOf(key) });
  }

  /** Requests waiting for `key` (of one protocol's askers, if given). */
  pendingOf(key: string, protocol?: BoardProtocol): number {
    const queue = this.queues.get(key);
    if (!queue || protocol === undefined) return queue?.size ?? 0;
    return queue.all().filter((w) => w.protocol === protocol).length;
  }

  queuedKeys(): string[] {
    return [...this.queues.entries()].filter(([, q]) => q.size > 0).map(([k]) => k);
  }

  /**
   * Enqueues a request; fails at once when no board could ever serve it and
   * the request names no deadline of its own (TVM's clients wait for any key,
   * a request with a deadline waits up to it for a board to attach).
   */
  request(
    req: SessionRequest__Output,
    callbacks: { grant: Waiter["grant"]; fail: Waiter["fail"] },
    owner?: string,
    route: Route = "auto",
    protocol: BoardProtocol = "kernelfarm",
  ): Waiter | undefined {
    if (this.closedWith) {
      callbacks.fail(this.closedWith);
      return undefined;
    }
    if (!req.key) {
      callbacks.fail(new FarmError("INVALID_ARGUMENT", "a session request needs a key"));
      return undefined;
    }
    const labels = req.labels ?? {};
    const boardId = req.board_id || undefined;
    const unservable = this.unservable(req.key, labels, boardId, protocol);
    const client = CLIENTS[protocol];
    // Looked at only for a request none can serve: the key's list is built then, not on every request.
    const keyAbsent = unservable !== undefined && this.registry.boardsOfKey(req.key).length === 0;
    // The request's own deadline, not the operator's default: a script that gives none has not said it will wait.
    // Only for a key no board serves yet (its agent may be starting); a key whose boards lack the labels, or are
    // out of rotation, or serve TVM's clients only, is refused at once: waiting would only hide the reason.
    const waits = client.waitsForAnyKey || (keyAbsent && client.waitsWithItsDeadline && req.deadline_ms > 0);
    if (unservable && !waits) {
      callbacks.fail(
        keyAbsent
          ? new FarmError(
              unservable.code,
              `${unservable.message} (a request without a deadline of its own fails at once; to wait for a board of "${req.key}" to attach, give it one: request(key, { deadlineMs }), in Python request(key, deadline=SECONDS))`,
            )
          : unservable,
      );
      return undefined;
    }
    const policy = this.askers[protocol];
    const deadlineMs = req.deadline_ms || policy.deadlineMs;
    if (unservable)
      this.log.info(
        { key: req.key, client: req.client_id, deadlineMs },
        `a ${protocol} request for key "${req.key}" waits${deadlineMs > 0 ? ` up to ${deadlineMs} ms` : ""} though none can serve it now: ${unservable.message}`,
      );
    const waiter: Waiter = {
      seq: this.seq++,
      key: req.key,
      priority: req.priority,
      labels,
      clientId: req.client_id || "anonymous",
      fairness: policy.fairness,
      enqueuedAt: Date.now(),
      sessionTimeoutMs: req.session_timeout_ms,
      owner,
      route,
      protocol,
      boardId,
      grant: callbacks.grant,
      fail: callbacks.fail,
    };
    const queue = this.queueOf(req.key);
    queue.push(waiter);
    this.queueChanged(req.key);
    // 0: no cap (the operator's default; a request's own 0 means "the default"). Any length: LongTimer.
    if (deadlineMs > 0)
      waiter.timer = new LongTimer(deadlineMs, () => {
        if (queue.remove(waiter)) {
          this.queueChanged(req.key);
          const busy = this.registry.boardsOfKey(req.key, protocol).length;
          const gone = CLIENTS[protocol].waitsForReturningBoards ? this.hooks.lastLeft(req.key) : undefined;
          // A request that waited though none could serve it (TVM's, or one with its own deadline) says why none could, where none could.
          const why = waits ? this.unservable(req.key, labels, boardId, protocol) : undefined;
          waiter.fail(
            new FarmError(
              "DEADLINE_EXCEEDED",
              busy === 0 && gone !== undefined
                ? `no board of key "${req.key}" came back within the request's deadline of ${deadlineMs} ms: none is attached, the last left ${((Date.now() - gone) / 1000).toFixed(1)} s ago (is its agent running? kfarm status shows the boards attached)`
                : why
                  ? `no board of key "${req.key}" could serve the request within ${deadlineMs} ms: ${why.message}`
                  : `no board of key "${req.key}" became free within ${deadlineMs} ms (${busy} board(s) serve it, ${queue.size} other request(s) waiting)`,
            ),
          );
        }
      });
    this.dispatch(req.key);
    return waiter;
  }

  /**
   * Why no board could ever serve a request for `key` (docs/architecture.md,
   * "Scheduling"), or undefined when one can or may come back.
   * A usable board is found among the key's boards, or the ones named, without
   * a copy, and the search stops there: the lists that say why not are built
   * only for a request that fails (a farm of 10,000 boards paid them on every
   * request, BENCHMARKS.md §18).
   */
  private unservable(key: string, labels: Readonly<Record<string, string>>, boardId: string | undefined, protocol: BoardProtocol): FarmError | undefined {
    const fits = (b: { id: string; labels: Readonly<Record<string, string>> }) => labelsMatch(labels, b.labels) && (!boardId || b.id === boardId);
    const named = boardId === undefined ? undefined : this.registry.board(boardId);
    for (const b of boardId === undefined ? this.registry.boardsWithKey(key) : named?.key === key ? [named] : []) {
      if (servesAsker(b, protocol) && fits(b) && boardState(b) !== "quarantined" && !b.drain) return undefined;
    }
    // None: why not, from the whole list of the key's boards.
    const boards = this.registry.boardsOfKey(key, protocol);
    // Only where no board serves the key: the board memory is looked through then, not at every request.
    const left = boards.length === 0 && CLIENTS[protocol].waitsForReturningBoards ? this.hooks.lastLeft(key) : undefined;
    const returning = left !== undefined && Date.now() - left <= RECENT_KEY_MS;
    if (boards.length === 0 && !returning) return this.noBoard(key, protocol);
    if (boardId && !returning && !boards.some((b) => b.id === boardId))
      return new FarmError("NO_BOARD", `no board ${boardId} serves key "${key}"; boards of that key: ${boards.map((b) => b.id).join(", ")}`);
    // Boards that are away cannot be asked about their labels: a returning key's request waits.
    if (!returning && !boards.some(fits)) {
      const seen = boards.map(
        (b) =>
          `${b.id} {${Object.entries(b.labels)
            .map(([k, v]) => `${k}=${v}`)
            .join(", ")}}`,
      );
      return new FarmError("NO_BOARD", `no board of key "${key}" has labels ${JSON.stringify(labels)}; boards of that key: ${seen.join("; ")}`);
    }
    // Boards out of rotation come back only by an operator or passing canaries: say so now rather than at the deadline.
    const usable = boards.filter((b) => fits(b) && boardState(b) !== "quarantined" && !b.drain);
    if (!returning && usable.length === 0) {
      const why = boards.filter(fits).map((b) => `${b.id} (${boardState(b) === "quarantined" ? `quarantined: ${b.health.reason}` : b.drain})`);
      return new FarmError("NO_BOARD", `every board of key "${key}" is out of rotation: ${why.join("; ")}`);
    }
    return undefined;
  }

  /** NO_BOARD for `key`, naming the keys `protocol`'s boards serve (and the other protocol's boards of `key`: kernelfarm hosts and TVM clients share no boards). */
  private noBoard(key: string, protocol: BoardProtocol): FarmError {
    return new FarmError("NO_BOARD", CLIENTS[protocol].noBoard(key, this.registry.keys(protocol), this.registry.boardsOfKey(key).length));
  }

  /** The requester went away before being served. */
  cancel(waiter: Waiter): void {
    waiter.timer?.clear();
    if (this.queues.get(waiter.key)?.remove(waiter)) this.queueChanged(waiter.key);
  }

  /**
   * The tracker is stopping: every waiting request fails with `why(key,
   * waitedMs)` now, and no board is granted from here on — not even one that
   * the leases ending next hand back, which would grant a session on a
   * tracker about to go.
   */
  close(why: (key: string, waitedMs: number) => FarmError): void {
    this.closedWith = why("", 0);
    for (const [key, queue] of this.queues) {
      if (queue.size === 0) continue;
      for (const waiter of [...queue.all()]) {
        queue.remove(waiter);
        waiter.timer?.clear();
        waiter.fail(why(key, Date.now() - waiter.enqueuedAt));
      }
      this.queueChanged(key);
    }
  }

  /**
   * Grants free boards of `key` to waiting requests, best request first; the
   * board ready longest goes first. Only ready boards are looked at (the
   * registry keeps them apart): not the busy ones, which at scale are the
   * first thousand of the key's boards.
   */
  dispatch(key: string): void {
    const queue = this.queues.get(key);
    if (!queue || queue.size === 0 || this.closedWith) return;
    for (const board of this.registry.readyBoardsOf(key)) {
      if (boardState(board) !== "free") continue;
      const waiter = queue.take((w) => servesAsker(board, w.protocol) && labelsMatch(w.labels, board.labels) && (!w.boardId || w.boardId === board.id));
      if (!waiter) continue;
      waiter.timer?.clear();
      this.grant(board, waiter);
      this.queueChanged(key);
      if (queue.size === 0) return;
    }
  }

  private grant(board: Board, waiter: Waiter): void {
    const id = `s${this.nextSession++}-${randomBytes(3).toString("hex")}`;
    // auto: direct where the board's agent serves a direct lane (relay as the host's fallback), else relay.
    const route = waiter.route === "auto" && !board.agent.data ? "relay" : waiter.route;
    // The worker that will take it listens already (its standby lane): the grant names it, once, and its ticket opens it alone.
    const standby = (route === "direct" || route === "auto") && board.agent.data && !board.agent.data.tls && board.lanePort > 0;
    const timeouts = { ...this.timeouts, sessionTimeoutMs: waiter.sessionTimeoutMs };
    const now = Date.now();
    const token = this.tickets.issue(
      {
        session_id: id,
        agent_id: board.agent.id,
        board_name: board.name,
        worker_id: standby ? board.workerId : "",
        route,
        expires_ms: now + Math.max(timeouts.openTimeoutMs, board.agent.control.minOpenTimeoutMs ?? 0),
        session_timeout_ms: timeouts.sessionTimeoutMs,
      },
      now,
    );
    const lease = new Lease(id, token, board, waiter.clientId, waiter.owner, route, timeouts, (l) => this.onLeaseEnded(l));
    lease.whenActive(() => this.events.emit({ type: "board", at: Date.now(), board: describeBoard(board), change: "changed" }));
    if (standby) lease.lanePort = board.lanePort;
    board.lanePort = 0;
    board.workerId = "";
    board.lease = lease;
    this.registry.setReady(board, false);
    this.leases.set(id, lease);
    // Before the grant: a TVM server's board gives the lease the key its client is then told (tracker/tvm/server.ts).
    this.hooks.assigned(lease);
    const queuedMs = Date.now() - waiter.enqueuedAt;
    const at = Date.now();
    this.events.emit({ type: "session", at, session: id, board: board.id, key: board.key, client: waiter.clientId, change: "granted", queuedMs });
    this.events.emit({ type: "board", at, board: describeBoard(board), change: "changed" });
    waiter.grant(lease, queuedMs);
  }

  private onLeaseEnded(lease: BoardLease): void {
    this.leases.delete(lease.id);
    if (lease.board.lease === lease) lease.board.lease = undefined;
    this.log.info({ session: lease.id, board: lease.board.id, reason: lease.reason?.code ?? "CLOSED", detail: lease.reason?.message }, "session ended");
    this.hooks.ended(lease);
    const { toBoard, fromBoard } = lease.relayed;
    lease.board.bytes.toBoard += toBoard;
    lease.board.bytes.fromBoard += fromBoard;
    this.events.emit({
      type: "session",
      at: lease.endedAt,
      session: lease.id,
      board: lease.board.id,
      key: lease.board.key,
      client: lease.clientId,
      change: "ended",
      reason: lease.reason?.code ?? "OK",
      ...(lease.reason ? { message: lease.reason.message } : {}),
      durationMs: lease.endedAt - lease.grantedAt,
      lane: lease.lane ?? "none",
      bytesToBoard: toBoard,
      bytesFromBoard: fromBoard,
    });
    if (this.registry.agents.has(lease.board.agent.id))
      this.events.emit({ type: "board", at: lease.endedAt, board: describeBoard(lease.board), change: "changed" });
    this.dispatch(lease.board.key);
  }

  private queueOf(key: string): RequestQueue<Waiter> {
    let q = this.queues.get(key);
    if (!q) this.queues.set(key, (q = new RequestQueue()));
    return q;
  }
}
