/**
 * The TVM port (`kfarm tracker --tvm-port`): a TCP listener in the tracker
 * process that speaks Apache TVM's tracker protocol, so that TVM's
 * `rpc_server --tracker HOST:PORT --key K` registers with kernelfarm and
 * TVM's `connect_tracker(…).request(key)` (autotvm's and MetaSchedule's RPC
 * runners) is served by kernelfarm's queues. docs/tvm-tracker.md is the
 * user's page; the modules beside this one are the wire codec (wire.ts), a
 * connection (connection.ts), a server's board (server.ts), admission
 * (admission.ts) and the probe of a server's port (probe.ts).
 *
 * TVM servers are boards of the one registry (kind `tvm-rpc`, agent
 * `tvm@HOST:PORT`): `kfarm status`, the Summary RPC, the live view and the
 * metrics show them, and `kfarm board drain|quarantine|restore` applies.
 */
import { createServer, type Server } from "node:net";
import { FarmError } from "../../protos/index.ts";
import { boardState, servesAsker } from "../registry.ts";
import { TvmAdmission } from "./admission.ts";
import { TvmConnection, type RefusalReason, type TvmPortContext } from "./connection.ts";
import { farmBoardInfo } from "./farm-board.ts";
import type { TvmFarm, TvmServer } from "./server.ts";

/** Connections the port holds at once (servers, clients, status queries); beyond it new ones are dropped and counted. */
export const MAX_TVM_CONNECTIONS = 4096;

export interface TvmPortOptions {
  /** Networks admitted (CIDR); tracker/tvm/admission.ts. */
  allow: readonly string[];
  /** Keys served on the port; undefined or empty: all. */
  keys: readonly string[] | undefined;
  maxSessionTimeoutMs: number;
}

/** TVM's SUMMARY reply (docs/tvm-tracker.md, "TVM's protocol" §2), which `python -m tvm.exec.query_rpc_tracker` prints. */
export interface TvmSummary {
  queue_info: Record<string, { free: number; pending: number }>;
  server_info: Record<string, unknown>[];
}

export class TvmPort implements TvmPortContext {
  readonly admission: TvmAdmission;
  readonly farm: TvmFarm;
  readonly maxSessionTimeoutMs: number;
  stopping = false;
  private readonly listener: Server;
  private readonly connections = new Set<TvmConnection>();
  private readonly refusedCount: Record<RefusalReason | "overload", number> = { network: 0, key: 0, address: 0, protocol: 0, overload: 0 };

  constructor(opts: TvmPortOptions, farm: Omit<TvmFarm, "servers">) {
    this.admission = new TvmAdmission(opts.allow, opts.keys);
    this.farm = { ...farm, servers: new Map<string, TvmServer>() };
    this.maxSessionTimeoutMs = opts.maxSessionTimeoutMs;
    this.listener = createServer((socket) => this.connections.add(new TvmConnection(socket, this)));
    this.listener.maxConnections = MAX_TVM_CONNECTIONS;
    this.listener.on("drop", (d) => {
      this.refusedCount.overload++;
      farm.log.warn({ peer: d?.remoteAddress }, `tvm port: dropped a connection: ${MAX_TVM_CONNECTIONS} are open already`);
    });
  }

  get port(): number {
    const a = this.listener.address();
    return typeof a === "object" && a ? a.port : 0;
  }

  listen(host: string, port: number): Promise<void> {
    return new Promise((resolve, reject) => {
      this.listener.once("error", (err) =>
        reject(new FarmError("UNAVAILABLE", `the tracker cannot open its TVM port on ${host}:${port}: ${err.message}`, { cause: err })),
      );
      this.listener.listen(port, host, () => resolve());
    });
  }

  /** Connections open now (for the metrics and the leak tests). */
  get connectionCount(): number {
    return this.connections.size;
  }

  /** Connections and requests refused since the start, by reason (network, key, address, protocol, overload). */
  refusals(): Readonly<Record<string, number>> {
    return this.refusedCount;
  }

  refused(reason: RefusalReason): void {
    this.refusedCount[reason]++;
  }

  closed(connection: TvmConnection): void {
    this.connections.delete(connection);
  }

  /**
   * The farm in TVM's SUMMARY format: what a TVM client can be granted. Per
   * key of a TVM server or a waiting TVM request, `free` TVM servers and TVM
   * requests `pending`; per server connection its UPDATE_INFO dict, plus the
   * board's id and state (extra fields, which TVM's tools ignore).
   * kernelfarm's own boards are not listed, but for those of kind tvm (which
   * serve TVM clients: tracker/tvm/farm-board.ts).
   */
  summary(): TvmSummary {
    const { registry, scheduler } = this.farm;
    const boards = [...registry.boards()].filter((b) => servesAsker(b, "tvm"));
    const keys = new Set(boards.map((b) => b.key));
    for (const key of scheduler.queuedKeys()) if (scheduler.pendingOf(key, "tvm") > 0) keys.add(key);
    const queue_info: TvmSummary["queue_info"] = {};
    for (const key of [...keys].sort()) {
      queue_info[key] = { free: boards.filter((b) => b.key === key && boardState(b) === "free").length, pending: scheduler.pendingOf(key, "tvm") };
    }
    const server_info: Record<string, unknown>[] = [];
    for (const c of this.connections) {
      const server = c.server;
      if (!server || server.state === "gone") continue;
      const board = server.board;
      server_info.push({
        ...c.info,
        // As TVM's tracker lists it; a server that sent no addr (TVM before 0.8) is listed where it connects from.
        addr: Array.isArray(c.info.addr) ? c.info.addr : [c.peerHost, server.clientAddress?.[1] ?? null],
        ...(board ? { board: board.id, state: boardState(board) } : {}),
      });
    }
    // kernelfarm's tvm boards (docs/tvm-boards.md), listed as TVM's tracker lists a server.
    for (const b of boards) {
      const info = farmBoardInfo(b);
      if (info) server_info.push(info);
    }
    return { queue_info, server_info };
  }

  /**
   * The tracker is stopping: new connections are refused, and a waiting
   * REQUEST that the scheduler fails from here on closes its connection
   * instead of being answered — TVM's client then reconnects (it retries for
   * 60 s) and asks again, as with TVM's tracker; a failure reply it would
   * raise to its user.
   */
  stop(): void {
    this.stopping = true;
    this.listener.close();
  }

  /** Ends every connection, after what was written (the tracker is stopping: its waiting requests left their queues, its leases ended). */
  close(): void {
    this.stop();
    for (const c of this.connections) c.finish("the tracker is shutting down", "info");
  }
}
