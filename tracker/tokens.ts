/**
 * Tokens: who may use the farm, and for what.
 *
 * A token is `kf1.<id>.<secret>`: the id finds its record, the secret is
 * checked against a salted SHA-256 of it in constant time. The secret is
 * 32 random bytes, so a fast hash is enough (no password stretching: nothing
 * here is guessable), and a check costs microseconds per call. The tokens
 * file holds records only — never a secret — and is the tracker's own: it
 * refuses to start on a file that others may read or write (like ssh).
 *
 * | kind       | may                                                              |
 * |------------|------------------------------------------------------------------|
 * | `agent`    | attach as the agent named like the token, boards of its keys     |
 * | `client`   | request sessions of its keys, up to its priority and timeout caps |
 * | `operator` | board commands, token administration, the protected HTTP side    |
 *
 * Every kind may read the summary. The file is read again whenever it
 * changes (`kfarm token revoke` on the tracker's machine takes effect
 * within TOKEN_RELOAD_MS), and the tracker ends what a revoked or expired
 * token holds open (tracker/auth.ts).
 */
import { createHash, randomBytes, timingSafeEqual } from "node:crypto";
import { readFileSync, statSync, unwatchFile, watchFile } from "node:fs";
import { FarmError, TOKEN_KIND } from "../protos/index.ts";
import { checkTokenShape } from "../runtime/index.ts";
import { writeFileAtomicSync } from "./atomic-file.ts";

/** Declared once, as host.proto's TokenKind (protos/enums.ts). */
export const TOKEN_KINDS = TOKEN_KIND.names;
export type TokenKind = (typeof TOKEN_KINDS)[number];

/** How often the tracker looks at the tokens file (and at expiry dates). */
export const TOKEN_RELOAD_MS = 250;
const TOKEN_PREFIX = "kf1";
const NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$/;
const KEY = /^[A-Za-z0-9*][A-Za-z0-9._*-]{0,62}$/;

/** One token as the file keeps it: what it may do, and a salted hash of its secret. */
export interface TokenRecord {
  id: string;
  name: string;
  kind: TokenKind;
  /** Keys it may request (client) or register boards for (agent); "*" for every key. Unused by operators. */
  keys: string[];
  /** Highest priority a client may ask for; null: no cap. */
  maxPriority: number | null;
  /** Longest session a client may ask for; null: the tracker's cap. */
  maxSessionTimeoutMs: number | null;
  createdAtMs: number;
  /** null: never. */
  expiresAtMs: number | null;
  revokedAtMs: number | null;
  salt: string;
  hash: string;
}

/** What a verified token says about its bearer: everything but the hash. */
export type Identity = Omit<TokenRecord, "salt" | "hash">;

export interface TokenSpec {
  name: string;
  kind: TokenKind;
  keys?: string[];
  maxPriority?: number | null;
  maxSessionTimeoutMs?: number | null;
  expiresAtMs?: number | null;
}

interface TokenFileContents {
  version: 1;
  tokens: TokenRecord[];
}

function hashSecret(salt: string, secret: string): string {
  return createHash("sha256").update(salt).update(secret).digest("hex");
}

/** Whether `key` is among `keys` ("*" matches all; a trailing "*" matches a prefix: "h100-*"). */
export function keyAllowed(keys: readonly string[], key: string): boolean {
  return keys.some((k) => k === "*" || k === key || (k.endsWith("*") && key.startsWith(k.slice(0, -1))));
}

export function checkTokenSpec(spec: TokenSpec): void {
  if (!TOKEN_KINDS.includes(spec.kind))
    throw new FarmError("INVALID_ARGUMENT", `token kind must be one of ${TOKEN_KINDS.join(", ")}, got ${JSON.stringify(spec.kind)}`);
  if (!NAME.test(spec.name))
    throw new FarmError(
      "INVALID_ARGUMENT",
      `token name ${JSON.stringify(spec.name)} must be 1-63 letters, digits, '.', '_' or '-', starting with a letter or digit`,
    );
  const keys = spec.keys ?? [];
  if (spec.kind !== "operator" && keys.length === 0)
    throw new FarmError("INVALID_ARGUMENT", `a ${spec.kind} token needs the keys it may use (--keys h100,cpu, or --keys '*' for every key)`);
  for (const k of keys)
    if (!KEY.test(k))
      throw new FarmError("INVALID_ARGUMENT", `key ${JSON.stringify(k)} is not a board key (letters, digits, '.', '_', '-', and '*' as a wildcard)`);
  if (spec.maxPriority != null && !Number.isInteger(spec.maxPriority))
    throw new FarmError("INVALID_ARGUMENT", `maxPriority must be an integer, got ${spec.maxPriority}`);
  if (spec.maxSessionTimeoutMs != null && !(Number.isInteger(spec.maxSessionTimeoutMs) && spec.maxSessionTimeoutMs > 0)) {
    throw new FarmError("INVALID_ARGUMENT", `maxSessionTimeoutMs must be a positive number of milliseconds, got ${spec.maxSessionTimeoutMs}`);
  }
  if (spec.expiresAtMs != null && !(Number.isFinite(spec.expiresAtMs) && spec.expiresAtMs > Date.now())) {
    throw new FarmError("INVALID_ARGUMENT", `a token's expiry must be in the future, got ${new Date(spec.expiresAtMs).toISOString()}`);
  }
}

/**
 * The tokens file: read, check, change (atomically, tracker/atomic-file.ts;
 * mode 0600). `kfarm token` uses it directly on the tracker's
 * machine; the tracker uses it through TokenStore.
 */
export class TokenFile {
  constructor(readonly path: string) {}

  /** The records; a missing file is an empty one. Refuses a file others may read or write, or that someone else owns. */
  read(): TokenRecord[] {
    let text: string;
    try {
      const st = statSync(this.path);
      if ((st.mode & 0o077) !== 0) {
        throw new FarmError(
          "PERMISSION_DENIED",
          `tokens file ${this.path} has mode ${(st.mode & 0o777).toString(8)}: others may read or change it; run \`chmod 600 ${this.path}\``,
        );
      }
      if (typeof process.getuid === "function" && st.uid !== process.getuid()) {
        throw new FarmError(
          "PERMISSION_DENIED",
          `tokens file ${this.path} belongs to uid ${st.uid}, not to this process (uid ${process.getuid()}); the tracker must own it`,
        );
      }
      text = readFileSync(this.path, "utf8");
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === "ENOENT") return [];
      throw FarmError.from(err);
    }
    let parsed: TokenFileContents;
    try {
      parsed = JSON.parse(text) as TokenFileContents;
    } catch (err) {
      throw new FarmError("INVALID_ARGUMENT", `tokens file ${this.path} is not JSON: ${(err as Error).message}`, { cause: err });
    }
    if (parsed?.version !== 1 || !Array.isArray(parsed.tokens))
      throw new FarmError("INVALID_ARGUMENT", `tokens file ${this.path} is not a kernelfarm tokens file (version 1)`);
    return parsed.tokens;
  }

  private write(tokens: TokenRecord[]): void {
    writeFileAtomicSync(this.path, `${JSON.stringify({ version: 1, tokens } satisfies TokenFileContents, null, 2)}\n`);
  }

  /** Adds a token; returns its record and the token itself, which exists nowhere else: print it once. */
  create(spec: TokenSpec): { record: Identity; token: string } {
    checkTokenSpec(spec);
    const tokens = this.read();
    if (tokens.some((t) => t.name === spec.name && t.revokedAtMs === null)) {
      throw new FarmError("INVALID_ARGUMENT", `a token named "${spec.name}" exists already; revoke it first or pick another name`);
    }
    const id = randomBytes(6).toString("hex");
    const secret = randomBytes(32).toString("base64url");
    const salt = randomBytes(16).toString("hex");
    const record: TokenRecord = {
      id,
      name: spec.name,
      kind: spec.kind,
      keys: spec.kind === "operator" ? [] : [...(spec.keys ?? [])],
      maxPriority: spec.maxPriority ?? null,
      maxSessionTimeoutMs: spec.maxSessionTimeoutMs ?? null,
      createdAtMs: Date.now(),
      expiresAtMs: spec.expiresAtMs ?? null,
      revokedAtMs: null,
      salt,
      hash: hashSecret(salt, secret),
    };
    this.write([...tokens, record]);
    return { record: publicPart(record), token: `${TOKEN_PREFIX}.${id}.${secret}` };
  }

  /** Revokes the live token named `name` (or with that id); returns it. */
  revoke(nameOrId: string): Identity {
    const tokens = this.read();
    const t = tokens.find((x) => (x.name === nameOrId || x.id === nameOrId) && x.revokedAtMs === null);
    if (!t) throw new FarmError("NOT_FOUND", `no live token named "${nameOrId}"; \`kfarm token list\` shows them`);
    t.revokedAtMs = Date.now();
    this.write(tokens);
    return publicPart(t);
  }

  list(): Identity[] {
    return this.read().map(publicPart);
  }
}

function publicPart(r: TokenRecord): Identity {
  const { salt: _salt, hash: _hash, ...rest } = r;
  return rest;
}

/** Splits a token into id and secret; anything else is UNAUTHENTICATED. */
function parseToken(token: string): { id: string; secret: string } {
  checkTokenShape(token);
  const parts = token.split(".");
  if (parts.length !== 3 || parts[0] !== TOKEN_PREFIX || !/^[0-9a-f]{12}$/.test(parts[1]!) || !/^[A-Za-z0-9_-]{43}$/.test(parts[2]!)) {
    throw new FarmError(
      "UNAUTHENTICATED",
      `malformed token: kernelfarm tokens look like ${TOKEN_PREFIX}.<12 hex>.<43 characters>, as \`kfarm token create\` prints them`,
    );
  }
  return { id: parts[1]!, secret: parts[2]! };
}

/**
 * The tracker's live view of the tokens file: verifies tokens, and tells
 * `onLost` which identities stopped being valid (revoked, expired, deleted)
 * since it last looked, so what they hold open can be ended.
 */
export class TokenStore {
  readonly file: TokenFile;
  private byId = new Map<string, TokenRecord>();
  private readonly timer: NodeJS.Timeout;
  private readonly reload = () => this.refresh();

  constructor(
    path: string,
    private readonly onLost: (identity: Identity, why: string) => void,
    private readonly onError: (err: FarmError) => void,
  ) {
    this.file = new TokenFile(path);
    // The first read's errors (mode, owner, JSON) stop the tracker's start.
    this.seen = this.stamp();
    this.byId = new Map(this.file.read().map((t) => [t.id, t]));
    watchFile(path, { interval: TOKEN_RELOAD_MS, persistent: false }, this.reload);
    // Expiry is a matter of the clock, not of the file.
    this.timer = setInterval(() => this.expire(), TOKEN_RELOAD_MS);
    this.timer.unref();
  }

  close(): void {
    unwatchFile(this.file.path, this.reload);
    clearInterval(this.timer);
  }

  /** Who holds `token`; UNAUTHENTICATED naming why not (unknown, revoked, expired, malformed). */
  verify(token: string): Identity {
    const { id, secret } = parseToken(token);
    // A token made a moment ago (`kfarm token create` then its first use) need not wait for the next poll.
    if (!this.byId.has(id) && this.fileChanged()) this.refresh();
    const record = this.byId.get(id);
    // The hash of an unknown id is still computed, so timing says nothing about which ids exist.
    const expected = Buffer.from(record?.hash ?? "0".repeat(64), "hex");
    const actual = Buffer.from(hashSecret(record?.salt ?? "", secret), "hex");
    if (!timingSafeEqual(expected, actual) || !record)
      throw new FarmError("UNAUTHENTICATED", "unknown token: the tracker has no such token (or its secret is wrong); ask an operator for one");
    if (record.revokedAtMs !== null)
      throw new FarmError("UNAUTHENTICATED", `token '${record.name}' was revoked at ${new Date(record.revokedAtMs).toISOString()}`);
    if (record.expiresAtMs !== null && record.expiresAtMs <= Date.now())
      throw new FarmError("UNAUTHENTICATED", `token '${record.name}' expired at ${new Date(record.expiresAtMs).toISOString()}`);
    return publicPart(record);
  }

  /** The file's mtime and size when last read. */
  private seen = "";

  private stamp(): string {
    const st = statSync(this.file.path, { throwIfNoEntry: false });
    return st ? `${st.mtimeMs}/${st.size}` : "";
  }

  private fileChanged(): boolean {
    return this.stamp() !== this.seen;
  }

  /** Re-reads the file; ids that were valid and no longer are go to onLost. */
  refresh(): void {
    let next: Map<string, TokenRecord>;
    try {
      this.seen = this.stamp();
      next = new Map(this.file.read().map((t) => [t.id, t]));
    } catch (err) {
      // Keep serving with what was last read: a half-edited file must not lock everyone out.
      this.onError(FarmError.from(err));
      return;
    }
    const before = this.byId;
    this.byId = next;
    for (const [id, old] of before) {
      if (old.revokedAtMs !== null) continue;
      const now = next.get(id);
      if (!now) this.onLost(publicPart(old), `token '${old.name}' was deleted from the tokens file`);
      else if (now.revokedAtMs !== null) this.onLost(publicPart(now), `token '${now.name}' was revoked`);
    }
  }

  private readonly expired = new Set<string>();
  private expire(): void {
    const now = Date.now();
    for (const t of this.byId.values()) {
      if (t.expiresAtMs !== null && t.expiresAtMs <= now && t.revokedAtMs === null && !this.expired.has(t.id)) {
        this.expired.add(t.id);
        this.onLost(publicPart(t), `token '${t.name}' expired`);
      }
    }
  }
}
