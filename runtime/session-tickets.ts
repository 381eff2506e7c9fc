/**
 * Session tickets the tracker signs and a worker checks alone
 * (docs/architecture.md, "Tickets"). A ticket is
 * `base64url(SessionTicket) "." base64url(Ed25519 signature)`: the tracker
 * signs each grant's with a key pair it makes at start, and gives agents the
 * public key as they register; an agent gives it to its workers. A worker at
 * its standby lane then admits a session's host by the hello alone, before
 * the assignment has travelled tracker → agent → worker, and the agent
 * learns of the session in parallel. A worker can verify a ticket but not
 * make one: it holds no secret, as a process that runs a tenant's code must
 * not (docs/security.md).
 *
 * What this module checks is what the ticket says (signed by this tracker,
 * for this session, this worker, a direct lane, not expired). That a ticket
 * opens one lane once is the door's to keep (device-agent/common/tickets.ts).
 */
import { createPublicKey, generateKeyPairSync, randomBytes, sign, verify, type KeyObject } from "node:crypto";
import { FarmError, MAX_TICKET_CHARS, decodeSessionTicket, encodeSessionTicket, type SessionTicketFields } from "../protos/index.ts";

/** A ticket's shape as text: a base64url payload, ".", the base64url of a 64-byte Ed25519 signature (86 characters). */
export const TICKET_SOURCE = "[A-Za-z0-9_-]+\\.[A-Za-z0-9_-]{86}";

/** An Ed25519 public key's raw bytes (Registered.ticket_key). */
export const TICKET_KEY_BYTES = 32;
const NONCE_BYTES = 16;

export type TicketClaims = Omit<SessionTicketFields, "nonce" | "issued_ms">;

/** The tracker's half: one key pair per tracker process (a restarted tracker's agents register again and get the new key). */
export class TicketSigner {
  private readonly privateKey: KeyObject;
  /** The public key's raw 32 bytes, for Registered. */
  readonly publicKey: Uint8Array;

  constructor() {
    const { privateKey, publicKey } = generateKeyPairSync("ed25519");
    this.privateKey = privateKey;
    this.publicKey = Buffer.from(publicKey.export({ format: "jwk" }).x!, "base64url");
    // The first signature pays for the codec's and Ed25519's first use: here, not on the first grant.
    sign(
      null,
      encodeSessionTicket({
        session_id: "warm",
        agent_id: "",
        board_name: "",
        worker_id: "",
        route: "direct",
        expires_ms: 0,
        session_timeout_ms: 0,
        issued_ms: 0,
        nonce: Buffer.alloc(0),
      }),
      privateKey,
    );
  }

  /** A ticket for `claims`, issued now by this process's clock (the clock Registered.now_ms reports). */
  issue(claims: TicketClaims, now = Date.now()): string {
    const payload = encodeSessionTicket({ ...claims, issued_ms: now, nonce: randomBytes(NONCE_BYTES) });
    const signature = sign(null, payload, this.privateKey);
    return `${Buffer.from(payload).toString("base64url")}.${signature.toString("base64url")}`;
  }
}

/** A public key from Registered.ticket_key's raw bytes; INVALID_ARGUMENT for anything but 32 bytes. */
export function ticketKey(raw: Uint8Array): KeyObject {
  if (raw.byteLength !== TICKET_KEY_BYTES)
    throw new FarmError("INVALID_ARGUMENT", `a ticket key is ${TICKET_KEY_BYTES} bytes (Ed25519), got ${raw.byteLength}`);
  return createPublicKey({ key: { kty: "OKP", crv: "Ed25519", x: Buffer.from(raw).toString("base64url") }, format: "jwk" });
}

/** What a door expects of a ticket. */
export interface TicketExpectation {
  key: KeyObject;
  boardName: string;
  workerId: string;
}

/**
 * The claims of `ticket` if the tracker whose key this is signed it for
 * `sessionId` on this board, opening this worker; PERMISSION_DENIED naming
 * what is wrong otherwise. No clock is read here: `expiredFor` says whether
 * a checked ticket is past its time (a door judges by the tracker's clock).
 */
export function checkTicket(ticket: string, sessionId: string, expect: TicketExpectation): SessionTicketFields {
  const denied = (why: string) => new FarmError("PERMISSION_DENIED", `the ticket for session ${sessionId} ${why}`);
  const parts = split(ticket);
  if (!parts) throw denied("is not a ticket this farm's tracker signs");
  const { payload, signature } = parts;
  if (!verify(null, payload, expect.key, signature)) throw denied("does not carry this farm's tracker's signature (forged, changed, or from another tracker)");
  let claims: SessionTicketFields;
  try {
    claims = decodeSessionTicket(payload);
  } catch (err) {
    throw denied(`is signed but does not decode (${(err as Error).message})`);
  }
  if (claims.session_id !== sessionId) throw denied(`was issued for session ${claims.session_id}`);
  if (!claims.worker_id || claims.worker_id !== expect.workerId)
    throw denied("opens another worker's standby lane, not this one (the grant named that worker)");
  if (claims.board_name !== expect.boardName) throw denied(`opens board ${claims.board_name}, not ${expect.boardName}`);
  if (claims.route !== "direct" && claims.route !== "auto") throw denied(`travels on the ${claims.route} route, not on a direct lane`);
  return claims;
}

/**
 * What `ticket` says, unchecked: for a door's own record of a ticket it has
 * admitted already (how long to remember it was used); undefined for one
 * that does not read.
 */
export function readClaims(ticket: string): SessionTicketFields | undefined {
  const parts = split(ticket);
  if (!parts) return undefined;
  try {
    return decodeSessionTicket(parts.payload);
  } catch {
    return undefined;
  }
}

/**
 * Signs and checks one ticket with a throwaway key: a worker runs this while
 * it is idle, so that its first host's ticket does not pay for the first
 * use of the ticket's codec and of Ed25519 (bench/ab/phases.ts).
 */
export function warmTickets(): void {
  const signer = new TicketSigner();
  const ticket = signer.issue({
    session_id: "warm",
    agent_id: "",
    board_name: "warm",
    worker_id: "warm",
    route: "direct",
    expires_ms: 0,
    session_timeout_ms: 0,
  });
  checkTicket(ticket, "warm", { key: ticketKey(signer.publicKey), boardName: "warm", workerId: "warm" });
  readClaims(ticket);
}

/** How long ago `claims` expired by the tracker's clock `trackerNow`; 0: it has not. */
export function expiredFor(claims: SessionTicketFields, trackerNow: number): number {
  return Math.max(0, Math.floor(trackerNow - claims.expires_ms));
}

/** A ticket's payload and signature, undecoded; undefined for a string of another shape (or past MAX_TICKET_CHARS). */
function split(ticket: string): { payload: Buffer; signature: Buffer } | undefined {
  const dot = ticket.indexOf(".");
  if (dot < 0 || ticket.length > MAX_TICKET_CHARS) return undefined;
  return { payload: Buffer.from(ticket.slice(0, dot), "base64url"), signature: Buffer.from(ticket.slice(dot + 1), "base64url") };
}
