/**
 * Who is calling, and may they: the tracker's one authorization point.
 *
 * Without a tokens file the farm is open (loopback, or `--insecure`):
 * every caller is "anonymous" and may do everything, as before. With one,
 * every call carries a token (runtime/credentials.ts puts it in the
 * `authorization` metadata). The gRPC port's gate (tracker/call-gate.ts)
 * asks this module from each call's metadata before any body is read, and
 * each handler asks again for what its request needs:
 *
 * | door                 | who                        | checked here                          |
 * |----------------------|----------------------------|---------------------------------------|
 * | Session (request)    | client                     | key, priority cap, session timeout cap |
 * | Release; data port hello (host) | the client granted the session | + the session ticket (constant time) |
 * | ServeSession; data port hello (worker) | the board's agent, for its worker | the session ticket only (no token: the stream is the session's, not the agent's) |
 * | agent's direct lane  | whoever holds the ticket   | checked by the agent (device-agent/agent/lanes.ts), single use |
 * | Attach               | agent                      | its name is the token's, its boards' keys |
 * | BoardCommand, Tokens | operator                   |                                       |
 * | Summary              | any valid token            |                                       |
 * | HTTP (live view, /metrics) | operator, unless `--public-http` |                       |
 *
 * Every refusal is audited and answered UNAUTHENTICATED (no valid token) or
 * PERMISSION_DENIED (a valid token that may not do this), naming what is
 * missing. Whatever a token holds open — a waiting request, a session, an
 * agent's Attach stream, a live-view socket — registers with `hold()`, and
 * ends with the reason when the token is revoked, deleted or expires.
 */
import { timingSafeEqual } from "node:crypto";
import { FarmError } from "../protos/index.ts";
import { bearerToken, type Logger } from "../runtime/index.ts";
import type { Metadata } from "@grpc/grpc-js";
import type { SessionRequest__Output } from "../protos/index.ts";
import type { AuditLog } from "./audit.ts";
import { keyAllowed, TokenStore, type Identity, type TokenKind } from "./tokens.ts";

/** The caller of one call: a verified token's identity, or anonymous on an open farm. */
export interface Caller {
  /** The token's name, or "anonymous". */
  readonly name: string;
  readonly kind: TokenKind | "anonymous";
  /** Absent on an open farm. */
  readonly identity?: Identity;
  readonly peer: string;
}

/** Compares two secrets in constant time (length leaks, content does not). */
export function sameSecret(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

export class Authorizer {
  readonly store: TokenStore | undefined;
  private readonly holds = new Map<string, Set<(err: FarmError) => void>>();

  constructor(
    tokensFile: string | undefined,
    private readonly audit: AuditLog,
    private readonly log: Logger,
  ) {
    this.store = tokensFile
      ? new TokenStore(
          tokensFile,
          (identity, why) => this.lost(identity, why),
          (err) => this.log.error({ file: tokensFile, code: err.code }, `tokens file not reloaded, the last good one stays in force: ${err.message}`),
        )
      : undefined;
  }

  get enabled(): boolean {
    return this.store !== undefined;
  }

  close(): void {
    this.store?.close();
  }

  /** Authenticates the call's token; UNAUTHENTICATED (audited) when it has none or a bad one. */
  caller(metadata: Metadata, peer: string, doing: string): Caller {
    return this.identify(
      () => bearerToken(metadata),
      `this farm needs a token to ${doing}: pass --token (or set KFARM_TOKEN); an operator makes one with \`kfarm token create\``,
      peer,
      doing,
    );
  }

  /** Authenticates an HTTP request's token; `token()` reads it (and throws on a malformed one). */
  callerOfToken(
    token: () => string | undefined,
    peer: string,
    doing: string,
    missing = `this farm needs an operator token to ${doing}: send "Authorization: Bearer <token>" (or ?token= in a browser)`,
  ): Caller {
    return this.identify(token, missing, peer, doing);
  }

  /** `token()` may throw (a malformed header): that is a refusal too, audited like the rest. */
  private identify(token: () => string | undefined, missing: string, peer: string, doing: string): Caller {
    if (!this.store) return { name: "anonymous", kind: "anonymous", peer };
    try {
      const t = token();
      if (!t) throw new FarmError("UNAUTHENTICATED", missing);
      const identity = this.store.verify(t);
      return { name: identity.name, kind: identity.kind, identity, peer };
    } catch (err) {
      throw this.refuse(FarmError.from(err, "UNAUTHENTICATED"), { name: "unknown", kind: "anonymous", peer }, doing);
    }
  }

  /** PERMISSION_DENIED unless the caller's token is of one of `kinds` (an open farm allows all). */
  requireKind(caller: Caller, kinds: readonly TokenKind[], doing: string): void {
    if (caller.kind === "anonymous" || kinds.includes(caller.kind)) return;
    throw this.refuse(
      new FarmError(
        "PERMISSION_DENIED",
        `token '${caller.name}' is a ${caller.kind} token and may not ${doing}; that needs ${kinds.map((k) => `a${k === "agent" || k === "operator" ? "n" : ""} ${k}`).join(" or ")} token`,
      ),
      caller,
      doing,
    );
  }

  /** PERMISSION_DENIED unless the caller's token covers `key`. */
  requireKey(caller: Caller, key: string, doing: string): void {
    if (!caller.identity || keyAllowed(caller.identity.keys, key)) return;
    throw this.refuse(
      new FarmError("PERMISSION_DENIED", `token '${caller.name}' may not ${doing} '${key}' (its keys: ${caller.identity.keys.join(", ")})`),
      caller,
      doing,
    );
  }

  /**
   * A session request as the caller may make it: the client id is the
   * token's name (fairness is per identity, not per claimed string), the
   * priority within the token's cap, and a session timeout that is never
   * unlimited — 0 asks for the longest allowed.
   */
  sessionRequest(caller: Caller, req: SessionRequest__Output, maxSessionTimeoutMs: number): SessionRequest__Output {
    this.requireKind(caller, ["client"], "request sessions");
    if (req.key) this.requireKey(caller, req.key, "request key");
    const id = caller.identity;
    if (id?.maxPriority != null && req.priority > id.maxPriority) {
      throw this.refuse(
        new FarmError("PERMISSION_DENIED", `token '${caller.name}' may request priority ${id.maxPriority} at most, not ${req.priority}`),
        caller,
        "request sessions",
      );
    }
    const cap = Math.min(maxSessionTimeoutMs, id?.maxSessionTimeoutMs ?? Infinity);
    if (req.session_timeout_ms > cap) {
      const whose = id?.maxSessionTimeoutMs != null && id.maxSessionTimeoutMs < maxSessionTimeoutMs ? `token '${caller.name}'` : "this tracker";
      throw this.refuse(
        new FarmError(
          whose === "this tracker" ? "INVALID_ARGUMENT" : "PERMISSION_DENIED",
          `session timeout ${req.session_timeout_ms} ms is above the ${cap} ms that ${whose} allows; ask for less (0 asks for the most allowed)`,
        ),
        caller,
        "request sessions",
      );
    }
    return {
      ...req,
      client_id: caller.identity ? caller.name : req.client_id,
      session_timeout_ms: req.session_timeout_ms || cap,
    };
  }

  /** Audits a refusal and returns it, to throw. */
  refuse(err: FarmError, caller: Caller, doing: string, extra: Record<string, unknown> = {}): FarmError {
    // Logged as audited: the first of its caller and reason a minute at warn, the repeats of a flood at debug (tracker/refusal-tally.ts).
    const first = this.audit.record({
      event: "refused",
      who: caller.name,
      kind: caller.kind,
      peer: caller.peer,
      doing,
      code: err.code,
      reason: err.message,
      ...extra,
    });
    this.log[first ? "warn" : "debug"]({ who: caller.name, peer: caller.peer, code: err.code }, `refused: ${err.message}`);
    return err;
  }

  /**
   * Registers something the caller's token holds open; `end` runs with the
   * reason if the token stops being valid. Returns the release function.
   */
  hold(caller: Caller, end: (err: FarmError) => void): () => void {
    const id = caller.identity?.id;
    if (!id) return () => {};
    let set = this.holds.get(id);
    if (!set) this.holds.set(id, (set = new Set()));
    set.add(end);
    return () => {
      set.delete(end);
      if (set.size === 0 && this.holds.get(id) === set) this.holds.delete(id);
    };
  }

  private lost(identity: Identity, why: string): void {
    const held = this.holds.get(identity.id);
    this.holds.delete(identity.id);
    this.audit.record({ event: "token_lost", who: identity.name, kind: identity.kind, reason: why, ended: held?.size ?? 0 });
    this.log.warn({ token: identity.name, ended: held?.size ?? 0 }, why);
    const err = new FarmError("UNAUTHENTICATED", `${why}; ask an operator for a new token`);
    for (const end of held ?? []) end(err);
  }
}
