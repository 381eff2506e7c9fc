/**
 * One TVM RPC server on the TVM port, as a board of the farm: the bridge
 * between what TVM's server says on its tracker connection (UPDATE_INFO,
 * PUT, the GET_PENDING_MATCHKEYS polls of its accept loop) and the registry,
 * the scheduler and the leases every other board goes through. This class is
 * the one owner of that board's lifecycle (docs/architecture.md, "A TVM
 * server's board"):
 *
 * | state         | entered when                                              | board      |
 * |---------------|-----------------------------------------------------------|------------|
 * | `registered`  | UPDATE_INFO `{"key": "server:K"}`                          | none yet   |
 * | `probing`     | a PUT for an address no probe answered yet; a free server silent for SILENT_MS | `starting` |
 * | `unreachable` | the probe of its address failed (retried every PROBE_RETRY_MS) | `starting` |
 * | `free`        | it holds a match key no client was given, its address answered | `free`     |
 * | `granted`     | its key went to a TVM client; it still polls              | `busy`     |
 * | `in-session`  | it stopped polling: the client connected                  | `busy`     |
 * | `spent`       | its lease ended while it served (the session cap)         | `starting` |
 * | `gone`        | its connection closed, it stopped answering, or it was replaced | removed |
 *
 * The lease rule (a TVM client tells the tracker nothing after REQUEST, and
 * keeps its session timeout between itself and the server): a lease ends
 * when the server PUTs again — it is back in its accept loop with a fresh
 * key, so its session is over (OK), or, if it polled GIVE_UP_POLLS times
 * since the grant, it gave the unused key up (CANCELLED: its client never
 * came) — when the server goes (AGENT_LOST), at the tracker's session cap
 * (SESSION_TIMEOUT), or when the tracker stops (DRAINED). The tracker never
 * takes a granted key back by itself: a late client keeps its server for as
 * long as the server waits for it, as with TVM's tracker.
 */
import { FarmError, TVM_BOARD_KIND } from "../../protos/index.ts";
import { type Logger } from "../../runtime/index.ts";
import type { AuditLog } from "../audit.ts";
import type { BoardMemory } from "../board-memory.ts";
import type { FarmEvents } from "../events.ts";
import type { HealthInput } from "../health.ts";
import {
  TVM_AGENT_PREFIX,
  describeBoard,
  joinHostPort,
  newBoard,
  type Board,
  type AgentControl,
  type BoardLease,
  type Registry,
  type TvmAgent,
} from "../registry.ts";
import type { Scheduler } from "../scheduler.ts";
import { probeTvmServer, type TvmServerDialect } from "./probe.ts";

/** A TVM server's accept loop polls (GET_PENDING_MATCHKEYS) this often while it waits (docs/tvm-tracker.md, "TVM's protocol" §3). */
export const TVM_POLL_MS = 2000;
/** No poll this long after a grant (or after the last poll): the server is serving, its client connected. */
export const POLL_GAP_MS = TVM_POLL_MS + 1000;
/**
 * A server that polled this often since its key was granted, and then PUTs a
 * fresh key, gave the key up unused: TVM's rpc_server does so at the 4th poll
 * that no longer lists its key (`unmatch_timeout`, ~8 s after the grant). One
 * that stopped polling before its PUT served a session.
 */
export const GIVE_UP_POLLS = 4;
/** A free server that sends nothing this long (3 polls) is probed; if the probe fails it leaves the pool. */
export const SILENT_MS = 3 * TVM_POLL_MS;
/** How often an address that failed its probe is probed again. */
export const PROBE_RETRY_MS = 5000;

export type TvmServerState = "registered" | "probing" | "unreachable" | "free" | "granted" | "in-session" | "spent" | "gone";

/** The tracker's parts a TVM server's board goes through: the same as a kernelfarm agent's. */
export interface TvmFarm {
  readonly registry: Registry;
  readonly scheduler: Scheduler;
  readonly events: FarmEvents;
  readonly memory: BoardMemory;
  readonly audit: AuditLog;
  readonly log: Logger;
  /** The TVM servers with a board, by agent id (the TVM port's). */
  readonly servers: Map<string, TvmServer>;
}

/** The tracker connection a server talks on, as the server needs it. */
export interface TvmServerLink {
  /** The peer's IP, as the tracker sees it. */
  readonly peerHost: string;
  /** "ip:port" of the tracker connection. */
  readonly peer: string;
  /** Which TVM server it is (probe.ts opens to each so that it drops the probe quietly). */
  readonly dialect: TvmServerDialect;
  /** Ends the connection (the server is gone or replaced). */
  close(why: string): void;
}

/** A PUT's content, checked. */
export interface TvmPut {
  key: string;
  port: number;
  matchkey: string;
}

export class TvmServer {
  state: TvmServerState = "registered";
  /** The RPC key it serves (`server:K` → K). */
  readonly key: string;
  /** The info dict of its UPDATE_INFO messages, merged (TVM's SUMMARY lists it). */
  readonly info: Record<string, unknown>;
  agent: TvmAgent | undefined;
  board: Board | undefined;
  /** Where its clients connect. */
  private address: { host: string; port: number } | undefined;
  /** The address the last probe answered at ("host:port"). */
  private verified = "";
  /** Its match key that no client was given yet. */
  private freeKey: string | undefined;
  /** The key its current lease's client was given. */
  private claimedKey: string | undefined;
  /** Polls since the current grant. */
  private pollsSinceGrant = 0;
  private watch: NodeJS.Timeout | undefined;
  private retry: NodeJS.Timeout | undefined;
  private probing = false;
  private lastHeardAt = Date.now();

  constructor(
    private readonly farm: TvmFarm,
    private readonly link: TvmServerLink,
    key: string,
    info: Record<string, unknown>,
  ) {
    this.key = key;
    this.info = info;
  }

  /** `tvm@HOST:PORT`: the agent name, so the board id is `tvm@HOST:PORT/KEY`, the same across the server's reconnections (drains, quarantines and health are remembered by it). */
  static agentName(host: string, port: number): string {
    return `${TVM_AGENT_PREFIX}${joinHostPort(host, port)}`;
  }

  /** The address its clients are given: [host, port, matchkey] of its current lease. */
  grantOf(lease: BoardLease): [string, number, string] {
    if (!this.address || !this.claimedKey || this.board?.lease !== lease)
      throw new FarmError("INTERNAL", `TVM server ${this.link.peer} holds no key for session ${lease.id}`);
    return [this.address.host, this.address.port, this.claimedKey];
  }

  /** Where its clients connect, once it PUT. */
  get clientAddress(): readonly [string, number] | undefined {
    return this.address ? [this.address.host, this.address.port] : undefined;
  }

  /** GET_PENDING_MATCHKEYS: its keys that no client was given. */
  pendingKeys(): string[] {
    return this.freeKey ? [this.freeKey] : [];
  }

  /** Any message from it: it is alive (its accept loop polls every 2 s while it waits). */
  heard(): void {
    this.lastHeardAt = Date.now();
    if (this.agent) this.agent.lastSeen = this.lastHeardAt;
    this.arm();
  }

  /** A GET_PENDING_MATCHKEYS poll: it is waiting in its accept loop (while granted: its client has not come yet). */
  polled(): void {
    if (this.state === "granted") this.pollsSinceGrant++;
  }

  /**
   * PUT: a free slot, with a fresh match key (at registration, after each
   * session, or when it gave a key up). Its clients connect to `host`, the
   * address its tracker connection comes from: never one the peer names
   * (connection.ts refuses a --custom-addr other than that), since the
   * tracker probes it.
   */
  put(put: TvmPut, host: string): void {
    if (put.key !== this.key) {
      throw new FarmError(
        "INVALID_ARGUMENT",
        `PUT for key "${put.key}" on the connection of TVM server "server:${this.key}": one server per tracker connection, serving the key it registered (TVM's rpc_proxy, which PUTs for many keys, is not served: docs/tvm-tracker.md)`,
      );
    }
    if (this.address && (this.address.host !== host || this.address.port !== put.port)) {
      throw new FarmError(
        "INVALID_ARGUMENT",
        `PUT for ${joinHostPort(host, put.port)} from TVM server ${this.board?.id}: a server keeps its address for as long as its tracker connection; reconnect to register another`,
      );
    }
    this.address = { host, port: put.port };
    if (!this.board) this.register(host, put.port);
    const lease = this.board!.lease;
    this.freeKey = put.matchkey;
    // A probe is out: its answer decides (a client's connection must not queue behind it).
    if (this.probing) return;
    if (lease) {
      // Back in its accept loop with a fresh key: the session is over (or, if it kept polling, its client never came and it gave the key up).
      const neverCame = lease.state === "granted" && this.pollsSinceGrant >= GIVE_UP_POLLS;
      if (!neverCame) lease.opened("tvm");
      this.becomeReady();
      lease.end(
        neverCame
          ? new FarmError(
              "CANCELLED",
              `session ${lease.id}: its TVM client never connected to TVM server ${this.board!.id}, which gave its key up after ${this.pollsSinceGrant} polls (${((Date.now() - lease.grantedAt) / 1000).toFixed(1)} s)`,
            )
          : null,
      );
      return;
    }
    this.becomeReady();
  }

  /** The scheduler granted its board: the free key goes to the client. */
  /**
   * What the tracker asks of this server: only its grants. A TVM client
   * never reaches the data port (no ticket is sent to it), and what follows
   * a lease is between the client and the server, which comes back to the
   * pool by itself (leaseEnded).
   */
  private readonly control: AgentControl = {
    assign: (lease) => this.assigned(lease),
    openRelay: () => {},
    end: () => {},
    laneMissing: "the TVM client did not connect to the TVM server",
    // A client may come until the server gives its key up; the tracker learns it came only when the polls stop.
    minOpenTimeoutMs: (GIVE_UP_POLLS + 1) * TVM_POLL_MS + POLL_GAP_MS,
  };

  private assigned(lease: BoardLease): void {
    this.claimedKey = this.freeKey;
    this.freeKey = undefined;
    this.pollsSinceGrant = 0;
    this.state = "granted";
    this.arm();
    lease.whenEnded(() => this.leaseEnded(lease));
  }

  /** Its tracker connection closed, it stopped answering, or a new connection took its address over. */
  gone(why: string): void {
    if (this.state === "gone") return;
    this.state = "gone";
    clearTimeout(this.watch);
    clearTimeout(this.retry);
    const { agent, board } = this;
    if (!agent || !board || !this.farm.registry.remove(agent)) return;
    this.farm.servers.delete(agent.id);
    this.farm.log.warn({ board: board.id, peer: this.link.peer }, `TVM server gone: ${why}`);
    board.lease?.end(new FarmError("AGENT_LOST", `TVM server ${board.id} was lost: ${why}`));
    this.farm.memory.left(board);
    const at = Date.now();
    this.farm.events.emit({ type: "board", at, board: describeBoard(board), change: "removed", reason: why });
    this.farm.events.emit({ type: "agent", at, agent: agent.id, name: agent.name, peer: agent.peer, change: "lost", reason: why });
  }

  /** The first PUT: the board appears, and its address is probed before anything is granted. */
  private register(host: string, port: number): void {
    const name = TvmServer.agentName(host, port);
    // A server that reconnects may be faster than the tracker noticing its old connection broke: the new one replaces it.
    const previous = this.farm.registry.agentByName(name);
    if (previous) this.farm.servers.get(previous.id)?.link.close(`replaced: a new tracker connection from ${this.link.peer} registered ${name}`);
    const id = this.farm.registry.newAgentId(name);
    const agent: TvmAgent = {
      protocol: "tvm",
      control: this.control,
      id,
      name,
      peer: this.link.peer,
      attachedAt: Date.now(),
      lastSeen: Date.now(),
      boards: new Map(),
      data: undefined,
    };
    const capabilities: Record<string, string> = {
      protocol: "TVM RPC (tracker protocol on the TVM port)",
      tvm_key: `server:${this.key}`,
      tracker_peer: this.link.peer,
    };
    for (const [field, value] of Object.entries(this.info)) {
      if (field !== "key" && field !== "addr") capabilities[`info.${field}`] = typeof value === "string" ? value : JSON.stringify(value);
    }
    const board = newBoard(agent, {
      id: `${name}/${this.key}`,
      name: this.key,
      key: this.key,
      kind: TVM_BOARD_KIND,
      labels: { address: joinHostPort(host, port) },
      capabilities,
    });
    agent.boards.set(board.name, board);
    this.farm.memory.recall([board]);
    this.farm.registry.add(agent);
    this.farm.servers.set(id, this);
    this.agent = agent;
    this.board = board;
    this.farm.log.info({ board: board.id, peer: this.link.peer }, `TVM server registered: key "${this.key}", clients connect to ${joinHostPort(host, port)}`);
    this.farm.audit.record({ event: "agent_attach", who: name, kind: "tvm", peer: this.link.peer, agent: id, boards: [`${this.key}:${this.key}`] });
    const at = Date.now();
    this.farm.events.emit({ type: "agent", at, agent: id, name, peer: agent.peer, change: "attached" });
    this.farm.events.emit({ type: "board", at, board: describeBoard(board), change: "added" });
  }

  /** A free key: granted at once if its address answered, else after the probe does. */
  private becomeReady(): void {
    if (this.verified !== this.where()) {
      void this.probe("registration");
      return;
    }
    this.state = "free";
    this.setReady(true);
  }

  private where(): string {
    return this.address ? joinHostPort(this.address.host, this.address.port) : "";
  }

  private setReady(ready: boolean): void {
    const board = this.board;
    if (!board || board.ready === ready) return;
    this.farm.registry.setReady(board, ready);
    if (!board.lease) this.farm.events.emit({ type: "board", at: Date.now(), board: describeBoard(board), change: "changed" });
    if (ready) this.farm.scheduler.dispatch(board.key);
  }

  /**
   * Probes its address; `why`: at registration (a new address), when a free
   * server went silent, or a retry of a failed one. Nothing is granted while
   * it runs: a client's connection and the probe's would queue behind each
   * other at a server that serves one connection at a time.
   */
  private async probe(why: "registration" | "silent" | "retry"): Promise<void> {
    // A leased server is serving or about to: a probe would queue behind its client (and the lease decides its state).
    if (this.probing || !this.address || !this.board || this.board.lease) return;
    this.probing = true;
    this.state = "probing";
    clearTimeout(this.retry);
    this.setReady(false);
    const where = this.where();
    const startedAt = Date.now();
    const failure = await probeTvmServer(this.address.host, this.address.port, this.link.dialect);
    this.probing = false;
    if ((this.state as TvmServerState) === "gone") return;
    // Silent, and its port does not answer either: it stopped (a frozen process, a host gone without a FIN).
    if (failure && why === "silent" && this.lastHeardAt < startedAt) {
      this.link.close(`it sent nothing for ${SILENT_MS} ms while free, and ${failure}`);
      return;
    }
    this.health(
      failure
        ? { kind: "canary_failed", reason: `probe of the TVM server: ${failure}` }
        : { kind: "canary_passed", detail: `its RPC port ${where} answered a probe` },
    );
    if (failure) {
      this.farm.log.warn(
        { board: this.board.id },
        `TVM server ${this.board.id}: ${failure}; clients would fail to connect, so it is not granted (probed again every ${PROBE_RETRY_MS} ms)`,
      );
      this.state = "unreachable";
      this.retry = setTimeout(() => void this.probe("retry"), PROBE_RETRY_MS);
      return;
    }
    this.verified = where;
    // An automatic quarantine lifts after passes in a row: keep probing until it has.
    if (this.board.health.state === "quarantined" && !this.board.health.heldByOperator) this.retry = setTimeout(() => void this.probe("retry"), PROBE_RETRY_MS);
    if (this.freeKey) {
      this.state = "free";
      this.setReady(true);
      this.arm();
    } else {
      this.state = "spent";
    }
  }

  /** A probe's outcome feeds the board's health, as a canary's does (tracker/health.ts). */
  private health(input: HealthInput): void {
    const board = this.board!;
    const from = board.health.state;
    const t = board.health.apply(input);
    this.farm.memory.remember(board);
    if (!t) return;
    const at = Date.now();
    this.farm.log.info({ board: board.id, from: t.from, to: t.to }, `board health: ${t.reason}`);
    this.farm.events.emit({ type: "health", at, board: board.id, key: board.key, from, to: t.to, reason: t.reason });
    this.farm.events.emit({ type: "board", at, board: describeBoard(board), change: "changed", reason: t.reason });
  }

  /** The lease on its board ended: a key its client never used is free again at once. */
  private leaseEnded(lease: BoardLease): void {
    const key = this.claimedKey;
    this.claimedKey = undefined;
    if (this.state === "gone") return;
    if (!this.freeKey && lease.lane === undefined && lease.reason?.code === "CANCELLED" && key) {
      this.freeKey = key;
      this.state = "free";
      this.farm.log.info({ board: this.board!.id, session: lease.id }, `TVM server ${this.board!.id}: its key "${key}" was never used; free again`);
      // Ready again: the scheduler dispatches once the lease is off the board.
      this.farm.registry.setReady(this.board!, true);
      this.arm();
      return;
    }
    if (this.freeKey) return; // a PUT ended it: becomeReady() ran
    this.state = "spent";
    this.arm();
  }

  /** Re-arms the one watch timer for what silence means in the current state. */
  private arm(): void {
    clearTimeout(this.watch);
    this.watch = undefined;
    if (this.state === "granted") {
      this.watch = setTimeout(() => {
        const lease = this.board?.lease;
        if (this.state !== "granted" || !lease) return;
        this.state = "in-session";
        lease.opened("tvm");
      }, POLL_GAP_MS);
    } else if (this.state === "free") {
      this.watch = setTimeout(() => {
        if (this.state === "free" && !this.board?.lease) void this.probe("silent");
      }, SILENT_MS);
    }
  }
}
