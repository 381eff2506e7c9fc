/**
 * The agent's end of its channel to one session worker (worker.proto): the
 * worker's fd 3 carries the agent's messages, fd 4 the worker's, fd 5 the
 * sockets the agent hands over (handle-passing.ts). Not Node's IPC channel:
 * its parser runs in the agent and throws there on bytes a kernel wrote.
 *
 * Everything the worker writes goes through one bounded framing (LaneSocket,
 * at most WORKER_MESSAGE_MAX_BYTES a frame) and one validating decoder
 * (protos/worker-channel.ts). A frame that breaks either is reported once, as
 * a PROTOCOL_ERROR, and nothing more is read from that worker.
 */
import type { ChildProcess, StdioOptions } from "node:child_process";
import type { Server, Socket } from "node:net";
import {
  FarmError,
  WORKER_MESSAGE_MAX_BYTES,
  decodeToAgent,
  encodeToWorker,
  workerProtocolError,
  type AgentToWorker,
  type WorkerMessage,
} from "../../protos/index.ts";
import { LaneSocket, framed } from "../../runtime/index.ts";
import { descriptorOf, sendDescriptor } from "../common/handle-passing.ts";

/** A worker's stdio: no stdin, stdout and stderr to the agent, then fds 3, 4 and 5 (worker/agent-channel.ts). */
export const WORKER_STDIO: StdioOptions = ["ignore", "pipe", "pipe", "pipe", "pipe", "pipe"];

export interface WorkerChannelEvents {
  message(msg: WorkerMessage): void;
  /** The worker sent bytes that are no message of the contract (the first such; nothing is read after it). */
  broken(err: FarmError): void;
}

/** What the framing calls the channel in its errors. */
const CHANNEL = "a session worker's channel";

export class WorkerChannel {
  private readonly toWorker: Socket;
  private readonly handles: Socket;
  private readonly fromWorker: LaneSocket;
  private dead = false;
  /** Resolves when the worker's side is closed (it exited, or closed fd 4): every message it sent was read. */
  readonly ended: Promise<void>;

  constructor(child: ChildProcess, events: WorkerChannelEvents) {
    const [, , , toWorker, fromWorker, handles] = child.stdio as unknown as Socket[];
    this.toWorker = toWorker!;
    this.handles = handles!;
    // Errors on the agent's ends (EPIPE once the worker is gone) say nothing the exit does not.
    this.toWorker.on("error", () => {});
    this.handles.on("error", () => {});
    this.fromWorker = new LaneSocket(fromWorker!, CHANNEL, WORKER_MESSAGE_MAX_BYTES);
    this.ended = new Promise((resolve) => {
      this.fromWorker.onClose((err) => {
        // The framing's own refusal (a length over the limit), in the contract's words.
        if (err?.code === "PROTOCOL_ERROR") this.breach(workerProtocolError(err.message.slice(`${CHANNEL}: `.length)), events);
        resolve();
      });
    });
    this.fromWorker.onFrame((frame) => {
      if (this.dead) return;
      let msg: WorkerMessage;
      try {
        msg = decodeToAgent(frame);
      } catch (err) {
        this.breach(FarmError.from(err), events);
        return;
      }
      events.message(msg);
    });
  }

  private breach(err: FarmError, events: WorkerChannelEvents): void {
    if (this.dead) return;
    this.dead = true;
    events.broken(err);
  }

  /** Nothing more from this worker is read (it is being killed). */
  stop(): void {
    this.dead = true;
  }

  /** Resolves once everything sent so far has left the agent for the worker (or the channel is gone). */
  drained(): Promise<void> {
    const out = this.toWorker;
    if (out.destroyed || out.writableLength === 0) return Promise.resolve();
    return new Promise((resolve) => {
      const done = () => {
        out.off("drain", done);
        out.off("close", done);
        resolve();
      };
      out.on("drain", done);
      out.on("close", done);
    });
  }

  /**
   * Sends `msg`, with `handle` (a socket or listening server) passed first on
   * fd 5 when the message announces one. The agent's copy of the handle is
   * the caller's to close. False when the worker is gone.
   */
  send(msg: AgentToWorker, handle?: Socket | Server): boolean {
    if (this.toWorker.destroyed || this.toWorker.writableEnded) return false;
    if (handle) sendDescriptor(descriptorOf(this.handles), descriptorOf(handle));
    // Not waited on: the agent's messages are few and small, and a worker that stops reading them is killed by its timeouts.
    this.toWorker.write(framed(encodeToWorker(msg)));
    return true;
  }
}
