/**
 * `kfarm token create | list | revoke`: on the tokens file directly
 * (`--tokens FILE`, on the tracker's machine, as the tracker's user — how the
 * first operator token is made), or through a running tracker with an
 * operator token (`--tracker HOST:PORT --token …`; neither flag: the
 * tracker at $KFARM_TRACKER, else 127.0.0.1:9190). Either way the tracker
 * sees the change within a second; a new token is printed once and exists
 * nowhere else.
 */
import { type Command, InvalidArgumentError } from "commander";
import { FarmError } from "../protos/index.ts";
import { connectTracker } from "../host-sdk/index.ts";
import { TOKEN_KINDS, TokenFile, type Identity, type TokenKind } from "../tracker/index.ts";
import { TRACKER_DEFAULT_HELP, addClientSecurityFlags, connectOptionsOf, type ClientSecurityFlags } from "./security-flags.ts";

const UNITS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/** "90s", "15m", "12h", "30d" or plain milliseconds. */
export function parseDuration(value: string): number {
  const m = /^(\d+(?:\.\d+)?)(ms|s|m|h|d)?$/.exec(value.trim());
  if (!m || Number(m[1]) <= 0) throw new InvalidArgumentError(`${JSON.stringify(value)} is not a duration (e.g. 90s, 15m, 12h, 30d, or milliseconds)`);
  return Math.round(Number(m[1]) * UNITS[m[2] ?? "ms"]!);
}

type Where = ClientSecurityFlags & { tokens?: string; tracker?: string };

function where(cmd: Command): Command {
  return addClientSecurityFlags(cmd, "operator")
    .option("--tokens <file>", "the tracker's tokens file, changed directly (on the tracker's machine)")
    .option("--tracker <host:port>", `change tokens through this tracker, with an operator --token (neither flag: ${TRACKER_DEFAULT_HELP})`);
}

/** Runs `local` on the file or `remote` through the tracker, as the flags say. */
async function withTarget<T>(o: Where, local: (file: TokenFile) => T, remote: (client: Awaited<ReturnType<typeof connectTracker>>) => Promise<T>): Promise<T> {
  if (o.tokens && o.tracker)
    throw new FarmError(
      "INVALID_ARGUMENT",
      "kfarm token: give either --tokens FILE (on the tracker's machine) or --tracker HOST:PORT with an operator --token, not both",
    );
  if (o.tokens) return local(new TokenFile(o.tokens));
  const client = await connectTracker(o.tracker, connectOptionsOf(o, "kfarm token"));
  try {
    return await remote(client);
  } finally {
    client.close();
  }
}

interface TokenRow {
  id: string;
  name: string;
  kind: string;
  keys: string[];
  maxPriority: number | null;
  maxSessionTimeoutMs: number | null;
  createdAtMs: number;
  expiresAtMs: number | null;
  revokedAtMs: number | null;
}

function fromWire(t: {
  id: string;
  name: string;
  kind: string;
  keys: string[];
  has_max_priority: boolean;
  max_priority: number;
  max_session_timeout_ms: number;
  created_at_ms: number;
  expires_at_ms: number;
  revoked_at_ms: number;
}): TokenRow {
  return {
    id: t.id,
    name: t.name,
    kind: t.kind,
    keys: t.keys,
    maxPriority: t.has_max_priority ? t.max_priority : null,
    maxSessionTimeoutMs: t.max_session_timeout_ms || null,
    createdAtMs: t.created_at_ms,
    expiresAtMs: t.expires_at_ms || null,
    revokedAtMs: t.revoked_at_ms || null,
  };
}

function describe(t: TokenRow | Identity): string {
  const iso = (ms: number | null) => (ms ? new Date(ms).toISOString().replace(/\.\d+Z$/, "Z") : "-");
  const state = t.revokedAtMs ? `revoked ${iso(t.revokedAtMs)}` : t.expiresAtMs && t.expiresAtMs <= Date.now() ? `expired ${iso(t.expiresAtMs)}` : "live";
  const scope = t.kind === "operator" ? "" : ` keys=${t.keys.join(",")}`;
  const caps = `${t.maxPriority !== null ? ` max-priority=${t.maxPriority}` : ""}${t.maxSessionTimeoutMs !== null ? ` max-session-timeout=${t.maxSessionTimeoutMs}ms` : ""}`;
  return `${t.name.padEnd(20)} ${t.kind.padEnd(9)} ${state.padEnd(30)} expires ${iso(t.expiresAtMs)}${scope}${caps}  (id ${t.id})`;
}

export function addTokenCommand(program: Command): void {
  const token = program.command("token").description("tokens of a farm with --tokens: agent, client and operator tokens, each with a name and scopes");

  where(token.command("create").description("make a token and print it (once: it is stored only as a salted hash)"))
    .requiredOption("--name <name>", "who holds it: the client id for fairness, the agent's name, the operator's name in the audit log")
    .requiredOption("--kind <kind>", `one of ${TOKEN_KINDS.join(", ")}`)
    .option("--keys <keys>", "comma-separated keys it may use ('*': every key; 'h100-*': a prefix); agent and client tokens")
    .option("--max-priority <n>", "highest priority a client may ask for", (v) => {
      const n = Number(v);
      if (!Number.isInteger(n)) throw new InvalidArgumentError(`${JSON.stringify(v)} is not an integer`);
      return n;
    })
    .option("--max-session-timeout <duration>", "longest session a client may hold (e.g. 2h; default the tracker's cap)", parseDuration)
    .option("--expires <duration>", "stops working after this long (e.g. 30d; default never)", parseDuration)
    .action(async (o: Where & { name: string; kind: string; keys?: string; maxPriority?: number; maxSessionTimeout?: number; expires?: number }) => {
      if (!TOKEN_KINDS.includes(o.kind as TokenKind))
        throw new FarmError("INVALID_ARGUMENT", `--kind must be one of ${TOKEN_KINDS.join(", ")}, got ${JSON.stringify(o.kind)}`);
      const keys = o.keys
        ? o.keys
            .split(",")
            .map((k) => k.trim())
            .filter(Boolean)
        : [];
      const expiresAtMs = o.expires ? Date.now() + o.expires : null;
      const made = await withTarget(
        o,
        (file) =>
          file.create({
            name: o.name,
            kind: o.kind as TokenKind,
            keys,
            maxPriority: o.maxPriority ?? null,
            maxSessionTimeoutMs: o.maxSessionTimeout ?? null,
            expiresAtMs,
          }),
        async (client) => {
          const r = await client.tokens({
            action: "create",
            name: o.name,
            kind: o.kind as TokenKind,
            keys,
            has_max_priority: o.maxPriority !== undefined,
            max_priority: o.maxPriority ?? 0,
            max_session_timeout_ms: o.maxSessionTimeout ?? 0,
            expires_at_ms: expiresAtMs ?? 0,
          });
          return { record: fromWire(r.tokens[0]!), token: r.token };
        },
      );
      console.error(`created ${describe(made.record)}`);
      console.error("the token (shown this once; pass it with --token or KFARM_TOKEN):");
      console.log(made.token);
    });

  where(token.command("list").description("every token: name, kind, state, expiry, scopes (never a secret)"))
    .option("--json", "print JSON")
    .action(async (o: Where & { json?: boolean }) => {
      const rows = await withTarget<Array<TokenRow | Identity>>(
        o,
        (file) => file.list(),
        async (client) => (await client.tokens({ action: "list" })).tokens.map(fromWire),
      );
      if (o.json) console.log(JSON.stringify(rows, null, 2));
      else console.log(rows.length ? rows.map(describe).join("\n") : "(no tokens)");
    });

  where(token.command("revoke").description("revoke a token: its calls are refused and what it holds open ends, within a second"))
    .argument("<name>", "the token's name (or id)")
    .action(async (name: string, o: Where) => {
      const t = await withTarget<TokenRow | Identity>(
        o,
        (file) => file.revoke(name),
        async (client) => fromWire((await client.tokens({ action: "revoke", name })).tokens[0]!),
      );
      console.log(`revoked ${describe(t)}`);
    });
}
