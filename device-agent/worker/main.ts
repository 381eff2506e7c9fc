/**
 * A session worker process. It warms up (its backend), says "ready", runs
 * its codecs once while it waits (protos/warm.ts), and then serves its
 * sessions one at a time, each in its own working directory: those the
 * agent assigns to it, on the lane socket the agent hands it (it has no way
 * to the tracker of its own), and those whose hosts come to its standby lane
 * with a ticket the tracker signed for it, which it takes at once, in the
 * folder the agent made for its next session while it was idle (the agent
 * hears of it from the worker and checks the ticket too). A worker that
 * loaded foreign code serves no further session: it exits after that one.
 */
import { readdirSync, rmSync } from "node:fs";
import { join } from "node:path";
import type { KeyObject } from "node:crypto";
import { FarmError, workerCodecWarmups, type LaneHello__Output, type Route } from "../../protos/index.ts";
import { checkTicket, componentLogger, expiredFor, ticketKey, traceGrant, warmTickets } from "../../runtime/index.ts";
import { createBackend } from "../backends/index.ts";
import type { WorkerToAgent } from "../../protos/index.ts";
import { AgentChannel, type FromAgent } from "./agent-channel.ts";
import { AgentRequests } from "./agent-requests.ts";
import type { WorkerConfig } from "../common/worker-spawn.ts";
import type { SessionStore } from "./files.ts";
import { RequestCounters, SessionServer, type SessionHooks } from "./session-server.ts";
import { socketLane, type WorkerLane } from "./lane.ts";
import { LaneBytesReporter } from "./lane-bytes.ts";
import { dieWithParent } from "./parent-death.ts";
import { StandbyLane } from "./standby.ts";
import { serveTvm, startTvmServer, type TvmLane, type TvmServerChild } from "./tvm-session.ts";
import { TvmBackend } from "../backends/tvm/backend.ts";
import type { CanaryResult } from "../backends/backend.ts";
import { Watchdog } from "./watchdog.ts";
import { bindCStdio, blockingStdio, flushCStdio } from "./c-stdio.ts";

const config = JSON.parse(process.env.KFARM_WORKER ?? "null") as WorkerConfig | null;
if (!config) {
  console.error("kfarm session worker: start me through `kfarm agent`, not by hand");
  process.exit(2);
}
const log = componentLogger("worker", { board: config.boardName });

/** Tells the agent: written to the channel before it returns (worker/agent-channel.ts). */
function tell(msg: WorkerToAgent): void {
  channel.tell(msg);
}

/**
 * Serving failed outside what a session answers (the channel to the agent
 * broke, say): the worker ends, as an unhandled rejection would end it, with
 * the error on stderr for the agent's report of its exit (device-agent/agent/pool.ts).
 */
function die(err: unknown): never {
  console.error(err);
  process.exit(1);
}

/** How often a serving worker reports its request counters to the agent (and once more at each session's end). */
const COUNTERS_REPORT_MS = 1000;
const counters = new RequestCounters();

/** Sends what was counted since the last report, if anything was. */
function reportCounters(): void {
  const counts = counters.take();
  if (counts) tell({ counters: { calls: counts.calls, time_evaluations: counts.timeEvaluations, errors: counts.errors } });
}

// The agent is gone: nothing left to serve for.
dieWithParent(config.agentPid);
// What a kernel creates (files in /tmp, say) is its own: no other worker may read it.
process.umask(0o077);

/** Requests to the agent: answered by id, at most WORKER_MAX_PENDING_REQUESTS at once. */
const requests = new AgentRequests(tell);
const ask = (msg: (id: number) => WorkerToAgent) => requests.ask(msg);
/**
 * A session's end waits this long at most for its requests to the agent: a
 * keep copies a file of the session's folder, which the end empties, and a
 * worker told "ended" may ask nothing more.
 */
const ASKS_AT_END_MS = 2000;
/**
 * How long a clean end waits for its end frame and the lane's end to leave
 * this process (a host that stopped reading holds them back) before the
 * worker cleans up and tells its agent. The host's close() completes at the
 * lane's end: written first, it is not held back by the cleanup (synchronous
 * file removals). A tainted worker, killed once it reports, would otherwise
 * never write it: its host heard of the end from the tracker first and read
 * its lane to the close that the worker's death gave later — 8–15 ms more
 * per session that loaded a module. (Reporting first, the reusable case
 * measured ~10 % fewer sessions/s back to back on the GPU host.)
 */
const LANE_END_MS = 1000;

const backend = await createBackend(config.kind, config.backendOptions);
// The agent holds the store shared by the workers of all its boards (agent/content-store.ts): workers may run as
// uids of their own, which must not read or change one another's files.
const store: SessionStore = {
  take: async (sha256, size) => {
    const r = await ask((id) => ({ store_take: { id, sha256, size } }));
    return r.store_took?.file || undefined;
  },
  keep: async (name, sha256) => {
    await ask((id) => ({ store_keep: { id, name, sha256 } }));
  },
};
/** VTA boards: the agent loads bitstreams (it owns the FPGA manager and the board's labels). */
const programFpga =
  config.kind === "vta"
    ? async (bitstream: string, configFile: string) => {
        const r = (await ask((id) => ({ program_fpga: { id, bitstream, config: configFile } }))).fpga_programmed;
        if (!r) throw new FarmError("INTERNAL", "the agent answered program_fpga with another message");
        if (r.error) throw FarmError.fromWire(r.error);
        return { sha256: r.sha256, hardware: r.hardware };
      }
    : undefined;
/**
 * What this worker printed since its session began, for the session's host:
 * the agent reads the worker's pipes and keeps it (device-agent/agent/session-output.ts),
 * so the worker asks for it piece by piece, up to what had been printed when
 * the host asked.
 */
async function sessionOutput(): Promise<Uint8Array> {
  flushCStdio();
  const parts: Uint8Array[] = [];
  let from = 0;
  let until: number | undefined;
  for (;;) {
    const r = (await ask((id) => ({ output_read: { id, from } }))).output;
    if (!r) throw new FarmError("INTERNAL", "the agent answered output_read with another message");
    until ??= r.end;
    parts.push(r.data);
    from = r.start + r.data.byteLength;
    if (r.data.byteLength === 0 || from >= until) return Buffer.concat(parts);
  }
}
const watchdog = new Watchdog();
let serving: string | undefined;
// From process start to ready: runtime and backend (a CUDA context).
const startMs = performance.now().toFixed(1);

/** The session being served: its lane arrives (a TVM client's socket on a tvm board) and its end may be asked for (a release). */
let current: { sessionId: string; lane: (lane: WorkerLane | TvmLane) => void; end: () => void } | undefined;
/** This worker's own port, where its sessions' hosts connect straight to it (direct lanes). */
let standby: StandbyLane | undefined;
/** Its name in the tickets the tracker signs for it (WorkerStandby.worker_id). */
let workerId = "";
/** The tracker's ticket key and clock, and the session end grace, as the agent last registered (WorkerTicketKey). */
let ticketing: { key: KeyObject; offsetMs: number; endGraceMs: number } | undefined;
/** The folder the agent made for this worker's next session while it was idle (WorkerPrepared). */
let nextDir: string | undefined;
/**
 * The last sessions this worker served. A session taken by its ticket can be
 * over before the worker reads its assignment (the agent sent it as the host
 * came, and the lane's frames were read first): that assignment is not a
 * new session.
 */
const served: string[] = [];
const SERVED_KEPT = 16;
/** The session this worker took by its ticket, and that ticket: the agent hears it with lane_opened and checks it too. */
let claimed: { sessionId: string; ticket: string } | undefined;
const trackerNow = () => Date.now() + (ticketing?.offsetMs ?? 0);

/** Takes a session: its lane is then awaited (the host's, at the standby lane, or one the agent hands over). */
function begin(sessionId: string, ticket: string, route: Route, dir: string, callsEnd: SessionHooks["callsEnd"]): void {
  serving = sessionId;
  standby?.tickets.expect(sessionId, ticket, route);
  serve(sessionId, dir, callsEnd).catch(die);
}

/**
 * A host at the standby lane with a ticket, before any assignment: taken by
 * the ticket alone (Tickets.admit's claim) when this worker is idle, knows
 * the tracker's key and has its next folder (without one, a good ticket
 * waits for its assignment); PERMISSION_DENIED for a ticket that is not the
 * tracker's, not for this worker, or expired (a used one the door refused
 * already), whatever the folder.
 */
function claim(hello: LaneHello__Output): boolean {
  if (serving !== undefined || !ticketing || !workerId) return false;
  const claims = checkTicket(hello.ticket, hello.session_id, { key: ticketing.key, boardName: config!.boardName, workerId });
  const late = expiredFor(claims, trackerNow());
  if (late > 0)
    throw new FarmError(
      "PERMISSION_DENIED",
      `the ticket for session ${claims.session_id} expired ${late} ms ago: a lane must open within the lease's open timeout; request a new session`,
    );
  // A good ticket, and no folder ready yet (the agent is making it): the assignment brings one.
  if (nextDir === undefined) return false;
  const dir = nextDir;
  nextDir = undefined;
  claimed = { sessionId: claims.session_id, ticket: hello.ticket };
  // As the agent bounds an assigned session's calls (its lease's end less the end grace), by the tracker's clock.
  const left = Math.floor(claims.issued_ms + claims.session_timeout_ms - trackerNow() - ticketing.endGraceMs);
  const callsEnd = claims.session_timeout_ms > 0 && left > 0 ? { at: Date.now() + left, sessionTimeoutMs: claims.session_timeout_ms } : undefined;
  begin(claims.session_id, hello.ticket, claims.route, dir, callsEnd);
  return true;
}

/** What the agent says. Sockets come with the message that announces them (worker/agent-channel.ts). */
function fromAgent({ msg, socket, server }: FromAgent): void {
  if (msg.assign) {
    const a = msg.assign;
    traceGrant("worker: assignment read");
    // Taken by its ticket already: the assignment was on its way as the host came (and may be read after its end).
    if (serving === a.session_id || served.includes(a.session_id)) return;
    if (serving) {
      log.error({ session: a.session_id, serving }, "assigned a session while serving another");
      return;
    }
    // The agent gave it the folder it prepared, if it had one.
    nextDir = undefined;
    // By this process's clock, as the watchdog reads it (Date.now()).
    const callsEnd = a.calls_end_in_ms > 0 ? { at: Date.now() + a.calls_end_in_ms, sessionTimeoutMs: a.session_timeout_ms } : undefined;
    begin(a.session_id, a.token, a.route, a.dir, callsEnd);
  } else if (msg.prepared) {
    nextDir = msg.prepared.dir;
  } else if (msg.ticket_key) {
    const k = msg.ticket_key;
    try {
      ticketing = { key: ticketKey(k.public_key), offsetMs: k.tracker_clock_offset_ms, endGraceMs: k.end_grace_ms };
    } catch (err) {
      ticketing = undefined;
      log.warn({ err: (err as Error).message }, "a ticket key this worker cannot read: its hosts wait for each assignment");
    }
  } else if (msg.lane) {
    const { kind, rest } = msg.lane;
    if (current?.sessionId !== msg.lane.session_id || !socket) socket?.destroy();
    // A TVM client's socket only where TVM's server can serve it: a tvm board's worker.
    else if (kind === "tvm") {
      if (backend instanceof TvmBackend) current.lane({ kind, socket, handshake: Buffer.from(rest) });
      else socket.destroy();
    } else current.lane(socketLane(socket, Buffer.from(rest), kind));
  } else if (msg.standby && server) {
    // Sent once per worker (device-agent/agent/pool.ts), when it is ready.
    workerId = msg.standby.worker_id;
    standby = new StandbyLane(
      server,
      {
        serving: () => serving,
        open: (sessionId, laneSocket, rest) => {
          if (current?.sessionId !== sessionId) return false;
          current.lane(socketLane(laneSocket, rest, "direct"));
          tell({ lane_opened: { session_id: sessionId, ticket: claimed?.sessionId === sessionId ? claimed.ticket : "" } });
          return true;
        },
        claim,
      },
      log,
      trackerNow,
    );
  } else if (msg.end) {
    if (current?.sessionId === msg.end.session_id) current.end();
  } else if (msg.run_canary) {
    canary().catch(die);
  } else {
    const id = msg.store_took?.id ?? msg.store_kept?.id ?? msg.fpga_programmed?.id ?? msg.output?.id;
    if (id !== undefined) requests.answered(id, msg);
  }
}

// The agent is gone (its end of the channel closed): nothing left to serve for.
const channel = new AgentChannel(fromAgent, () => process.exit(0));

/**
 * Runs the board's canary, when it has one, and tells the agent how it went
 * (it asked: at start, or run_canary); `ran`: a start canary a tvm board's
 * server child ran already, TVM imported once for both.
 */
async function canary(ran?: Promise<CanaryResult>, t0 = performance.now()): Promise<void> {
  let result;
  try {
    result = ran ? await ran : backend.canary();
  } catch (err) {
    result = { ok: false, detail: `the canary threw: ${(err as Error).message}` };
  }
  const durationMs = performance.now() - t0;
  tell({ canary: result ? { ran: true, ok: result.ok, detail: result.detail, duration_ms: durationMs, kernel_ns: result.kernelNs ?? 0 } : { ran: false } });
}

/**
 * A tvm board's next session's TVM server: importing TVM (0.4–0.6 s) is done
 * while the worker is idle, and the worker's start canary runs in it.
 */
const canaryFrom = performance.now();
const tvmServer: TvmServerChild | undefined = backend instanceof TvmBackend ? startTvmServer(backend.runtime, backend.canaryLibrary) : undefined;
// A new worker checks its board first: at registration, and after any worker death.
await canary(tvmServer?.canary, canaryFrom);
// Listening already: an assignment can follow "ready" at once.
tell({ ready: {} });

// What a fresh worker's first session would otherwise pay on its critical path (grant to first call 42 → 15 ms on
// a 2-vCPU VM, bench/ab/phases.ts): each codec's first run (protos/warm.ts), a ticket's check, and binding C's stdio (c-stdio.ts,
// before the first module loads). One step per turn while idle, so no assignment waits for more than one.
const warmups = [...workerCodecWarmups(), warmTickets, bindCStdio];
(function warmNext(): void {
  if (serving === undefined && warmups.length > 0) {
    warmups.shift()!();
    setImmediate(warmNext);
  }
})();

/** The worker's own home (HOME, TMPDIR, working directory) between sessions. */
const home = { HOME: process.env.HOME, TMPDIR: process.env.TMPDIR, cwd: process.cwd() };

/**
 * While it serves a session, the worker's HOME, TMPDIR and working directory
 * are the session's folder: what its kernels write without a path of their
 * own (temporary files, relative names) lands there and counts against the
 * session's disk quota (device-agent/common/session-disk.ts), and goes with it.
 * process.env writes through to the C environment (setenv), which kernels
 * and their children read.
 */
function enter(dir: string | undefined): void {
  for (const name of ["HOME", "TMPDIR"] as const) {
    const value = dir ?? home[name];
    // Assigning undefined would set the text "undefined".
    if (value === undefined) delete process.env[name];
    else process.env[name] = value;
  }
  try {
    // Out of the session's folder afterwards too: a detached tmpfs lives on while any process's cwd is in it.
    process.chdir(dir ?? home.cwd);
  } catch {
    // removed already (the session was ended from outside)
  }
}

async function serve(sessionId: string, workdir: string, callsEnd: SessionHooks["callsEnd"]): Promise<void> {
  // The folder is the agent's to make and remove (its parent is closed to workers); the worker empties it.
  enter(workdir);
  let ended = false;
  const lane = await new Promise<WorkerLane | TvmLane | undefined>((resolve) => {
    // The agent hands the lane over when the host (or the relay, or the agent's stream) is there.
    current = { sessionId, lane: resolve, end: () => resolve(undefined) };
  });
  if (!lane) {
    // Released before its lane opened.
    ended = true;
    await finishSession(sessionId, workdir, undefined);
    return;
  }
  if ("handshake" in lane) {
    await serveTvmSession(sessionId, workdir, lane);
    return;
  }
  const server = new SessionServer(backend, workdir, config!.limits, lane, {
    watchdog,
    // In the channel before the first native code runs: from then on the agent believes this process nothing
    // beyond this session, and starts the board's next worker now, while this session runs.
    beforeNativeCode: () => {
      tell({ foreign_code: { session_id: sessionId } });
      blockingStdio();
    },
    info: { worker_start_ms: startMs },
    counters,
    store,
    ...(callsEnd ? { callsEnd } : {}),
    output: sessionOutput,
    flushOutput: flushCStdio,
    ...(programFpga ? { programFpga } : {}),
  });
  const reporter = setInterval(reportCounters, COUNTERS_REPORT_MS);
  const laneBytes = new LaneBytesReporter(sessionId, () => lane.bytes(), tell);
  lane.onFrame((bytes) => server.receive(bytes));

  // Over when the host closed (Close answered), when the tracker released the
  // session (the agent says "end"), or when the lane ended or broke (the host
  // left, the lease ended: the tracker knows why).
  let laneEnded: Promise<void> | undefined;
  const finish = () => {
    if (ended) return;
    ended = true;
    laneEnded = lane.finish();
  };
  current = { sessionId, lane: (extra) => ("handshake" in extra ? extra.socket.destroy() : void extra.finish()), end: finish };
  void server.closed.then(finish);
  const error = await Promise.race([lane.over, server.closed.then(() => undefined)]);
  clearInterval(reporter);
  server.dispose();
  if (laneEnded) await within(laneEnded, LANE_END_MS);
  // Before "ended" on the channel: the agent, and the tracker after it, have the session's last figures when it ends.
  laneBytes.finish();
  await finishSession(sessionId, workdir, error);
}

/**
 * A TVM client's session (a tvm board): TVM's server loop runs the tenant's
 * modules in a child of this worker, which is tainted from now on.
 */
async function serveTvmSession(sessionId: string, workdir: string, lane: TvmLane): Promise<void> {
  const tvm = backend as TvmBackend;
  // Before the first tenant code, as for a module: the agent starts the board's next worker now.
  tell({ foreign_code: { session_id: sessionId } });
  tvm.taint(sessionId);
  const session = serveTvm(lane, { runtime: tvm.runtime, key: String(config!.backendOptions.key ?? config!.boardName), workdir, log }, tvmServer);
  current = { sessionId, lane: (extra) => ("handshake" in extra ? extra.socket.destroy() : void extra.finish()), end: () => session.stop() };
  const error = await session.over;
  await finishSession(sessionId, workdir, error);
}

/** After a session, served or not: last counters, the folder emptied, "ended" with whether this worker may serve again. */
async function finishSession(sessionId: string, workdir: string, error: FarmError | undefined): Promise<void> {
  current = undefined;
  claimed = undefined;
  served.push(sessionId);
  if (served.length > SERVED_KEPT) served.shift();
  standby?.tickets.forget(sessionId);
  // Uploads asked the agent to keep their bytes without waiting: those keeps finish before the folder is emptied.
  await requests.settled(ASKS_AT_END_MS);
  // The channel keeps order: the agent has the session's last counts before it hears "ended".
  reportCounters();
  emptyFolder(workdir);
  enter(undefined);
  serving = undefined;
  const reusable = !backend.tainted;
  tell({ ended: { session_id: sessionId, reusable, ...(error ? { error: error.toWire() } : {}) } });
  if (!reusable) process.exit(0);
}

/** `promise`, or `ms` later if it has not settled by then. */
function within(promise: Promise<void>, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([promise, new Promise<void>((resolve) => (timer = setTimeout(resolve, ms)))]).finally(() => clearTimeout(timer));
}

/** Removes what a session left in its folder (the folder itself is the agent's to remove). */
function emptyFolder(dir: string): void {
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return; // removed by the agent already (the session was ended from outside)
  }
  for (const name of names) rmSync(join(dir, name), { recursive: true, force: true });
}
