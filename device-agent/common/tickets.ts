/**
 * Who may open a session's direct lane: the tickets of the sessions assigned
 * here, checked in constant time, each opening one lane once. The agent holds
 * one set (its data port, device-agent/agent/lanes.ts) and each worker another (its
 * standby lane, device-agent/worker/standby.ts).
 *
 * A worker need not wait for its assignment: a door given a `claim` lets it
 * take a session by its ticket alone (signed by the tracker for this very
 * worker: runtime/session-tickets.ts), and the agent learns of the session
 * in parallel. Without a claim (the agent's port, a worker with no ticket
 * key or no folder ready), or when the claim refuses the ticket (a tracker
 * key this worker has not heard of yet), the grant and the assignment race,
 * so a host that arrives before its session's assignment is waited for,
 * briefly; the claim's refusal is the answer if none comes.
 *
 * Replay: a ticket opens one lane once. A door remembers each session whose
 * ticket it admitted until that ticket expires (by the tracker's clock,
 * `trackerNow`), so that a ticket shown again after its session ended opens
 * nothing.
 */
import { timingSafeEqual } from "node:crypto";
import type { Socket } from "node:net";
import { FarmError } from "../../protos/index.ts";
import { LaneSocket, acceptHello, readClaims, refuse, traceGrant, type Logger } from "../../runtime/index.ts";
import type { LaneHello__Output } from "../../protos/index.ts";

/**
 * The grant reaches the host and the assignment the agent at about the same
 * time; a host this much faster than its session's assignment is waited for.
 * Longer, and the session id is not one of ours.
 */
export const ARRIVAL_WAIT_MS = 1000;

interface Expected {
  ticket: Buffer;
  route: string;
  /** A lane opened with it: the ticket is used. */
  taken: boolean;
}

/**
 * A door's way to let its worker take a session by the ticket alone: true
 * when it did (the session is then expected, its ticket this one), false
 * when it cannot here (wait for the assignment); throws the FarmError that
 * says why the ticket opens nothing.
 */
export type Claim = (hello: LaneHello__Output) => boolean;

export class Tickets {
  private readonly expected = new Map<string, Expected>();
  /** Hosts that arrived before their session's assignment: resolved by expect(). */
  private readonly early = new Map<string, Set<() => void>>();
  /** Sessions whose tickets opened their lanes here, until those tickets expire (tracker's clock). */
  private readonly spent = new Map<string, number>();

  /** `trackerNow`: the tracker's clock as this process reads it; undefined: none known (tickets are remembered until they expire by this clock). */
  constructor(private readonly trackerNow: () => number = Date.now) {}

  /** A session was assigned here: its ticket will open its lane. */
  expect(sessionId: string, ticket: string, route: string): void {
    this.expected.set(sessionId, { ticket: Buffer.from(ticket), route, taken: false });
    for (const arrived of this.early.get(sessionId) ?? []) arrived();
  }

  /** The session ended: its ticket opens nothing any more. */
  forget(sessionId: string): void {
    const e = this.expected.get(sessionId);
    this.expected.delete(sessionId);
    const now = this.trackerNow();
    for (const [id, until] of this.spent) if (until <= now) this.spent.delete(id);
    const expires = e?.taken ? readClaims(e.ticket.toString())?.expires_ms : undefined;
    if (expires !== undefined && expires > now) this.spent.set(sessionId, expires);
  }

  /** The ticket of a session whose lane nobody opened yet, now spent (the agent dials the relay with it); undefined otherwise. */
  take(sessionId: string): string | undefined {
    const e = this.expected.get(sessionId);
    if (!e || e.taken) return undefined;
    e.taken = true;
    return e.ticket.toString();
  }

  /**
   * A host's hello on a direct lane: resolves once its ticket is spent on it,
   * or throws the FarmError to refuse it with. `wait`: whether a session not
   * assigned yet may still be (false: refuse it at once).
   */
  async admit(hello: LaneHello__Output, wait = true, claim?: Claim): Promise<void> {
    const sessionId = hello.session_id;
    if (hello.role !== "host") throw new FarmError("PROTOCOL_ERROR", "only hosts connect to a direct lane");
    // Past its ticket's expiry the tombstone is stale: the ticket's own time refuses it (the claim), or no assignment comes.
    if ((this.spent.get(sessionId) ?? 0) > this.trackerNow())
      throw new FarmError("PERMISSION_DENIED", `session ${sessionId} had its lane here already; its ticket is used`);
    let expected = this.expected.get(sessionId);
    let refusal: FarmError | undefined;
    if (!expected && claim) {
      try {
        if (claim(hello)) expected = this.expected.get(sessionId);
      } catch (err) {
        refusal = FarmError.from(err);
      }
    }
    expected ??= wait ? await this.arrival(sessionId) : undefined;
    if (!expected) throw refusal ?? new FarmError("NOT_FOUND", `no session "${sessionId}" here (it ended, never was, or went to another worker)`);
    if (expected.route !== "direct" && expected.route !== "auto")
      throw new FarmError("PERMISSION_DENIED", `session ${sessionId} travels on the ${expected.route} route, not on a direct lane`);
    const given = Buffer.from(hello.ticket);
    if (given.length !== expected.ticket.length || !timingSafeEqual(given, expected.ticket))
      throw new FarmError("PERMISSION_DENIED", `wrong ticket for session ${sessionId}`);
    if (expected.taken) throw new FarmError("PERMISSION_DENIED", `session ${sessionId} already has its lane; its ticket is used`);
    expected.taken = true;
  }

  /** Waits (ARRIVAL_WAIT_MS at most) for a session's assignment that is on its way. */
  private arrival(sessionId: string): Promise<Expected | undefined> {
    return new Promise((resolve) => {
      const waiters = this.early.get(sessionId) ?? new Set<() => void>();
      this.early.set(sessionId, waiters);
      const done = () => {
        clearTimeout(timer);
        waiters.delete(done);
        if (waiters.size === 0) this.early.delete(sessionId);
        resolve(this.expected.get(sessionId));
      };
      const timer = setTimeout(done, ARRIVAL_WAIT_MS);
      waiters.add(done);
    });
  }
}

/**
 * A host's connection at a direct-lane door (`door`: "direct lane", "standby
 * lane"): its hello is read and its ticket admitted, then `open` takes the
 * lane. A refusal, or an error `open` throws, is logged and answered to the
 * host, and the connection closed. `wait(sessionId)`: whether an assignment
 * not here yet may still come (Tickets.admit).
 */
export async function admitHost(
  socket: Socket,
  tickets: Tickets,
  door: string,
  log: Logger,
  open: (sessionId: string, lane: LaneSocket) => Promise<void> | void,
  wait: (sessionId: string) => boolean = () => true,
  claim?: Claim,
): Promise<void> {
  const peer = `${socket.remoteAddress}:${socket.remotePort}`;
  const lane = new LaneSocket(socket, `the ${door} from ${peer}`);
  let sessionId = "";
  try {
    const hello = await acceptHello(lane);
    traceGrant(`${door}: hello read`);
    sessionId = hello.session_id;
    await tickets.admit(hello, wait(sessionId), claim);
    traceGrant(`${door}: admitted`);
    await open(sessionId, lane);
  } catch (err) {
    const e = FarmError.from(err);
    log.info({ peer, session: sessionId || undefined, code: e.code }, `${door} refused: ${e.message}`);
    refuse(lane, e);
  }
}
