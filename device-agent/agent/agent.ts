/**
 * The device agent: dials the tracker, registers its boards and runs every
 * session in a worker process of the board's pool.
 */
import { rmSync } from "node:fs";
import { join } from "node:path";
import { BOARD_KIND, FarmError, HEALTH_REPORT_KIND, ROUTE } from "../../protos/index.ts";
import { cudaLaunchLimitsToWire } from "../../domain/index.ts";
import { parseAddress, traceGrant, warmTickets } from "../../runtime/index.ts";
import { DEFAULT_VTA_HARDWARE } from "../../vta/index.ts";
import type { BoardHealthReport } from "../../protos/gen/farm/v1/BoardHealthReport.ts";
import type { BoardSpec } from "../../protos/gen/farm/v1/BoardSpec.ts";
import { describeBoard } from "../backends/index.ts";
import { expandBoards, type BoardConfig } from "./board-config.ts";
import { buildCpuSupport, buildTvmCanary } from "./canary.ts";
import { describeLeftovers, holdScratch, sweepLeftovers } from "./leftovers.ts";
import { AgentMetrics } from "./metrics.ts";
import { resolveAgentOptions, workerLimitsFor, type AgentOptions, type ResolvedAgentOptions } from "./options.ts";
import { BoardPool, type HealthReport, type WorkerSandbox } from "./pool.ts";
import type { SessionFile } from "../common/session-file.ts";
import { checkReadableByWorkers, describeSandbox, resolveSandbox, UidAllocator, WorkerDirs } from "./sandbox.ts";
import { SessionDisk } from "../common/session-disk.ts";
import { AgentLanes } from "./lanes.ts";
import { TrackerLink, type DirectLane } from "./tracker-link.ts";
import { workerEntry } from "./worker-entry.ts";
import { ContentStore } from "./content-store.ts";

export class Agent {
  readonly options: ResolvedAgentOptions;
  private readonly pools = new Map<string, BoardPool>();
  private link: TrackerLink | undefined;
  /** Every session's lane (device-agent/agent/lanes.ts). */
  private lanes: AgentLanes | undefined;
  private draining = new Set<string>();
  /** Why the link to the tracker last broke, for `/readyz`. */
  private detachedWhy = "";
  /** Prometheus metrics, when `metricsPort` is set. */
  readonly metrics: AgentMetrics | undefined;

  constructor(opts: AgentOptions) {
    this.options = resolveAgentOptions(opts);
    parseAddress(this.options.tracker);
    if (this.options.metricsPort !== undefined)
      this.metrics = new AgentMetrics(this.options.logger, { tls: this.options.metricsTls, notReady: () => this.notReady() });
  }

  /** What `/readyz` says: ready while attached to the tracker (its boards can be granted). */
  private notReady(): string | undefined {
    const state = this.link?.state;
    if (state === "attached") return undefined;
    const why = !state ? "starting its boards" : state === "closed" ? "shutting down" : `${state}${this.detachedWhy ? `; last: ${this.detachedWhy}` : ""}`;
    return `not attached to the tracker at ${this.options.tracker} (${why})`;
  }

  /** "host:port" of the metrics server, or undefined without one. */
  get metricsAddress(): string | undefined {
    const host = this.options.metricsHost;
    return this.metrics ? `${host.includes(":") ? `[${host}]` : host}:${this.metrics.port}` : undefined;
  }

  /** Each board's last canary, and when it came (this agent's clock): sent again at every attach (protos agent.proto, BoardHealthReport.at_ms). */
  private readonly lastCanary = new Map<string, HealthReport & { atMs: number }>();

  async start(): Promise<this> {
    const o = this.options;
    if (this.metrics) await this.metrics.listen(o.metricsHost, o.metricsPort!);
    const specs: BoardSpec[] = [];
    const boards = await expandBoards(o.boards);
    // What confines session workers here (docs/sandbox.md): decided once, logged once, shown as each board's `sandbox` capability.
    const plan = resolveSandbox({
      workerUids: o.workerUids,
      workerNetwork: o.workerNetwork,
      limits: (kind) => workerLimitsFor(o, kind),
      diskBytes: o.workerDiskBytes,
    });
    // An FPGA board's worker maps /dev/mem, which the kernel allows only with CAP_SYS_RAWIO: not on a uid of its own.
    const fpga = boards.find((b) => b.kind === "vta" && b.options.device !== "model");
    if (fpga && plan.users) {
      throw new FarmError(
        "INVALID_ARGUMENT",
        `board ${fpga.name} (vta:${String(fpga.options.device)}) maps VTA's registers through /dev/mem in its session worker, which needs root; session workers here run as uids of their own: start the agent with --worker-uids off`,
        { details: { option: "worker-uids" } },
      );
    }
    // TVM's clients speak plain TCP to the agent's direct-lane port (docs/tvm-boards.md): a tvm board needs one.
    const tvm = boards.find((b) => b.kind === "tvm");
    if (tvm && (!o.direct || o.dataTls || o.security.tls || /:\d+$/.test(o.dataAdvertise))) {
      throw new FarmError(
        "INVALID_ARGUMENT",
        `board ${tvm.name} (tvm) serves TVM clients, which connect to this agent's direct-lane port in plain TCP (TVM's RPC protocol has no TLS): ` +
          `start the agent with a direct lane, without --data-tls-cert, tracker TLS or a forwarded --data-advertise HOST:PORT`,
        { details: { option: "board" } },
      );
    }
    // What agents killed without their clean-up left: scratch folders (users' modules), session tmpfs (RAM), uid claims.
    const uids = new UidAllocator(plan);
    const leftovers = sweepLeftovers(o.workRoot, { mounts: SessionDisk.supported(), uids });
    const cleaned = describeLeftovers(leftovers);
    if (cleaned) o.logger.warn({ folders: leftovers.folders, mounts: leftovers.mounts, uids: leftovers.uids, failed: leftovers.failed }, cleaned);
    holdScratch(o.workRoot);
    const dirs = new WorkerDirs(plan, o.workRoot);
    dirs.prepare();
    const entry = await workerEntry(o.logger, o.workRoot);
    checkReadableByWorkers(plan, entry.script, "the session worker's code");
    for (const kind of new Set(boards.map((b) => b.kind)))
      o.logger.info({ kind, notes: plan.notes }, `session workers (${kind}): ${describeSandbox(plan, kind)}`);
    const sandbox: WorkerSandbox = {
      plan,
      uids,
      dirs,
      store: new ContentStore(join(o.workRoot, "store"), { workers: plan.users ? "own-uids" : process.getuid?.() === 0 ? "root" : "agent-user" }),
      ...(plan.diskBytes > 0 ? { disk: new SessionDisk(plan.diskBytes) } : {}),
    };
    const standbyHost = this.standbyHost();
    const built = boards.some((b) => b.kind === "cpu") ? await buildCpuSupport(o.workRoot, o.logger) : undefined;
    // The user's cache may be closed to workers running as other users: they get a copy they can read.
    const cpuSupport = built && dirs.share(built);
    const tvmCanaryBuilt = tvm ? await buildTvmCanary(o.workRoot, o.logger) : undefined;
    const tvmCanary = tvmCanaryBuilt && dirs.share(tvmCanaryBuilt);
    // A board's own canary (`canary=PATH`) too.
    const shared = (options: Record<string, unknown>) =>
      typeof options.canaryLibrary === "string" ? { ...options, canaryLibrary: dirs.share(options.canaryLibrary) } : options;
    for (const board of boards) {
      let facts;
      try {
        facts = await describeBoard(board.kind, board.options);
      } catch (err) {
        throw new FarmError("INVALID_ARGUMENT", `board ${board.name} (${board.kind}): ${(err as Error).message}`, { cause: err });
      }
      const spec: BoardSpec = {
        name: board.name,
        key: board.key,
        kind: BOARD_KIND.toWire(board.kind),
        labels: { ...facts.labels, ...board.labels },
        capabilities: { ...facts.capabilities, sandbox: describeSandbox(plan, board.kind) },
        ...(facts.cudaLimits ? { cuda_limits: cudaLaunchLimitsToWire(facts.cudaLimits) } : {}),
      };
      specs.push(spec);
      const pool = new BoardPool(
        {
          agentPid: process.pid,
          boardName: board.name,
          kind: board.kind,
          // `canary=PATH` on the board replaces the canary, not the cache flush.
          backendOptions:
            board.kind === "cpu" && cpuSupport
              ? { canaryLibrary: cpuSupport, ...shared(board.options), supportLibrary: cpuSupport }
              : board.kind === "tvm"
                ? tvmBackendOptions(board, facts.capabilities, tvmCanary)
                : shared(board.options),
          limits: {
            maxUploadBytes: o.maxUploadBytes,
            maxSessionBytes: o.maxSessionBytes,
            callTimeoutMs: o.callTimeoutMs,
            ...(plan.diskBytes > 0 ? { diskBytes: plan.diskBytes } : {}),
          },
          canaryIntervalMs: o.canaryIntervalMs,
        },
        entry,
        o.warmWorkers,
        {
          ready: (name) => {
            const pool = this.pools.get(name);
            if (pool && !this.draining.has(name)) this.link?.send({ board_ready: boardReady(pool) });
          },
          laneOpened: (sessionId) => this.laneOpened(sessionId),
          // Before its session_ended on the same stream: the tracker has a session's last figures when it ends it.
          laneBytes: (sessionId, toBoard, fromBoard) => this.link?.send({ session_bytes: { session_id: sessionId, to_board: toBoard, from_board: fromBoard } }),
          sessionEnded: (sessionId, reason) => {
            this.lanes?.forget(sessionId);
            this.link?.send({ session_ended: { session_id: sessionId, reason: reason?.toWire() ?? null } });
          },
          health: (name, report) => {
            const atMs = Date.now();
            if (report.kind === "canary") this.lastCanary.set(name, { ...report, atMs });
            this.link?.send({ board_health: healthMessage(name, report, atMs) });
          },
          programFpga: (_name, bitstream, config) => this.programFpga(board, spec, bitstream, config),
        },
        o.logger,
        sandbox,
        // TVM's clients come to the agent's port with their match key, never to a worker's own: no standby lane to hold open.
        board.kind === "tvm" ? undefined : standbyHost,
        this.metrics?.board(board.name, board.kind),
      );
      this.pools.set(board.name, pool);
      pool.fill();
    }
    // A worker's first "lane_opened" with a ticket is checked on the way to the tracker's LaneOpened: not the first use of Ed25519.
    warmTickets();
    const direct = await this.openLanes();
    this.link = new TrackerLink(
      o.tracker,
      o.name,
      specs,
      {
        attached: (registered) => {
          this.metrics?.trackerConnected(true);
          if (this.lanes) this.lanes.relayPort = registered.relay_port;
          this.lanes?.trackerAttached();
          // The tracker's clock, less the one-way delay of this message: a ticket's few seconds of life are read by it.
          const trackerClockOffsetMs = registered.now_ms > 0 ? registered.now_ms - Date.now() : 0;
          for (const pool of this.pools.values()) {
            pool.endGraceMs = registered.end_grace_ms || pool.endGraceMs;
            pool.setTicketKey(registered.ticket_key, trackerClockOffsetMs);
          }
          // A tracker without memory of these boards starts them healthy: tell it what the canaries last saw (one that remembers knows the result by its time).
          for (const [name, r] of this.lastCanary) {
            this.link?.send({ board_health: healthMessage(name, r, r.atMs) });
          }
          for (const pool of this.pools.values()) if (pool.hasIdle && !this.draining.has(pool.boardName)) this.link?.send({ board_ready: boardReady(pool) });
        },
        detached: (why) => {
          this.detachedWhy = why;
          this.metrics?.trackerConnected(false);
          // The tracker's sessions are gone with it.
          for (const pool of this.pools.values()) pool.abandonSessions();
        },
        assign: (a) => {
          traceGrant("agent: assignment read");
          const pool = this.pools.get(a.board_name);
          if (!pool) {
            o.logger.error({ board: a.board_name }, "assignment for a board this agent does not have");
            return;
          }
          const route = ROUTE.fromWire(a.route, `the tracker's assignment of session ${a.session_id}`, "PROTOCOL_ERROR");
          this.lanes?.expect(a.session_id, a.token, route);
          pool.assign(a.session_id, a.token, route, a.lane_port, a.session_timeout_ms);
        },
        end: (sessionId, reason) => {
          this.lanes?.forget(sessionId);
          for (const pool of this.pools.values()) pool.end(sessionId, reason);
        },
        openRelay: (sessionId) => void this.lanes?.dialRelay(sessionId),
        drain: (name) => {
          for (const pool of this.pools.values()) if (!name || pool.boardName === name) this.draining.add(pool.boardName);
        },
      },
      o.logger,
      o.security,
      direct,
    );
    return this;
  }

  /**
   * Where workers' standby lanes listen (device-agent/worker/standby.ts): on
   * the direct lane's interface, unless there is no direct lane, or it speaks
   * TLS (workers hold no key), or hosts reach it only at a forwarded port
   * (`--data-advertise HOST:PORT`), or `--no-standby` keeps hosts to the one port.
   */
  private standbyHost(): string | undefined {
    const o = this.options;
    if (!o.direct || !o.standby || o.dataTls || o.security.tls || /:\d+$/.test(o.dataAdvertise)) return undefined;
    return o.dataHost;
  }

  /**
   * The lanes: always the means to dial the tracker's data port; a direct
   * port unless turned off, or unless the agent talks TLS to its tracker and
   * has no certificate of its own for hosts (then hosts use the relay).
   */
  private async openLanes(): Promise<DirectLane | undefined> {
    const o = this.options;
    this.lanes = new AgentLanes(
      { tls: o.dataTls, security: o.security, tracker: o.tracker, workRoot: o.workRoot, tvm: o.boards.some((b) => b.kind === "tvm") },
      {
        hand: (sessionId, socket, rest, kind) => [...this.pools.values()].some((p) => p.giveLane(sessionId, socket, rest, kind)),
        opened: (sessionId) => this.laneOpened(sessionId),
        broke: (sessionId, error) => this.pools.forEach((p) => p.laneBroken(sessionId, error)),
      },
      o.logger,
    );
    if (!o.direct) return undefined;
    if (o.security.tls && !o.dataTls) {
      o.logger.warn(
        { tls: true },
        "no direct lane: this agent talks TLS to its tracker but has no certificate for hosts (--data-tls-cert, --data-tls-key); sessions take the tracker's relay",
      );
      return undefined;
    }
    const port = await this.lanes.listen(o.dataHost, o.dataPort);
    // HOST, or HOST:PORT where a forwarded port is what hosts reach (NAT).
    const advertised = o.dataAdvertise && /:\d+$/.test(o.dataAdvertise) ? parseAddress(o.dataAdvertise) : { host: o.dataAdvertise, port };
    o.logger.info({ host: o.dataHost, port, tls: this.lanes.secure, advertised: o.dataAdvertise || "(the address the tracker sees)" }, "direct lane listening");
    return { port: advertised.port, host: advertised.host, tls: this.lanes.secure };
  }

  /** A host reached a session's worker (the agent handed the lane over, or the worker's standby lane took it): the tracker sees no other sign. */
  private laneOpened(sessionId: string): void {
    this.link?.send({ lane_opened: { session_id: sessionId } });
  }

  /**
   * Loads a bitstream into a VTA board's FPGA (a session's program_fpga) and
   * records its SHA-256 as the board's `bitstream` label, here (so every
   * later registration says it) and at the tracker. The device model's FPGA
   * manager is a folder of this agent's (backends/vta-mmio/fpga-manager.ts).
   */
  private async programFpga(board: BoardConfig, spec: BoardSpec, bitstream: SessionFile, config: SessionFile): Promise<{ sha256: string; hardware: string }> {
    const { FpgaManager } = await import("../backends/vta-mmio/fpga-manager.ts");
    const manager = board.options.device === "model" ? FpgaManager.forModel(join(this.options.workRoot, "fpga", board.name)) : new FpgaManager("/");
    const loaded = manager.program(bitstream, config, DEFAULT_VTA_HARDWARE);
    spec.labels = { ...spec.labels, bitstream: loaded.sha256 };
    this.options.logger.info({ board: board.name, sha256: loaded.sha256, hardware: loaded.hardware }, `board ${board.name}: bitstream ${loaded.sha256} loaded`);
    this.link?.send({ board_labels: { board_name: board.name, labels: spec.labels } });
    return loaded;
  }

  close(): void {
    this.link?.close();
    this.lanes?.close();
    for (const pool of this.pools.values()) pool.close();
    void this.metrics?.close();
    rmSync(this.options.workRoot, { recursive: true, force: true });
  }
}

/** A board's health report as the tracker hears it; `atMs`: when this agent saw it. */
function healthMessage(name: string, r: HealthReport, atMs: number): BoardHealthReport {
  return {
    board_name: name,
    kind: HEALTH_REPORT_KIND.toWire(r.kind),
    ok: r.ok,
    reason: r.reason,
    duration_ms: r.durationMs,
    at_ms: atMs,
    kernel_ns: r.kernelNs,
  };
}

/**
 * A tvm board's worker options: TVM's paths as the agent found them
 * (describeTvmBoard; the worker's environment has no $KFARM_TVM_HOME), the
 * key its server answers TVM's handshake with, and the canary module.
 */
function tvmBackendOptions(board: BoardConfig, capabilities: Record<string, string>, canaryLibrary: string | undefined): Record<string, unknown> {
  return {
    ...board.options,
    python: capabilities.tvm_python,
    ...(capabilities.tvm_home ? { tvmHome: capabilities.tvm_home } : {}),
    key: board.key,
    ...(canaryLibrary ? { canaryLibrary } : {}),
  };
}

export async function startAgent(opts: AgentOptions): Promise<Agent> {
  return new Agent(opts).start();
}

/** A board's readiness: the standby lane of the worker that takes its next session, and that worker's name for its ticket. */
function boardReady(pool: BoardPool): { board_name: string; lane_port: number; worker_id: string } {
  return { board_name: pool.boardName, lane_port: pool.standbyPort, worker_id: pool.standbyWorkerId };
}
