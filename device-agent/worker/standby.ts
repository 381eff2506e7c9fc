/**
 * A worker's standby lane (docs/architecture.md, "Lanes"): a port of its own
 * on the agent's direct-lane interface, opened by the agent once the worker
 * is ready and handed over listening, before any request. The agent reports
 * it with the board's readiness; the grant names it (Grant.worker_address),
 * and the host of the session this worker takes connects straight here: no
 * process but this one touches the lane, not even for the handshake. The
 * worker checks the ticket itself: alone, by the tracker's signature
 * (`claim`: signed for this worker, not expired, not used), so that the
 * host's hello is all it needs; or, where it cannot (no ticket key yet, no
 * folder ready), against its assignment, which may arrive just after the
 * host (device-agent/common/tickets.ts waits for it).
 *
 * A host that reaches a worker busy with another session (a grant that named
 * a port whose worker moved on) is refused at once, and tries the agent's
 * data port next.
 */
import type { Server, Socket } from "node:net";
import { FarmError } from "../../protos/index.ts";
import { type Logger } from "../../runtime/index.ts";
import { Tickets, admitHost, type Claim } from "../common/tickets.ts";

export interface StandbyHooks {
  /** The session this worker serves now, if any. */
  serving(): string | undefined;
  /** The host of `sessionId` is here, admitted: its lane is this socket (with the bytes read past the hello). False: the session is over. */
  open(sessionId: string, socket: Socket, rest: Buffer): boolean;
  /** Takes a session by its ticket alone, before its assignment (Tickets.admit). */
  claim: Claim;
}

export class StandbyLane {
  /** The tickets of the sessions assigned to this worker, or taken by their tickets. */
  readonly tickets: Tickets;

  constructor(
    server: Server,
    private readonly hooks: StandbyHooks,
    private readonly log: Logger,
    trackerNow: () => number,
  ) {
    this.tickets = new Tickets(trackerNow);
    server.on("connection", (socket: Socket) => void this.accept(socket));
    server.on("error", (err) => log.warn({ err: err.message }, "the standby lane failed; hosts use the agent's data port"));
  }

  private accept(socket: Socket): Promise<void> {
    return admitHost(
      socket,
      this.tickets,
      "standby lane",
      this.log,
      (sessionId, lane) => {
        const { socket: raw, rest } = lane.detach();
        if (!this.hooks.open(sessionId, raw, rest)) throw new FarmError("NOT_FOUND", `session ${sessionId} is over`);
      },
      (sessionId) => {
        const serving = this.hooks.serving();
        return serving === undefined || serving === sessionId;
      },
      this.hooks.claim,
    );
  }
}
