/**
 * The Attach stream: agents register boards, send heartbeats and readiness,
 * report session ends; the tracker assigns and ends sessions. An agent that
 * misses `maxMissedHeartbeats` heartbeats (frozen, partitioned) is lost just
 * like one whose stream closes: its boards leave the pool and its sessions
 * end with AGENT_LOST.
 */
import { BOARD_KIND, BOARD_KINDS, FarmError, HEALTH_REPORT_KIND, ROUTE, type WireError } from "../protos/index.ts";
import { type Logger } from "../runtime/index.ts";
import type { AgentMessage__Output } from "../protos/gen/farm/v1/AgentMessage.ts";
import type { Register__Output } from "../protos/gen/farm/v1/Register.ts";
import type { BoardHealthReport__Output } from "../protos/gen/farm/v1/BoardHealthReport.ts";
import type { BoardReady__Output } from "../protos/gen/farm/v1/BoardReady.ts";
import type { SessionBytes__Output } from "../protos/gen/farm/v1/SessionBytes.ts";
import type { AuditLog } from "./audit.ts";
import type { Authorizer, Caller } from "./auth.ts";
import type { FarmEvents } from "./events.ts";
import type { BoardMemory } from "./board-memory.ts";
import {
  TVM_AGENT_PREFIX,
  describeBoard,
  joinHostPort,
  newBoard,
  peerHost,
  type AgentControl,
  type AttachCall,
  type FarmAgent,
  type Registry,
} from "./registry.ts";
import type { Scheduler } from "./scheduler.ts";
import { applySessionBytes } from "./lane-bytes.ts";

/** A worker's name as an agent reports it (the agent makes 16 random characters): longer is no name of ours. */
const MAX_WORKER_ID_CHARS = 64;

export interface AgentLinkOptions {
  heartbeatIntervalMs: number;
  maxMissedHeartbeats: number;
  endGraceMs: number;
  /** TrackerOptions.maxCanaryDrift: the canary drift that makes a board suspect (tracker/canary-drift.ts). */
  maxCanaryDrift: number;
  /** The tracker's data port, once it listens. */
  relayPort(): number;
  /** The public key that checks the tickets the tracker signs (runtime/session-tickets.ts), for its agents' workers. */
  ticketKey: Uint8Array;
}

/**
 * How long an attached agent has to answer a Ping when another agent
 * registers with its name: an answer means the name is taken, silence that
 * its link is dead. Under the agent's attach timeout (2 s), so a newcomer that
 * replaces a dead link is not given up on by its own side.
 */
export const NAME_PROBE_MS = 1000;

export class AgentLinks {
  private readonly sweeper: NodeJS.Timeout;
  /** Heartbeat intervals each silent agent has missed so far (reported once each). */
  private readonly missed = new WeakMap<FarmAgent, number>();
  /** The agents attached here, whose heartbeats the sweep counts (TVM servers send none: the TVM port watches them). */
  private readonly attached = new Set<FarmAgent>();
  /** Who waits to hear from an agent (a name probe): told true on its next message, false if it is lost. */
  private readonly listeners = new WeakMap<FarmAgent, Set<(heard: boolean) => void>>();

  constructor(
    private readonly registry: Registry,
    private readonly scheduler: Scheduler,
    private readonly opts: AgentLinkOptions,
    private readonly log: Logger,
    private readonly events: FarmEvents,
    private readonly auth: Authorizer,
    private readonly audit: AuditLog,
    /** What outlives a board's attachment: its health and an operator's drain. */
    private readonly memory: BoardMemory,
  ) {
    this.sweeper = setInterval(() => this.sweep(), Math.max(50, opts.heartbeatIntervalMs / 2));
    this.sweeper.unref();
  }

  stop(): void {
    clearInterval(this.sweeper);
  }

  /** Handler for AgentService.Attach. */
  attach(call: AttachCall): void {
    let agent: FarmAgent | undefined;
    let registering = false;
    let caller: Caller;
    try {
      caller = this.auth.caller(call.metadata, call.getPeer(), "attach an agent");
      this.auth.requireKind(caller, ["agent"], "attach an agent");
    } catch (err) {
      call.emit("error", FarmError.from(err).toGrpc());
      return;
    }
    const refuse = (err: unknown) => {
      const e = FarmError.from(err);
      this.log.warn({ agent: agent?.id, peer: call.getPeer(), code: e.code }, e.message);
      call.emit("error", e.toGrpc());
    };
    call.on("data", (msg: AgentMessage__Output) => {
      try {
        if (msg.register) {
          if (registering) throw new FarmError("PROTOCOL_ERROR", "an agent registers once per Attach stream");
          registering = true;
          this.register(call, msg.register, caller).then((a) => (agent = a), refuse);
          return;
        }
        if (!agent) throw new FarmError("PROTOCOL_ERROR", "the first message on Attach must be Register, and the next ones wait for Registered");
        agent.lastSeen = Date.now();
        this.heard(agent, true);
        if (msg.heartbeat) call.write({ heartbeat_ack: { seq: msg.heartbeat.seq } });
        else if (msg.board_ready) this.boardReady(agent, msg.board_ready);
        else if (msg.session_ended) this.sessionEnded(agent, msg.session_ended.session_id, msg.session_ended.reason);
        else if (msg.lane_opened) this.laneOpened(agent, msg.lane_opened.session_id);
        else if (msg.board_health) this.boardHealth(agent, msg.board_health);
        else if (msg.board_labels) this.boardLabels(agent, msg.board_labels.board_name, msg.board_labels.labels);
        else if (msg.session_bytes) this.sessionBytes(agent, msg.session_bytes);
      } catch (err) {
        refuse(err);
      }
    });
    const gone = () => {
      if (agent) this.lose(agent, `agent ${agent.name} disconnected`);
    };
    call.on("end", () => {
      // A clean half-close: the agent is shutting down.
      if (agent) this.lose(agent, `agent ${agent.name} detached`, "info");
      if (!call.writableEnded) call.end();
    });
    call.on("error", gone);
    call.on("cancelled", gone);
  }

  private async register(call: AttachCall, reg: Register__Output, caller: Caller): Promise<FarmAgent> {
    // With tokens an agent is who its token says (TOKEN, or TOKEN@INSTANCE): another token cannot take its name over.
    if (caller.identity && reg.agent_name && !isAgentNameOf(caller.name, reg.agent_name)) {
      throw this.auth.refuse(
        new FarmError(
          "PERMISSION_DENIED",
          `token '${caller.name}' attaches as agent '${caller.name}', not '${reg.agent_name}' (or as '${caller.name}@INSTANCE', INSTANCE of letters, digits, '.', '_' and '-'): drop --name, or use the token made for '${reg.agent_name}'`,
        ),
        caller,
        "attach an agent",
      );
    }
    for (const spec of reg.boards) this.auth.requireKey(caller, spec.key, "register boards of key");
    const name = caller.identity ? reg.agent_name || caller.name : reg.agent_name || call.getPeer();
    // TVM servers' names (and so their boards' ids) start so: an agent may not take one over.
    if (name.startsWith(TVM_AGENT_PREFIX))
      throw new FarmError(
        "INVALID_ARGUMENT",
        `agent name "${name}" starts with "${TVM_AGENT_PREFIX}", which names TVM servers on the TVM port (docs/tvm-tracker.md); choose another --name`,
      );
    await this.claimName(name, reg.instance, call.getPeer());
    if (call.cancelled || call.destroyed) throw new FarmError("CANCELLED", `agent ${name} at ${call.getPeer()} left while it was registering`);
    const id = this.registry.newAgentId(name);
    // The direct lane's host: what the agent says, or the address the tracker sees it at.
    const data = reg.data_port ? { host: reg.data_host || peerHost(call.getPeer()), port: reg.data_port, tls: reg.data_tls } : undefined;
    const agent: FarmAgent = {
      protocol: "kernelfarm",
      control: this.control(id, call),
      id,
      name,
      instance: reg.instance,
      peer: call.getPeer(),
      call,
      attachedAt: Date.now(),
      lastSeen: Date.now(),
      boards: new Map(),
      data,
    };
    for (const spec of reg.boards) {
      if (!spec.name || !spec.key) throw new FarmError("INVALID_ARGUMENT", `board ${JSON.stringify(spec.name)} needs a name and a key`);
      if (agent.boards.has(spec.name)) throw new FarmError("INVALID_ARGUMENT", `agent ${name} registers board "${spec.name}" twice`);
      const board = newBoard(agent, {
        id: `${name}/${spec.name}`,
        name: spec.name,
        key: spec.key,
        // Unset, a kind this tracker does not know (a newer agent's) or the TVM servers' own: refused, naming the kinds agents serve.
        kind: BOARD_KIND.fromWireAmong(BOARD_KINDS, spec.kind, `agent ${name}'s board ${JSON.stringify(spec.name)}`),
        labels: { ...spec.labels },
        capabilities: { ...spec.capabilities },
        cudaLimits: spec.cuda_limits ?? undefined,
      });
      agent.boards.set(spec.name, board);
    }
    // It comes back as it left: drained, quarantined, suspect, with its health history.
    this.memory.recall(agent.boards.values());
    for (const board of agent.boards.values()) {
      if (board.drain || board.health.state !== "healthy")
        this.log.info(
          { board: board.id, health: board.health.state, drained: board.drain !== "" },
          `board ${board.id} comes back as it left: ${[board.health.state !== "healthy" ? `${board.health.state} (${board.health.reason})` : "", board.drain].filter(Boolean).join(", ")}`,
        );
    }
    this.registry.add(agent);
    this.attached.add(agent);
    // A revoked token detaches its agent: its boards leave, its sessions end.
    const release = this.auth.hold(caller, (err) => this.lose(agent, err.message, "warn", err));
    this.released.set(agent, release);
    this.audit.record({
      event: "agent_attach",
      who: caller.name,
      kind: caller.kind,
      peer: agent.peer,
      agent: id,
      boards: [...agent.boards.values()].map((b) => `${b.name}:${b.key}`),
    });
    call.write({
      registered: {
        agent_id: id,
        heartbeat_interval_ms: this.opts.heartbeatIntervalMs,
        max_missed_heartbeats: this.opts.maxMissedHeartbeats,
        end_grace_ms: this.opts.endGraceMs,
        relay_port: this.opts.relayPort(),
        ticket_key: this.opts.ticketKey,
        now_ms: Date.now(),
      },
    });
    this.log.info(
      { agent: id, peer: agent.peer, boards: [...agent.boards.keys()], direct: data ? joinHostPort(data.host, data.port) : null },
      "agent attached",
    );
    const at = Date.now();
    this.events.emit({ type: "agent", at, agent: id, name, peer: agent.peer, change: "attached" });
    for (const board of agent.boards.values()) this.events.emit({ type: "board", at, board: describeBoard(board), change: "added" });
    return agent;
  }

  /**
   * One live agent per name. The same process dialling again (same
   * instance; its old link may not know yet that it is dead) replaces its
   * stale self. Another process is a restarted agent or a second one given
   * the same name: the attached agent is asked whether it is there, and an
   * answer within NAME_PROBE_MS refuses the newcomer (NAME_IN_USE, naming
   * where the other attached from), while silence means its link is dead and
   * the newcomer replaces it. Two live agents of one name would otherwise
   * evict each other on every re-dial, and their sessions with them.
   */
  private async claimName(name: string, instance: string, peer: string): Promise<void> {
    const previous = this.registry.agentByName(name);
    if (previous?.protocol !== "kernelfarm") return;
    if (instance !== "" && previous.instance === instance) {
      this.lose(previous, `agent ${name} attached again from ${peer}`);
      return;
    }
    if (await this.answers(previous)) throw this.nameInUse(name, previous);
    const now = this.registry.agentByName(name);
    if (now && now !== previous) throw this.nameInUse(name, now);
    this.lose(previous, `agent ${name} did not answer within ${NAME_PROBE_MS} ms, and a new agent of that name attached from ${peer}`);
  }

  private nameInUse(name: string, holder: { peer: string; attachedAt: number }): FarmError {
    return new FarmError(
      "NAME_IN_USE",
      `agent name "${name}" is in use by the live agent attached from ${holder.peer} since ${new Date(holder.attachedAt).toISOString()}: give each agent its own --name (name: in its config file); this one takes the name when that agent leaves`,
      { details: { name, holder: holder.peer } },
    );
  }

  /** Whether the agent says anything within NAME_PROBE_MS of a Ping (a heartbeat due anyway counts). */
  private answers(agent: FarmAgent): Promise<boolean> {
    if (!this.registry.agents.has(agent.id) || agent.call.cancelled || agent.call.destroyed || agent.call.writableEnded) return Promise.resolve(false);
    return new Promise((resolve) => {
      const waiting = this.listeners.get(agent) ?? new Set();
      this.listeners.set(agent, waiting);
      const done = (heard: boolean) => {
        clearTimeout(timer);
        waiting.delete(done);
        resolve(heard);
      };
      const timer = setTimeout(() => done(false), NAME_PROBE_MS);
      waiting.add(done);
      agent.call.write({ ping: {} });
    });
  }

  private heard(agent: FarmAgent, heard: boolean): void {
    const waiting = this.listeners.get(agent);
    if (waiting) for (const done of [...waiting]) done(heard);
  }

  private boardReady(agent: FarmAgent, { board_name: name, lane_port: lanePort, worker_id: workerId }: BoardReady__Output): void {
    const board = agent.boards.get(name);
    if (!board) throw new FarmError("NOT_FOUND", `agent ${agent.name} has no board "${name}"`);
    if (workerId.length > MAX_WORKER_ID_CHARS)
      throw new FarmError("INVALID_ARGUMENT", `board ${name}'s worker id is ${workerId.length} characters long (at most ${MAX_WORKER_ID_CHARS})`);
    board.lanePort = lanePort;
    board.workerId = workerId;
    if (!board.ready) {
      this.registry.setReady(board, true);
      if (!board.lease) this.events.emit({ type: "board", at: Date.now(), board: describeBoard(board), change: "changed" });
    }
    this.scheduler.dispatch(board.key);
  }

  /** A canary result or an infrastructure error: feeds the board's health state machine. */
  private boardHealth(agent: FarmAgent, report: BoardHealthReport__Output): void {
    const board = agent.boards.get(report.board_name);
    if (!board) throw new FarmError("NOT_FOUND", `agent ${agent.name} has no board "${report.board_name}"`);
    const kind = HEALTH_REPORT_KIND.fromWire(report.kind, `agent ${agent.name}'s health report`, "PROTOCOL_ERROR");
    const input =
      kind === "infra"
        ? ({ kind: "infra_error", reason: report.reason } as const)
        : report.ok
          ? ({ kind: "canary_passed", detail: report.reason, at: report.at_ms, kernelNs: report.kernel_ns } as const)
          : ({ kind: "canary_failed", reason: report.reason, at: report.at_ms } as const);
    const reason = board.health.reason;
    const t = board.health.apply(input, { maxCanaryDrift: this.opts.maxCanaryDrift });
    this.memory.remember(board);
    if (!report.ok) this.log.warn({ board: board.id, kind }, report.reason);
    const at = Date.now();
    // No move, but a new why (a slow board's new figures): the live view shows it.
    if (!t && board.health.reason !== reason)
      this.events.emit({ type: "board", at, board: describeBoard(board), change: "changed", reason: board.health.reason });
    if (!t) return;
    this.log.info({ board: board.id, from: t.from, to: t.to }, `board health: ${t.reason}`);
    this.events.emit({ type: "health", at, board: board.id, key: board.key, from: t.from, to: t.to, reason: t.reason });
    this.events.emit({ type: "board", at, board: describeBoard(board), change: "changed", reason: t.reason });
    if (board.health.grantable) this.scheduler.dispatch(board.key);
  }

  /** A board's labels changed (a VTA board was programmed): requests waiting for the new ones may now be granted. */
  private boardLabels(agent: FarmAgent, boardName: string, labels: Record<string, string>): void {
    const board = agent.boards.get(boardName);
    if (!board) throw new FarmError("NOT_FOUND", `agent ${agent.name} has no board "${boardName}"`);
    board.labels = { ...labels };
    const reason = `labels now ${Object.entries(labels)
      .map(([k, v]) => `${k}=${v}`)
      .join(", ")}`;
    this.log.info({ board: board.id, labels }, `board ${reason}`);
    this.events.emit({ type: "board", at: Date.now(), board: describeBoard(board), change: "changed", reason });
    this.scheduler.dispatch(board.key);
  }

  private sessionEnded(agent: FarmAgent, sessionId: string, reason: WireError | null): void {
    const lease = this.scheduler.leases.get(sessionId);
    if (!lease || lease.board.agent !== agent) return; // already over on our side
    lease.end(reason ? FarmError.fromWire(reason) : null);
  }

  /** A direct lane's bytes so far, as its worker counted them: a bad report is logged and changes nothing (tracker/lane-bytes.ts). */
  private sessionBytes(agent: FarmAgent, report: SessionBytes__Output): void {
    const refused = applySessionBytes(agent, this.scheduler.leases.get(report.session_id), report);
    if (refused) this.log.warn({ agent: agent.id, session: report.session_id }, `an agent's session bytes were refused: ${refused}`);
  }

  /** The host reached the session's worker directly. */
  private laneOpened(agent: FarmAgent, sessionId: string): void {
    const lease = this.scheduler.leases.get(sessionId);
    // A tvm board's lane is a TVM client's (docs/tvm-boards.md): shown as lane tvm, as on a TVM server's board.
    if (lease && lease.board.agent === agent) lease.opened(lease.board.kind === "tvm" ? "tvm" : "direct");
  }

  /** What the tracker tells agent `id` about its boards' leases: messages on its Attach stream, while it is attached. */
  private control(id: string, call: AttachCall): AgentControl {
    const attached = () => this.registry.agents.has(id) && !call.writableEnded;
    return {
      assign: (lease) =>
        call.write({
          assign: {
            session_id: lease.id,
            board_name: lease.board.name,
            token: lease.token,
            client_id: lease.clientId,
            route: ROUTE.toWire(lease.route),
            lane_port: lease.lanePort,
            // The worker ends a call before the lease ends: a hung kernel's end is the call's TIMEOUT, not SESSION_TIMEOUT.
            session_timeout_ms: lease.timeouts.sessionTimeoutMs,
          },
        }),
      // An auto-routed host fell back to the data port: the agent dials it for the session's worker.
      openRelay: (lease) => {
        if (attached()) call.write({ open_relay: { session_id: lease.id } });
      },
      // The agent recycles or kills the worker.
      end: (lease) => {
        if (attached()) call.write({ end_session: { session_id: lease.id, reason: lease.reason ? lease.reason.toWire() : null } });
      },
    };
  }

  /** Releases the hold of each agent's token when the agent goes. */
  private readonly released = new WeakMap<FarmAgent, () => void>();

  private lose(agent: FarmAgent, why: string, level: "warn" | "info" = "warn", cause?: FarmError): void {
    if (!this.registry.remove(agent)) return;
    this.heard(agent, false);
    this.released.get(agent)?.();
    this.log[level]({ agent: agent.id }, `agent lost: ${why}`);
    for (const board of agent.boards.values()) {
      board.lease?.end(new FarmError("AGENT_LOST", `board ${board.id} was lost: ${why}`));
    }
    if (!agent.call.writableEnded && !agent.call.destroyed) {
      agent.call.emit("error", (cause ?? new FarmError("AGENT_LOST", why)).toGrpc());
    }
    const at = Date.now();
    for (const board of agent.boards.values()) {
      this.memory.left(board);
      this.events.emit({ type: "board", at, board: describeBoard(board), change: "removed", reason: why });
    }
    this.events.emit({ type: "agent", at, agent: agent.id, name: agent.name, peer: agent.peer, change: "lost", reason: why });
  }

  private sweep(): void {
    const limit = this.opts.heartbeatIntervalMs * this.opts.maxMissedHeartbeats;
    const now = Date.now();
    for (const agent of [...this.attached]) {
      if (this.registry.agents.get(agent.id) !== agent) {
        this.attached.delete(agent);
        continue;
      }
      const silentMs = now - agent.lastSeen;
      // One event per heartbeat interval of silence beyond the first.
      const missed = Math.floor(silentMs / this.opts.heartbeatIntervalMs) - 1;
      if (missed > (this.missed.get(agent) ?? 0)) {
        this.missed.set(agent, missed);
        this.events.emit({ type: "heartbeat_missed", at: now, agent: agent.id, silentMs });
      } else if (missed <= 0) {
        this.missed.delete(agent);
      }
      if (now - agent.lastSeen > limit) {
        this.lose(agent, `agent ${agent.name} missed ${this.opts.maxMissedHeartbeats} heartbeats (silent for ${now - agent.lastSeen} ms)`);
      }
    }
  }
}

/**
 * The names an agent token may attach as: its own, or `TOKEN@INSTANCE`, so
 * one token serves many agents of one pool (the pods of a Kubernetes
 * Deployment or DaemonSet) without them replacing each other. Token names
 * have no '@', so no token reaches another's names. INSTANCE is as long as
 * a Kubernetes node name may be (253), so a DaemonSet can name its agents
 * after their nodes.
 */
const INSTANCE = /^[A-Za-z0-9][A-Za-z0-9._-]{0,252}$/;

function isAgentNameOf(token: string, name: string): boolean {
  return name === token || (name.startsWith(`${token}@`) && INSTANCE.test(name.slice(token.length + 1)));
}
