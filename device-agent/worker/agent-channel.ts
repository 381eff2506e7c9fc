/**
 * The worker's end of its channel to the agent (worker.proto): messages from
 * the agent on fd 3, sockets from it on fd 5 (handle-passing.ts), messages to
 * it on fd 4.
 *
 * A message to the agent is written with a blocking write before tell()
 * returns: once the worker said it is about to load native code, the words
 * are in the kernel's buffer, where that code can no longer take them back.
 */
import { writeSync } from "node:fs";
import { Socket, createServer, type Server } from "node:net";
import { type FarmError, WORKER_MESSAGE_MAX_BYTES, decodeToWorker, encodeToAgent, type AgentToWorker__Output, type WorkerToAgent } from "../../protos/index.ts";
import { LaneSocket, framed } from "../../runtime/index.ts";
import { receiveDescriptor } from "../common/handle-passing.ts";

/** The worker's descriptors of the channel, as the agent lays them out (device-agent/agent/worker-channel.ts). */
const FROM_AGENT_FD = 3;
const TO_AGENT_FD = 4;
const HANDLES_FD = 5;

/** A message from the agent, with the socket it announced (a lane) or the server (a standby lane). */
export type FromAgent = { msg: AgentToWorker__Output; socket?: Socket; server?: Server };

export class AgentChannel {
  private readonly lane: LaneSocket;

  constructor(onMessage: (m: FromAgent) => void, onClose: () => void) {
    this.lane = new LaneSocket(new Socket({ fd: FROM_AGENT_FD, readable: true, writable: false }), "the agent's channel", WORKER_MESSAGE_MAX_BYTES);
    this.lane.onClose(onClose);
    this.lane.onFrame((frame) => {
      let msg: AgentToWorker__Output;
      try {
        msg = decodeToWorker(frame);
      } catch (err) {
        // Our own agent: a frame it cannot have meant is a bug there; this worker cannot go on in step with it.
        console.error(`kfarm session worker: ${(err as FarmError).message}`);
        process.exit(70);
      }
      // Every socket the agent sent is taken, even one the worker then drops: the next message's is behind it.
      if (msg.msg === "lane") onMessage({ msg, socket: new Socket({ fd: receiveDescriptor(HANDLES_FD), readable: true, writable: true }) });
      else if (msg.msg === "standby") onMessage({ msg, server: createServer().listen({ fd: receiveDescriptor(HANDLES_FD) }) });
      else onMessage({ msg });
    });
  }

  /** Writes `msg` to the agent, blocking until it is in the channel. */
  tell(msg: WorkerToAgent): void {
    const bytes = framed(encodeToAgent(msg));
    let at = 0;
    while (at < bytes.length) at += writeSync(TO_AGENT_FD, bytes, at);
  }
}
