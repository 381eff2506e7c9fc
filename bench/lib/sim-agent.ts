/**
 * A simulated device agent: the tracker sees an agent, the hosts see boards
 * that grant and release sessions, and no worker process runs. Many live in
 * one process (bench/lib/sim-agents.ts), which is what lets one small
 * machine put 10,000 boards in front of a real tracker (bench/farm-scale.ts)
 * where a real agent forks a worker per board.
 *
 * Real, as the device agent does it (device-agent/agent/tracker-link.ts,
 * device-agent/agent/agent.ts, device-agent/agent/lanes.ts), every message through
 * protos/ (the generated AgentService client, the lane's framing and codecs):
 * - its own gRPC connection and Attach stream; Register with its boards and a
 *   random `instance`; a Heartbeat every `heartbeat_interval_ms` the tracker
 *   names, and at once when it Pings; BoardReady for each board that is free;
 * - AssignSession: the session's ticket is expected at the agent's direct-lane
 *   port (device-agent/common/tickets.ts, the agent's own door: admitHost, the
 *   one-time ticket, the wait for an assignment a host outran); `relay`, or
 *   OpenRelay on an auto route: the board dials the tracker's data port with
 *   its ticket and reads the tracker's welcome;
 * - on the lane: the welcome (direct), LaneOpened to the tracker (direct),
 *   then the host's frames (HostFrame, decoded): Close is answered Ok, then
 *   the clean end frame goes last on the lane and the lane is ended, then
 *   SessionEnd (clean) and BoardReady to the tracker — the order of a worker
 *   that served a session which loaded nothing and is reused;
 * - a lane that closes before the host's Close is the session's end with
 *   CANCELLED (the worker's words); the tracker's EndSession with a reason
 *   drops the lane; a clean EndSession (the host's ReleaseSession) makes the
 *   board close the lane with its clean end and report, as a worker told
 *   "end" does.
 *
 * Simulated: a board has no worker and runs nothing — every request but
 * Close is answered INVALID_ARGUMENT; it is ready again at once after a
 * session (a real agent reuses the same warm worker after a session that
 * loaded nothing, or forks a new one after an unclean end); no canaries
 * (no BoardHealthReport), no standby lanes (BoardReady.lane_port 0: hosts
 * reach the agent's data port, as with `kfarm agent --no-standby`); no TLS,
 * no token; a lost Attach stream is not re-dialled: it is fatal to the
 * benchmark (`onLost`).
 */
import { randomBytes } from "node:crypto";
import type { Server, Socket } from "node:net";
import type * as grpc from "@grpc/grpc-js";
import {
  AgentService,
  CLEAN_END_FRAME,
  FARM_VERSION,
  FarmError,
  ROUTE,
  decodeHostFrame,
  encodeBoardFrame,
  encodeLaneHello,
  type AgentServiceClient,
} from "../../protos/index.ts";
import {
  HELLO_TIMEOUT_MS,
  LaneSocket,
  awaitWelcome,
  componentLogger,
  connectSocket,
  framed,
  makeClient,
  parseAddress,
  socketServer,
  welcome,
  type Logger,
} from "../../runtime/index.ts";
import type { AgentMessage } from "../../protos/gen/farm/v1/AgentMessage.ts";
import type { AssignSession__Output } from "../../protos/gen/farm/v1/AssignSession.ts";
import type { BoardSpec } from "../../protos/gen/farm/v1/BoardSpec.ts";
import type { TrackerMessage__Output } from "../../protos/gen/farm/v1/TrackerMessage.ts";
import { Tickets, admitHost } from "../../device-agent/common/tickets.ts";

export interface SimAgentOptions {
  tracker: string;
  name: string;
  boards: BoardSpec[];
  /** Serve a direct-lane port (default true); without it, every session takes the tracker's relay. */
  direct?: boolean;
  /** The Attach stream broke, or the tracker stopped answering heartbeats: the simulation is over. */
  onLost?: (why: string) => void;
  logger?: Logger;
}

/** What one simulated agent saw, for a benchmark to check against what its hosts saw. */
export interface SimAgentStats {
  assigned: number;
  /** Lanes opened, by kind. */
  direct: number;
  relay: number;
  /** Sessions the host closed (Close answered, clean end sent). */
  closed: number;
  /** Sessions the tracker released cleanly (ReleaseSession) before the host closed them. */
  released: number;
  /** Sessions whose lane closed before the host's Close. */
  hostLeft: number;
  /** Sessions the tracker ended with a reason, by code. */
  endedByTracker: Record<string, number>;
  /** Requests other than Close (answered INVALID_ARGUMENT). */
  otherRequests: number;
  /** Assignments for a board that served another session (a real agent would queue them for its next worker). */
  doubleAssigned: number;
  /** Heartbeat → its ack, ms: how soon the tracker answers an agent under load. */
  heartbeatRttMs: number[];
  /** The process's event loop delay (bench/lib/sim-agents.ts adds it; the worst process when merged). */
  loopDelay?: { p99Ms: number; maxMs: number };
}

interface Serving {
  readonly id: string;
  readonly route: string;
  lane?: LaneSocket;
  /** Its end was reported (or it was ended by the tracker): nothing more happens to it. */
  over: boolean;
}

interface SimBoard {
  readonly spec: BoardSpec;
  session: Serving | undefined;
}

export class SimAgent {
  readonly stats: SimAgentStats = {
    assigned: 0,
    direct: 0,
    relay: 0,
    closed: 0,
    released: 0,
    hostLeft: 0,
    endedByTracker: {},
    otherRequests: 0,
    doubleAssigned: 0,
    heartbeatRttMs: [],
  };
  /** When each heartbeat not acknowledged yet went out. */
  private readonly sentAt = new Map<number, number>();
  private readonly boards = new Map<string, SimBoard>();
  private readonly sessions = new Map<string, SimBoard>();
  private readonly tickets = new Tickets();
  private readonly instance = randomBytes(8).toString("hex");
  private readonly log: Logger;
  private client: AgentServiceClient | undefined;
  private call: grpc.ClientDuplexStream<AgentMessage, TrackerMessage__Output> | undefined;
  private server: Server | undefined;
  private readonly open = new Set<Socket>();
  private heartbeat: NodeJS.Timeout | undefined;
  private seq = 0;
  private acked = 0;
  private relayPort = 0;
  private attached = false;
  private closed = false;

  constructor(private readonly opts: SimAgentOptions) {
    this.log = opts.logger ?? componentLogger("sim-agent", { agent: opts.name });
    for (const spec of opts.boards) this.boards.set(spec.name ?? "", { spec, session: undefined });
  }

  /** Opens the direct-lane port, attaches, and resolves once the tracker answered Registered. */
  async start(): Promise<void> {
    let dataPort = 0;
    if (this.opts.direct ?? true) {
      const made = socketServer(undefined, (socket) => this.accept(socket));
      this.server = made.server;
      dataPort = await new Promise<number>((resolve, reject) => {
        made.server.once("error", reject);
        made.server.listen(0, "127.0.0.1", () => resolve((made.server.address() as { port: number }).port));
      });
    }
    this.client = makeClient<AgentServiceClient>(AgentService, this.opts.tracker, {});
    const call = this.client.Attach() as unknown as grpc.ClientDuplexStream<AgentMessage, TrackerMessage__Output>;
    this.call = call;
    await new Promise<void>((resolve, reject) => {
      call.on("data", (msg: TrackerMessage__Output) => {
        if (msg.registered && !this.attached) {
          this.attached = true;
          this.registered(msg.registered.heartbeat_interval_ms, msg.registered.max_missed_heartbeats, msg.registered.relay_port);
          resolve();
        } else {
          this.onMessage(msg);
        }
      });
      const lost = (why: string) => {
        if (this.closed) return;
        reject(new Error(`simulated agent ${this.opts.name}: ${why}`));
        this.lost(why);
      };
      call.on("error", (err) => lost(err.message));
      call.on("end", () => lost("the tracker closed the Attach stream"));
      call.write({
        register: {
          agent_name: this.opts.name,
          boards: this.opts.boards,
          version: FARM_VERSION,
          instance: this.instance,
          ...(dataPort ? { data_port: dataPort, data_host: "", data_tls: false } : {}),
        },
      });
    });
  }

  private send(msg: AgentMessage): void {
    if (this.attached && this.call && !this.call.writableEnded) this.call.write(msg);
  }

  private registered(intervalMs: number, maxMissed: number, relayPort: number): void {
    this.relayPort = relayPort;
    this.heartbeat = setInterval(() => {
      if (this.seq - this.acked > maxMissed + 1) return this.lost(`the tracker answered no heartbeat for ${(this.seq - this.acked) * intervalMs} ms`);
      this.sentAt.set(++this.seq, performance.now());
      this.send({ heartbeat: { seq: this.seq } });
    }, intervalMs || 500);
    for (const board of this.boards.values()) this.send({ board_ready: { board_name: board.spec.name, lane_port: 0 } });
  }

  private lost(why: string): void {
    if (this.closed) return;
    this.close();
    this.log.error({}, `lost the tracker: ${why}`);
    this.opts.onLost?.(why);
  }

  private onMessage(msg: TrackerMessage__Output): void {
    if (msg.heartbeat_ack) {
      this.acked = Math.max(this.acked, msg.heartbeat_ack.seq);
      const at = this.sentAt.get(msg.heartbeat_ack.seq);
      if (at !== undefined) this.stats.heartbeatRttMs.push(performance.now() - at);
      this.sentAt.delete(msg.heartbeat_ack.seq);
    } else if (msg.ping) this.send({ heartbeat: { seq: ++this.seq } });
    else if (msg.assign) this.assign(msg.assign);
    else if (msg.end_session) this.endSession(msg.end_session.session_id, msg.end_session.reason ? FarmError.fromWire(msg.end_session.reason) : null);
    else if (msg.open_relay) void this.dialRelay(msg.open_relay.session_id);
  }

  private assign(a: AssignSession__Output): void {
    const board = this.boards.get(a.board_name);
    if (!board) {
      this.log.error({ board: a.board_name }, "assignment for a board this agent does not have");
      return;
    }
    this.stats.assigned++;
    if (board.session) {
      // The tracker granted a board whose session this agent has not reported over: a real agent would hold
      // the assignment for its next worker. Never seen here; counted so a benchmark fails on it.
      this.stats.doubleAssigned++;
      this.send({
        session_ended: {
          session_id: a.session_id,
          reason: new FarmError("INTERNAL", `simulated board ${board.spec.name} serves ${board.session.id}`).toWire(),
        },
      });
      return;
    }
    const route = ROUTE.fromWire(a.route, "the tracker's assignment", "PROTOCOL_ERROR");
    board.session = { id: a.session_id, route, over: false };
    this.sessions.set(a.session_id, board);
    this.tickets.expect(a.session_id, a.token, route);
    if (route === "relay") void this.dialRelay(a.session_id);
  }

  /** A host at the direct-lane port: its hello and ticket are checked by the agent's own door (device-agent/common/tickets.ts). */
  private accept(socket: Socket): void {
    this.open.add(socket);
    socket.once("close", () => this.open.delete(socket));
    void admitHost(socket, this.tickets, "direct lane", this.log, (sessionId, lane) => {
      const board = this.sessions.get(sessionId);
      const serving = board?.session;
      if (!board || !serving || serving.over) throw new FarmError("NOT_FOUND", `session ${sessionId} has no board any more`);
      welcome(lane);
      this.stats.direct++;
      this.send({ lane_opened: { session_id: sessionId } });
      this.serve(board, serving, lane);
    });
  }

  /** relay: the board dials the tracker's data port with the session's ticket (spent: no direct lane opens with it then). */
  private async dialRelay(sessionId: string): Promise<void> {
    const ticket = this.tickets.take(sessionId);
    const board = this.sessions.get(sessionId);
    if (!ticket || !board?.session) return;
    const serving = board.session;
    try {
      const hello = framed(encodeLaneHello({ session_id: sessionId, ticket, role: "worker" }));
      const socket = await connectSocket(parseAddress(this.opts.tracker).host, this.relayPort, {}, HELLO_TIMEOUT_MS, "the tracker's data port", {
        first: hello,
      });
      const lane = new LaneSocket(socket, `the relay lane of session ${sessionId}`);
      await awaitWelcome(lane);
      if (serving.over) return lane.fail(new FarmError("CANCELLED", `session ${sessionId} is over`));
      this.stats.relay++;
      this.serve(board, serving, lane);
    } catch (err) {
      this.log.warn({ session: sessionId, err: (err as Error).message }, "cannot open the relay lane for a session");
    }
  }

  private serve(board: SimBoard, serving: Serving, lane: LaneSocket): void {
    serving.lane = lane;
    lane.onFrame((bytes) => {
      if (serving.over) return;
      let frame;
      try {
        frame = decodeHostFrame(bytes);
      } catch (err) {
        lane.send(encodeBoardFrame({ id: 0, error: new FarmError("PROTOCOL_ERROR", `undecodable frame: ${(err as Error).message}`).toWire() }));
        return;
      }
      if (frame.close) {
        lane.send(encodeBoardFrame({ id: frame.id, ok: {} }));
        this.stats.closed++;
        this.finish(board, serving, null);
        return;
      }
      this.stats.otherRequests++;
      lane.send(
        encodeBoardFrame({
          id: frame.id,
          error: new FarmError("INVALID_ARGUMENT", `board ${board.spec.name} is simulated (bench/lib/sim-agent.ts): it answers Close only`).toWire(),
        }),
      );
    });
    lane.onClose(() => {
      if (serving.over) return;
      this.stats.hostLeft++;
      this.finish(board, serving, new FarmError("CANCELLED", "the session's lane closed before the host closed the session"));
    });
  }

  /** The session is over on the board's side: its clean end goes last on the lane, then the report and the board's readiness. */
  private finish(board: SimBoard, serving: Serving, reason: FarmError | null): void {
    serving.over = true;
    if (serving.lane && !serving.lane.isClosed) {
      if (reason === null) serving.lane.send(CLEAN_END_FRAME);
      serving.lane.end();
    }
    this.send({ session_ended: { session_id: serving.id, reason: reason?.toWire() ?? null } });
    this.release(board, serving);
  }

  /** The tracker ended a session: with a reason the lane is dropped (the real agent kills the worker); clean, the board closes it. */
  private endSession(sessionId: string, reason: FarmError | null): void {
    const board = this.sessions.get(sessionId);
    const serving = board?.session;
    if (!board || !serving || serving.id !== sessionId) return;
    if (serving.over) return;
    if (reason === null) {
      this.stats.released++;
      this.finish(board, serving, null);
      return;
    }
    this.stats.endedByTracker[reason.code] = (this.stats.endedByTracker[reason.code] ?? 0) + 1;
    serving.over = true;
    serving.lane?.fail(reason);
    this.release(board, serving);
  }

  private release(board: SimBoard, serving: Serving): void {
    this.tickets.forget(serving.id);
    this.sessions.delete(serving.id);
    if (board.session === serving) board.session = undefined;
    if (!this.closed) this.send({ board_ready: { board_name: board.spec.name, lane_port: 0 } });
  }

  /** Detaches (a clean half-close, as a stopping agent does) and closes its port and lanes. */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    clearInterval(this.heartbeat);
    this.server?.close();
    for (const s of this.open) s.destroy();
    for (const board of this.boards.values()) board.session?.lane?.fail(new FarmError("CANCELLED", "the simulated agent stopped"));
    const call = this.call;
    call?.end();
    setTimeout(() => {
      call?.cancel();
      this.client?.close();
    }, 50).unref();
  }
}
