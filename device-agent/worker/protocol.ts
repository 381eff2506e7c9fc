/** Messages between the agent and its session workers (Node IPC, JSON). */
import type { WireError } from "../../protos/index.ts";
import type { RequestCounts, SessionLimits } from "./session-server.ts";

/** Given to a worker at spawn, in the KFARM_WORKER env variable. */
export interface WorkerConfig {
  /** Where the worker dials the tracker: HOST:PORT, or `unix:PATH` (the agent's forwarder, device-agent/worker-link.ts). */
  tracker: string;
  /** The agent's pid: the worker dies with it. */
  agentPid: number;
  boardName: string;
  kind: string;
  backendOptions: Record<string, unknown>;
  limits: SessionLimits;
  /** Run the board's canary this often while idle (and once at start); 0: only at start. */
  canaryIntervalMs: number;
}

export type AgentToWorker =
  /**
   * `dir`: the session's folder, made by the agent (owned by the worker's uid, 0700).
   * `route` grpc: the worker opens ServeSession with the ticket (`token`); any other: its lane comes as "lane".
   */
  | { t: "assign"; sessionId: string; token: string; dir: string; route: string }
  /**
   * The session's lane, a socket sent with this message (device-agent/lanes.ts); `rest`: bytes already read from it,
   * base64. direct: the host's hello was checked, the worker welcomes it; relay: the tracker's welcome is the first frame.
   */
  | { t: "lane"; sessionId: string; kind: "direct" | "relay"; rest: string }
  /** The worker's standby lane: a listening server sent with this message (worker/standby.ts). */
  | { t: "standby" }
  /** The tracker ended the session cleanly (released): close the lane with the end frame, and report "ended". */
  | { t: "end"; sessionId: string }
  /** Answer to "store-take": `file` is the name, in the session's folder, the stored file was linked to; absent: not held. */
  | { t: "store-took"; id: number; file?: string }
  /** Answer to "store-keep": the agent is done with it (kept or not). */
  | { t: "store-kept"; id: number }
  /** Answer to "program-fpga": what was loaded, or why not. */
  | { t: "fpga-programmed"; id: number; sha256?: string; hardware?: string; error?: WireError };

export type WorkerToAgent =
  | { t: "ready" }
  /** A host reached this worker at its standby lane (the agent tells the tracker, as for a lane it handed over). */
  | { t: "lane-opened"; sessionId: string }
  /** The board's canary ran (device-agent/canary.ts); `kernelNs`: its kernel's time per run, when it passed and was timed. */
  | { t: "canary"; ok: boolean; detail: string; durationMs: number; kernelNs?: number }
  /** The session loaded foreign code: this worker exits after it. */
  | { t: "tainted"; sessionId: string }
  /**
   * Calls, time evaluations and errors counted since the last report (deltas,
   * for the agent's metrics): at most once a second while serving, and once
   * at the session's end, before "ended".
   */
  | ({ t: "counters" } & RequestCounts)
  /**
   * The content store lives in the agent (worker/content-store.ts): the
   * serving session's file `name` is to be kept under `sha256`, or the
   * stored file of `sha256` of `size` bytes is wanted in the session's folder.
   */
  | { t: "store-keep"; id: number; name: string; sha256: string }
  | { t: "store-take"; id: number; sha256: string; size: number }
  /**
   * The session asks to load a bitstream (session.proto ProgramFpga): the
   * agent owns the FPGA manager and the board's labels. Both are names of
   * files in the session's folder.
   */
  | { t: "program-fpga"; id: number; bitstream: string; config: string }
  /** `error`: why the session ended, when not cleanly (FarmError.toWire: its details too). */
  | { t: "ended"; sessionId: string; reusable: boolean; error?: WireError };
