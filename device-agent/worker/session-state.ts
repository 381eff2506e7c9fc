/**
 * What one session holds across its requests — files, modules, arrays and
 * the board — shared by the operation handlers (ops/); the multiplexer
 * (session-server.ts) makes one per session.
 */
import type { Dtype } from "../../protos/index.ts";
import type { Backend, DeviceArray, LoadedModule } from "../backends/index.ts";
import { SessionFiles, type SessionStore } from "./files.ts";
import type { SessionLimits } from "../common/worker-spawn.ts";
import { RequestCounters } from "../common/request-counters.ts";
import type { Watchdog } from "./watchdog.ts";

/** Optional observers of a session: the call watchdog, and who wants to know when foreign code is loaded. */
export interface SessionHooks {
  watchdog?: Watchdog;
  /**
   * The session is about to load its first native code (Backend.loadsNativeCode):
   * returns once the agent is sure to hear of it, before any of that code runs.
   */
  beforeNativeCode?: () => void;
  /** Facts about the serving process, added to every stats reply. */
  info?: Record<string, string>;
  /** Where calls, time evaluations and their errors are counted (a worker keeps one across its sessions). */
  counters?: RequestCounters;
  /** The agent's store of uploaded files by digest (none: every upload is sent in full). */
  store?: SessionStore;
  /**
   * When the session's calls end (Date.now() time; its agent set it one end
   * grace before the lease's end) and the lease's timeout: a call's limit is
   * never past it (ops/calls.ts). None: the session has no timeout here.
   */
  callsEnd?: { at: number; sessionTimeoutMs: number };
  /** What this session's worker printed, as its agent kept it (C's stdio flushed first); none: nothing is kept (a LocalSession). */
  output?: () => Promise<Uint8Array>;
  /** Hands what the session's native code printed through C's stdio to the pipes (worker/c-stdio.ts). */
  flushOutput?: () => void;
  /** Loads a bitstream into the board's FPGA (VTA boards only: the agent does it); names of session files. */
  programFpga?: (bitstream: string, config: string) => Promise<{ sha256: string; hardware: string }>;
}

export interface RemoteArray {
  array: DeviceArray;
  dtype: Dtype;
  shape: number[];
}

export class SessionState {
  readonly files: SessionFiles;
  readonly counters: RequestCounters;
  readonly modules = new Map<number, LoadedModule>();
  nextModule = 1;
  /** The agent was told this session loads native code (SessionHooks.beforeNativeCode): once is enough. */
  nativeCodeLoaded = false;
  readonly arrays = new Map<number, RemoteArray>();
  nextArray = 1;
  /** Bytes of the session's arrays, checked against the board's memory at each allocation. */
  arrayBytes = 0;
  /** Uploads answered from the content store: files, and bytes that did not cross the network. */
  readonly reused = { files: 0, bytes: 0 };

  constructor(
    readonly backend: Backend,
    workdir: string,
    readonly limits: SessionLimits,
    readonly hooks: SessionHooks,
  ) {
    this.files = new SessionFiles(workdir, limits, hooks.store);
    this.counters = hooks.counters ?? new RequestCounters();
  }

  /** Frees the session's arrays and resets the board for the next session. */
  dispose(): void {
    for (const a of this.arrays.values()) a.array.free();
    this.arrays.clear();
    this.backend.reset();
  }
}
