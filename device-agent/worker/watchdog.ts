/**
 * Call watchdog: a kernel that hangs blocks the worker's only JavaScript
 * thread, so the deadline is watched from a second thread. The main thread
 * arms it with a plain store into shared memory (no syscall per call); when a
 * deadline passes, the watchdog writes a marker line the agent recognises on
 * stderr and kills the process.
 */
import { Worker } from "node:worker_threads";
import { TIMEOUT_MARKER } from "../common/worker-spawn.ts";

const POLL_MS = 20;
/** Room for what ran past what (ops/calls.ts says the limit, where it came from and how to change it). */
const LABEL_BYTES = 1024;

const WATCHER = `
const { workerData } = require("node:worker_threads");
const { writeSync } = require("node:fs");
const deadline = new Float64Array(workerData.shared, 0, 1);
const flag = new Int32Array(workerData.shared, 8, 1);
const label = new Uint8Array(workerData.shared, 16);
for (;;) {
  Atomics.wait(flag, 0, 0, ${POLL_MS});
  const d = deadline[0];
  if (d > 0 && Date.now() > d) {
    const end = label.indexOf(0);
    const what = Buffer.from(label.subarray(0, end < 0 ? label.length : end)).toString();
    writeSync(2, "\\n${TIMEOUT_MARKER} " + what + "\\n");
    process.kill(process.pid, "SIGKILL");
  }
}
`;

export class Watchdog {
  private readonly shared = new SharedArrayBuffer(16 + LABEL_BYTES);
  private readonly deadline = new Float64Array(this.shared, 0, 1);
  private readonly label = new Uint8Array(this.shared, 16);
  private readonly thread: Worker;

  constructor() {
    this.thread = new Worker(WATCHER, { eval: true, workerData: { shared: this.shared } });
    this.thread.unref();
  }

  /** Arms the deadline; `what` says what ran past it ("call vadd ran past its 5000 ms timeout …"). */
  arm(timeoutMs: number, what: string): void {
    const bytes = Buffer.from(what).subarray(0, LABEL_BYTES - 1);
    this.label.fill(0);
    this.label.set(bytes);
    this.deadline[0] = Date.now() + timeoutMs;
  }

  disarm(): void {
    this.deadline[0] = 0;
  }

  async stop(): Promise<void> {
    await this.thread.terminate();
  }
}
