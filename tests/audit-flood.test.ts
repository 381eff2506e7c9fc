/**
 * The audit log under a flood of refusals, against a real tracker: refusals
 * are counted per caller and reason (tracker/refusal-tally.ts), so a flood
 * writes a bounded number of lines, a grant written before it stays in the
 * live file, and the counts add up to the refusals made.
 */
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import type * as grpc from "@grpc/grpc-js";
import { FarmError, HostService, type HostServiceClient } from "../protos/index.ts";
import { callMetadata, makeClient } from "../runtime/index.ts";
import { connectTracker } from "../host-sdk/index.ts";
import { TokenFile } from "../tracker/index.ts";
import { startAgentProcess, startTrackerProcess, waitFor, type AgentProcess, type TrackerProcess } from "./helpers/processes.ts";

type Rec = Record<string, unknown>;

/** Distinct refusal keys written per interval, as docs/security.md ("The audit log") states. */
const MAX_REFUSAL_KEYS = 16;

/** One unary call of `method`, answered with its FarmError code ("OK" when it succeeded). */
function call(client: HostServiceClient, method: "Summary" | "BoardCommand", req: object, token: string | undefined): Promise<string> {
  return new Promise((resolve) =>
    (client[method] as unknown as (r: object, m: grpc.Metadata, o: grpc.CallOptions, cb: (e: grpc.ServiceError | null) => void) => void).call(
      client,
      req,
      callMetadata(token ? { token } : {}),
      { deadline: Date.now() + 10_000 },
      (err) => resolve(err ? FarmError.from(err).code : "OK"),
    ),
  );
}

describe("the audit log under a flood of refusals", () => {
  let dir: string;
  let tracker: TrackerProcess;
  let agent: AgentProcess;
  let file: TokenFile;
  const auditPath = () => join(dir, "audit.jsonl");
  const audit = (): Rec[] =>
    readFileSync(auditPath(), "utf8")
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l) as Rec);

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), "kf-audit-"));
    file = new TokenFile(join(dir, "tokens.json"));
    // At warn level: refusals are logged as they are audited, the first of each key only.
    tracker = await startTrackerProcess(["--tokens", join(dir, "tokens.json")], 0, { env: { KFARM_LOG: "warn" } });
    const box = file.create({ name: "box", kind: "agent", keys: ["cpu"] }).token;
    agent = await startAgentProcess(tracker.address, ["cpu:key=cpu"], ["--token", box]);
  });
  after(async () => {
    await agent?.stop();
    await tracker?.stop();
  });

  it("writes a bounded number of lines, keeps the grant before it, and counts every refusal", async () => {
    const alice = file.create({ name: "alice", kind: "client", keys: ["cpu"] }).token;
    const host = await connectTracker(tracker.address, { token: alice });
    await waitFor("the board", async () => (await host.summary()).boards.some((b) => b.state === "free"));
    const s = await host.request("cpu");
    await s.close();
    host.close();
    const grant = audit().find((r) => r.event === "grant" && r.who === "alice");
    assert.ok(grant, "the grant is audited");
    await waitFor("the session's end audited", () => audit().some((r) => r.event === "session_end" && r.session === grant.session));
    const linesBefore = audit().length;

    const clients = Array.from({ length: 8 }, () => makeClient<HostServiceClient>(HostService, tracker.address, {}));
    try {
      // The flood: token-less Summary calls from 8 connections.
      const FLOOD = 3000;
      let next = 0;
      const codes = await Promise.all(
        clients.map(async (c) => {
          const seen: string[] = [];
          while (next < FLOOD) {
            next++;
            seen.push(await call(c, "Summary", { key: "" }, undefined));
          }
          return seen;
        }),
      );
      assert.deepEqual([...new Set(codes.flat())], ["UNAUTHENTICATED"]);
      assert.equal(codes.flat().length, FLOOD);

      // Callers that vary what they claim: MAX_REFUSAL_KEYS + 8 revoked tokens, each refused with a reason of its own.
      const names = Array.from({ length: MAX_REFUSAL_KEYS + 8 }, (_, i) => `c${i}`);
      const revoked = names.map((name) => file.create({ name, kind: "client", keys: ["cpu"] }).token);
      for (const name of names) file.revoke(name);
      let variedRefusals = 0;
      await waitFor(
        "the revocations read",
        async () => (await call(clients[0]!, "Summary", { key: "" }, revoked.at(-1))) === "UNAUTHENTICATED" && ++variedRefusals > 0,
      );
      const variedCodes = await Promise.all(revoked.map((t, i) => call(clients[i % clients.length]!, "Summary", { key: "" }, t)));
      assert.deepEqual([...new Set(variedCodes)], ["UNAUTHENTICATED"]);
      variedRefusals += variedCodes.length;

      // While the interval runs: one line per distinct key, up to the bound.
      const during = audit().slice(linesBefore);
      assert.ok(
        during.every((r) => r.event === "refused" || r.event === "token_lost"),
        JSON.stringify(during.filter((r) => r.event !== "refused")),
      );
      const refusedDuring = during.filter((r) => r.event === "refused");
      assert.equal(refusedDuring.length, MAX_REFUSAL_KEYS, `${refusedDuring.length} refusal lines for ${FLOOD + variedRefusals} refusals`);

      // The tracker stops: the interval's counts are written; they add up.
      await tracker.stop();
      const records = audit();
      const refused = records.slice(linesBefore).filter((r) => r.event === "refused");
      assert.ok(refused.length <= 2 * MAX_REFUSAL_KEYS + 1, `${refused.length} refusal lines`);
      const total = refused.reduce((n, r) => n + (r.count as number), 0);
      assert.equal(total, FLOOD + variedRefusals);
      const anon = refused.filter((r) => r.who === "unknown" && r.doing === "read the summary" && /needs a token/.test(String(r.reason)));
      assert.deepEqual(
        anon.map((r) => r.count),
        [1, FLOOD - 1],
      );
      assert.ok(anon[1]!.first && anon[1]!.last, "the aggregate says when");
      const perToken = refused.filter((r) => /^token 'c\d+' was revoked/.test(String(r.reason)));
      assert.equal(new Set(perToken.map((r) => r.reason)).size, MAX_REFUSAL_KEYS - 1, "the keys up to the bound: the flood's and 15 revoked tokens'");
      const overflow = refused.filter((r) => r.who === "*");
      assert.equal(overflow.length, 1, "the callers past the bound share one record");
      assert.equal(perToken.reduce((n, r) => n + (r.count as number), 0) + (overflow[0]!.count as number), variedRefusals);
      assert.ok(
        records.some((r) => r.event === "grant" && r.session === grant.session),
        "the grant is still in the live file",
      );
      // The process log, too: one warning per refusal written at once, not one per call.
      const logged = tracker
        .stderr()
        .split("\n")
        .filter((l) => l.includes('"msg":"refused: '));
      assert.equal(logged.length, refused.filter((r) => r.first === undefined).length, `${logged.length} refusal lines logged`);
    } finally {
      for (const c of clients) c.close();
    }
  });
});
