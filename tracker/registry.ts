/**
 * Agents and their boards, as the tracker knows them.
 *
 * Board state is derived, never stored:
 *
 * | state      | when                                                     |
 * |------------|----------------------------------------------------------|
 * | `starting` | no session, the agent has no warm worker ready yet       |
 * | `free`     | no session, agent ready, not draining: may be granted    |
 * | `busy`     | a lease holds it                                         |
 * | `draining`    | no session, drained by an operator                       |
 * | `quarantined` | no session, its health is quarantined (tracker/health.ts) |
 */
import type { ServerDuplexStream } from "@grpc/grpc-js";
import type { AgentMessage__Output } from "../protos/gen/farm/v1/AgentMessage.ts";
import type { TrackerMessage } from "../protos/gen/farm/v1/TrackerMessage.ts";
import type { BoardInfo, BoardKindName } from "../protos/index.ts";
import type { CudaLaunchLimitsMessage__Output } from "../protos/index.ts";
import { BoardHealth } from "./health.ts";
import type { LaneBytes, Lease } from "./lease.ts";

export type AttachCall = ServerDuplexStream<AgentMessage__Output, TrackerMessage>;

/**
 * What the tracker asks of an attached agent, whatever protocol it speaks:
 * kernelfarm's agents over their Attach stream (tracker/agents.ts), TVM
 * servers through the TVM port (tracker/tvm/). The tracker's parts call it
 * without asking which.
 */
export interface AgentControl {
  /** A lease on one of its boards was granted: serve it. */
  assign(lease: BoardLease): void;
  /** The lease's host fell back to the relay: the board's agent dials the data port for its worker. */
  openRelay(lease: BoardLease): void;
  /** A lease on one of its boards is over: its worker is recycled or killed. */
  end(lease: BoardLease): void;
  /** What a lease whose lane never opened lacked, in its clients' words; undefined: the lane's own account (lease.ts). */
  readonly laneMissing?: string;
  /** The least time its leases' lanes get to open, where its boards show an open lane late (a TVM server, by no longer polling); the tracker's own is used when longer. */
  readonly minOpenTimeoutMs?: number;
}

interface AgentBase {
  readonly control: AgentControl;
  readonly id: string;
  readonly name: string;
  readonly peer: string;
  readonly attachedAt: number;
  lastSeen: number;
  readonly boards: Map<string, Board>;
  /** Where hosts reach the agent's direct lane; undefined: it serves none. */
  readonly data: { host: string; port: number; tls: boolean } | undefined;
}

/** A kernelfarm agent, on its Attach stream (tracker/agents.ts). */
export interface FarmAgent extends AgentBase {
  readonly protocol: "kernelfarm";
  readonly call: AttachCall;
  /** The agent process's own random id (Register.instance): its re-dials carry it; "" from agents before 0.9. */
  readonly instance: string;
}

/**
 * A TVM RPC server on the TVM port (tracker/tvm/): its tracker connection is
 * its attachment, its one board of kind `tvm-rpc` is granted to TVM clients
 * only, and what happens on a lease is TVM's business (docs/tvm-tracker.md).
 */
export interface TvmAgent extends AgentBase {
  readonly protocol: "tvm";
}

export type Agent = FarmAgent | TvmAgent;

/** Who a board can be granted to: kernelfarm hosts (the SDK), or TVM clients (the TVM port). */
export type BoardProtocol = Agent["protocol"];

/** The kind of a kernelfarm board that serves TVM clients (docs/tvm-boards.md). */
export const TVM_FARM_BOARD_KIND = "tvm" satisfies BoardKindName;

/**
 * Whether `board` is granted to askers of `protocol`: the one rule of who
 * gets which board. A board serves its own agent's protocol — a TVM server's
 * TVM clients, a kernelfarm agent's hosts — except a kernelfarm board of
 * kind `tvm`, Apache TVM's runtime behind an agent, which serves TVM clients
 * on the TVM port (docs/tvm-boards.md).
 */
export function servesAsker(board: Pick<Board, "kind" | "agent">, protocol: BoardProtocol): boolean {
  return board.kind === TVM_FARM_BOARD_KIND ? protocol === "tvm" : board.agent.protocol === protocol;
}

/** TVM servers' agent names: `tvm@HOST:PORT`; kernelfarm agents may not take such a name. */
export const TVM_AGENT_PREFIX = "tvm@";

/** "host:port", bracketing an IPv6 host. */
export function joinHostPort(host: string, port: number): string {
  return `${host.includes(":") ? `[${host}]` : host}:${port}`;
}

/** The host of a gRPC peer string ("1.2.3.4:5", "[::1]:5", "ipv4:1.2.3.4:5"). */
export function peerHost(peer: string): string {
  const bare = peer.replace(/^ipv[46]:/, "");
  return bare.slice(0, bare.lastIndexOf(":")).replace(/^\[(.*)\]$/, "$1");
}

export type BoardState = "starting" | "free" | "busy" | "draining" | "quarantined";

export interface Board {
  readonly id: string;
  readonly name: string;
  readonly key: string;
  /** One of the kinds agents serve, or TVM_BOARD_KIND (protos/enums.ts) for a TVM server's. */
  readonly kind: BoardKindName;
  /** As registered; replaced when the agent reports new ones (BoardLabels: a VTA board programmed with a bitstream). */
  labels: Readonly<Record<string, string>>;
  readonly capabilities: Readonly<Record<string, string>>;
  /** A CUDA board's launch limits, as its agent registered them. */
  readonly cudaLimits?: CudaLaunchLimitsMessage__Output;
  readonly agent: Agent;
  /** The agent holds a warm worker for the next session. Set through Registry.setReady, which keeps the index of ready boards. */
  readonly ready: boolean;
  /** That worker's standby lane (BoardReady.lane_port): named by the next grant, then spent; 0: none. */
  lanePort: number;
  /** That worker's name (BoardReady.worker_id): the grant's ticket is signed for it alone. */
  workerId: string;
  /** Why an operator drained it ("drained by alice: new fan"); "" while it is not drained. Remembered with its health (tracker/board-memory.ts). */
  drain: string;
  lease: BoardLease | undefined;
  /** Its health, the same machine across its agent's re-attaches (tracker/board-memory.ts). */
  health: BoardHealth;
  /** Bytes its ended sessions' lanes carried since it attached (tracker/lane-bytes.ts boardBytes adds the running one's). */
  readonly bytes: LaneBytes;
}

/** A lease on one of the registry's boards. */
export type BoardLease = Lease<Board>;

/** A board as it attaches: not ready, not drained, no lease, a healthy health machine (recalled memory may replace both). */
export function newBoard(agent: Agent, fields: Pick<Board, "id" | "name" | "key" | "kind" | "labels" | "capabilities" | "cudaLimits">): Board {
  return {
    ...fields,
    agent,
    ready: false,
    lanePort: 0,
    workerId: "",
    drain: "",
    lease: undefined,
    health: new BoardHealth(),
    bytes: { toBoard: 0, fromBoard: 0 },
  };
}

export function boardState(board: Board): BoardState {
  if (board.lease) return "busy";
  if (!board.health.grantable) return "quarantined";
  if (board.drain) return "draining";
  return board.ready ? "free" : "starting";
}

/** What an operator and the health machine say of a board, as the contract shows it: the same attached or not. */
export function standingInfo(board: Pick<Board, "health" | "drain">): BoardInfo {
  return {
    health: board.health.state,
    health_reason: board.health.reason,
    last_error: board.health.lastError,
    drained: board.drain !== "",
    drain_reason: board.drain,
    last_canary: board.health.lastCanary,
    last_canary_at_ms: board.health.lastCanaryAt,
    canary_ns: board.health.canary.recentNs,
    canary_baseline_ns: board.health.canary.baselineNs,
    canary_baseline_runs: board.health.canary.baselineRuns,
    canary_drift: board.health.canary.ratio,
  };
}

/** The board as the contract shows it; `history`: with its health history (the summary, when asked). */
export function describeBoard(board: Board, opts: { history?: boolean } = {}): BoardInfo {
  return {
    id: board.id,
    key: board.key,
    kind: board.kind,
    labels: { ...board.labels },
    capabilities: { ...board.capabilities },
    ...(board.cudaLimits ? { cuda_limits: board.cudaLimits } : {}),
    agent_id: board.agent.id,
    agent_name: board.agent.name,
    state: boardState(board),
    session_id: board.lease?.id ?? "",
    client_id: board.lease?.clientId ?? "",
    session_lane: board.lease?.lane ?? "",
    ...standingInfo(board),
    health_history: opts.history ? board.health.history.map((c) => ({ at_ms: c.at, from: c.from, to: c.to, reason: c.reason })) : [],
    canary_timings: opts.history ? board.health.canary.timings.map((t) => ({ at_ms: t.at, kernel_ns: t.ns })) : [],
  };
}

/**
 * Everything describeBoard() reads that changes while a board is attached,
 * by value (its labels and health objects by reference: they are replaced,
 * not changed in place — except the health machine's fields, listed; the
 * canary's recent time and drift follow from its last timing and baseline).
 * Equal facts, equal BoardInfo (without history): the summary keeps each
 * board's encoding while they stay equal (tracker/summary.ts). A field added
 * to describeBoard() or standingInfo() that can change is added here too.
 */
export function boardFacts(board: Board, state: BoardState, into: unknown[] = []): unknown[] {
  const h = board.health;
  const c = h.canary;
  const l = board.lease;
  // Written into `into`, a caller's scratch array: the summary reads 10,000 boards' facts per call.
  into[0] = board.labels;
  into[1] = state;
  into[2] = l?.id;
  into[3] = l?.clientId;
  into[4] = l?.lane;
  into[5] = board.drain;
  into[6] = h;
  into[7] = h.state;
  into[8] = h.reason;
  into[9] = h.lastError;
  into[10] = h.lastCanary;
  into[11] = h.lastCanaryAt;
  into[12] = c;
  into[13] = c.timings.length;
  into[14] = c.timings[c.timings.length - 1];
  into[15] = c.baselineNs;
  into[16] = c.baselineRuns;
  into.length = 17;
  return into;
}

/**
 * Every attached agent and its boards, with the indexes that keep the hot
 * paths off the board count: by id (a board command, a lane's session, the
 * board memory asking whether a board is attached), by key (a request), the
 * ready boards of each key (a grant), and the boards in the order the summary
 * lists them. A farm of 10,000 boards scanned its whole registry several
 * times per request and per board memory lookup (BENCHMARKS.md §18).
 */
export class Registry {
  private readonly attached = new Map<string, Agent>();
  private readonly byId = new Map<string, Board>();
  private readonly byKey = new Map<string, Set<Board>>();
  /** Ready boards of each key, in the order they became ready: a grant takes the first free one. */
  private readonly readyByKey = new Map<string, Set<Board>>();
  /** Every board sorted by id, as the summary lists them; undefined after an agent came or went. */
  private sorted: Board[] | undefined;
  private nextAgent = 1;

  /** The attached agents by id; add() and remove() change it. */
  get agents(): ReadonlyMap<string, Agent> {
    return this.attached;
  }

  newAgentId(name: string): string {
    return `${name}#${this.nextAgent++}`;
  }

  /** An agent attached, with its boards (its `boards` are not changed afterwards). */
  add(agent: Agent): void {
    this.attached.set(agent.id, agent);
    for (const board of agent.boards.values()) {
      this.byId.set(board.id, board);
      let ofKey = this.byKey.get(board.key);
      if (!ofKey) this.byKey.set(board.key, (ofKey = new Set()));
      ofKey.add(board);
      if (board.ready) this.readySet(board.key).add(board);
    }
    this.sorted = undefined;
  }

  /** The agent left: false when it was not attached. */
  remove(agent: Agent): boolean {
    if (this.attached.get(agent.id) !== agent) return false;
    this.attached.delete(agent.id);
    for (const board of agent.boards.values()) {
      if (this.byId.get(board.id) === board) this.byId.delete(board.id);
      const ofKey = this.byKey.get(board.key);
      ofKey?.delete(board);
      if (ofKey?.size === 0) this.byKey.delete(board.key);
      this.readyByKey.get(board.key)?.delete(board);
    }
    this.sorted = undefined;
    return true;
  }

  /** Whether the board's agent holds a warm worker for its next session (BoardReady; spent by a grant). */
  setReady(board: Board, ready: boolean): void {
    (board as { ready: boolean }).ready = ready;
    if (!ready) this.readyByKey.get(board.key)?.delete(board);
    else if (this.byId.get(board.id) === board) this.readySet(board.key).add(board);
  }

  private readySet(key: string): Set<Board> {
    let set = this.readyByKey.get(key);
    if (!set) this.readyByKey.set(key, (set = new Set()));
    return set;
  }

  *boards(): Iterable<Board> {
    for (const agent of this.attached.values()) yield* agent.boards.values();
  }

  /** Every board, sorted by id (the summary's order); the array is shared: do not change it. */
  boardsById(): readonly Board[] {
    this.sorted ??= [...this.boards()].sort((a, b) => a.id.localeCompare(b.id));
    return this.sorted;
  }

  /** The boards of `key`, without a copy (any protocol). */
  boardsWithKey(key: string): ReadonlySet<Board> {
    return this.byKey.get(key) ?? EMPTY;
  }

  /** The ready boards of `key` (any protocol, granted or not, drained or not), in the order they became ready. */
  readyBoardsOf(key: string): ReadonlySet<Board> {
    return this.readyByKey.get(key) ?? EMPTY;
  }

  /** The boards of `key` (of one protocol, if given). */
  boardsOfKey(key: string, protocol?: BoardProtocol): Board[] {
    return [...this.boardsWithKey(key)].filter((b) => protocol === undefined || servesAsker(b, protocol));
  }

  /** The keys boards serve (boards of one protocol, if given). */
  keys(protocol?: BoardProtocol): string[] {
    return [...this.byKey]
      .filter(([, boards]) => protocol === undefined || [...boards].some((b) => servesAsker(b, protocol)))
      .map(([key]) => key)
      .sort();
  }

  board(id: string): Board | undefined {
    return this.byId.get(id);
  }

  agentByName(name: string): Agent | undefined {
    for (const agent of this.attached.values()) if (agent.name === name) return agent;
    return undefined;
  }
}

const EMPTY: ReadonlySet<Board> = new Set();
