/**
 * The tracker's state file: one JSON document, `{ "version": 1, ... }`, in its
 * state directory (`--state-dir`), holding what the tracker keeps across its
 * restarts (tracker/board-memory.ts says what; docs/architecture.md, "Tracker
 * restarts", says what it still loses).
 *
 * Read once, at start. No file is a first start. A file that cannot be read,
 * is not JSON, is not a state file, or was written by a newer tracker stops
 * the start with a FarmError naming the file, what is wrong and what to do.
 * Not moved aside and started empty: the file holds operators' decisions — a
 * board quarantined as broken, one drained for repair — and a tracker that
 * forgot them would put those boards back in service; under a supervisor
 * that restarts it, a warning would scroll by unseen while users got a broken
 * board's results. The writes below never leave a torn file, so a bad one
 * was damaged from outside (a disk fault, a hand edit) and deserves a look
 * before anyone decides to set it aside.
 *
 * Written whole and atomically (tracker/atomic-file.ts), off the event loop,
 * one write at a time. `changed()` marks the document dirty and a write
 * follows within `delayMs` carrying every change made meanwhile (a burst, such
 * as an agent registering eight boards, is one write). `flush()` resolves once
 * what changed so far is on disk (an operator's command is answered then);
 * `close()` flushes. A write that fails (disk full, permissions changed) is
 * logged once per outage and retried every `retryMs`: the tracker serves on
 * from memory, and whoever awaits `flush()` hears why.
 */
import { mkdirSync, readFileSync, rmSync } from "node:fs";
import { dirname } from "node:path";
import { FarmError } from "../protos/index.ts";
import { type Logger } from "../runtime/index.ts";
import { leftoverTemporaries, writeFileAtomic, writeFileAtomicSync } from "./atomic-file.ts";

/** The version this tracker writes and reads. A new one comes with a reader of the old. */
export const STATE_VERSION = 1;
export const STATE_FILE_NAME = "tracker-state.json";
/** How long a change waits for others to share its write. */
export const DEFAULT_STATE_WRITE_DELAY_MS = 20;
/** After a failed write, the next try. */
export const DEFAULT_STATE_RETRY_MS = 1000;

export interface StateStoreOptions<T> {
  /** The document from the file's content (its version checked already); throws an Error whose message names what is wrong. */
  parse(content: Record<string, unknown>): T;
  /** The document of a first start. */
  empty(): T;
  logger: Logger;
  delayMs?: number;
  retryMs?: number;
}

interface Waiter {
  generation: number;
  resolve(): void;
  reject(err: FarmError): void;
}

export class StateStore<T extends object> {
  /** The document; its owner changes it in place and calls changed(). */
  readonly document: T;
  private readonly log: Logger;
  private readonly delayMs: number;
  private readonly retryMs: number;
  /** Bumped by every change; `saved` is the one on disk. */
  private generation = 0;
  private saved = 0;
  private writing = false;
  private timer: NodeJS.Timeout | undefined;
  private waiters: Waiter[] = [];
  /** The last write's failure, until a write succeeds. */
  private failure: FarmError | undefined;
  private closed = false;
  private completed = 0;

  private constructor(
    readonly path: string,
    document: T,
    opts: StateStoreOptions<T>,
  ) {
    this.document = document;
    this.log = opts.logger;
    this.delayMs = opts.delayMs ?? DEFAULT_STATE_WRITE_DELAY_MS;
    this.retryMs = opts.retryMs ?? DEFAULT_STATE_RETRY_MS;
  }

  /**
   * Reads the state file at `path` (none: `empty()`), then writes it back at
   * once, synchronously: a directory the tracker cannot write is found at
   * start, not at the first operator command. Throws a FarmError naming the
   * file for anything it cannot use.
   */
  static open<T extends object>(path: string, opts: StateStoreOptions<T>): StateStore<T> {
    try {
      mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
    } catch (err) {
      throw new FarmError(
        FarmError.from(err, "INVALID_ARGUMENT").code,
        `cannot make the tracker's state directory ${dirname(path)}: ${(err as Error).message}`,
        { cause: err },
      );
    }
    const store = new StateStore(path, read(path, opts), opts);
    for (const tmp of leftoverTemporaries(path)) if (!alive(tmp)) rmSync(tmp, { force: true });
    try {
      writeFileAtomicSync(path, store.serialize());
    } catch (err) {
      throw new FarmError(
        FarmError.from(err, "INVALID_ARGUMENT").code,
        `cannot write the tracker's state file ${path}: ${(err as Error).message}; the tracker's user must be able to create and replace files in ${dirname(path)} (--state-dir)`,
        { cause: err },
      );
    }
    return store;
  }

  /** Writes completed since open (the first, at open, not counted). */
  get writes(): number {
    return this.completed;
  }

  /** The document changed: it is written within `delayMs`, with whatever else changes meanwhile. */
  changed(): void {
    this.generation++;
    this.schedule(this.delayMs);
  }

  /** Resolves once every change made so far is on disk; rejects with the write's FarmError if it failed. */
  flush(): Promise<void> {
    if (this.saved >= this.generation) return Promise.resolve();
    const done = new Promise<void>((resolve, reject) => this.waiters.push({ generation: this.generation, resolve, reject }));
    this.schedule(0);
    return done;
  }

  /** Flushes (a failure is logged, not thrown: the tracker is stopping either way) and stops. */
  async close(): Promise<void> {
    try {
      await this.flush();
    } catch {
      // logged by write()
    }
    this.closed = true;
    clearTimeout(this.timer);
    this.timer = undefined;
  }

  private serialize(): string {
    return `${JSON.stringify({ version: STATE_VERSION, ...this.document }, null, 1)}\n`;
  }

  /** Arms the write in `ms` (0: starts it now; sooner replaces later); a write in flight looks again when it ends. */
  private schedule(ms: number): void {
    if (this.writing || this.closed) return;
    if (this.timer) {
      if (ms > 0) return;
      clearTimeout(this.timer);
      this.timer = undefined;
    }
    if (ms === 0) {
      void this.write();
      return;
    }
    this.timer = setTimeout(() => {
      this.timer = undefined;
      void this.write();
    }, ms);
  }

  private async write(): Promise<void> {
    this.writing = true;
    const generation = this.generation;
    try {
      // One synchronous stringify: the document as it is now; changes from here on are the next write's.
      await writeFileAtomic(this.path, this.serialize());
      this.saved = generation;
      this.completed++;
      if (this.failure) this.log.info({ file: this.path }, "the tracker's state file is written again");
      this.failure = undefined;
    } catch (err) {
      const e = new FarmError(
        FarmError.from(err, "UNAVAILABLE").code,
        `cannot write the tracker's state file ${this.path}: ${(err as Error).message}; the tracker serves on, but a restart now would forget what changed since its last good write (retried every ${this.retryMs} ms)`,
        { cause: err },
      );
      if (e.message !== this.failure?.message) this.log.error({ file: this.path }, e.message);
      this.failure = e;
    } finally {
      this.writing = false;
    }
    const waiting = this.waiters;
    this.waiters = [];
    for (const w of waiting) {
      if (w.generation <= this.saved) w.resolve();
      else if (this.failure) w.reject(this.failure);
      else this.waiters.push(w);
    }
    if (this.generation > this.saved) this.schedule(this.failure ? this.retryMs : this.waiters.length > 0 ? 0 : this.delayMs);
  }
}

function read<T>(path: string, opts: StateStoreOptions<T>): T {
  const aside = `move it aside (mv ${path} ${path}.bad) to start without what it remembers: drained and quarantined boards would then come back in service`;
  let text: string;
  try {
    text = readFileSync(path, "utf8");
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return opts.empty();
    throw new FarmError(
      FarmError.from(err, "INVALID_ARGUMENT").code,
      `cannot read the tracker's state file ${path}: ${(err as Error).message}; let the tracker's user read it, or ${aside}`,
      { cause: err },
    );
  }
  let content: unknown;
  try {
    content = JSON.parse(text);
  } catch (err) {
    throw new FarmError(
      "INVALID_ARGUMENT",
      `the tracker's state file ${path} is not JSON (${(err as Error).message}); the tracker replaces it atomically, so something else damaged it: look at it, repair it, or ${aside}`,
      { cause: err },
    );
  }
  if (typeof content !== "object" || content === null || Array.isArray(content) || typeof (content as { version?: unknown }).version !== "number") {
    throw new FarmError(
      "INVALID_ARGUMENT",
      `${path} is not a tracker state file (no "version"); give --state-dir a directory of the tracker's own, or ${aside}`,
    );
  }
  const { version, ...rest } = content as { version: number } & Record<string, unknown>;
  if (version > STATE_VERSION) {
    throw new FarmError(
      "INVALID_ARGUMENT",
      `the tracker's state file ${path} is version ${version}, written by a newer tracker; this one reads version ${STATE_VERSION}: run the newer tracker, or ${aside}`,
    );
  }
  if (version !== STATE_VERSION)
    throw new FarmError("INVALID_ARGUMENT", `the tracker's state file ${path} has version ${version}, which no tracker writes; ${aside}`);
  try {
    return opts.parse(rest);
  } catch (err) {
    throw new FarmError("INVALID_ARGUMENT", `the tracker's state file ${path} is damaged: ${(err as Error).message}; repair it, or ${aside}`, { cause: err });
  }
}

/** Whether the process that named a temporary file `.<name>.<pid>.tmp` still runs (it may be writing). */
function alive(tmp: string): boolean {
  const pid = Number(/\.(\d+)\.tmp$/.exec(tmp)?.[1]);
  if (!pid || pid === process.pid) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === "EPERM";
  }
}
