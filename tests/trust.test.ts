/**
 * Every door of a farm with tokens, against real tracker and agent
 * processes: who may attach, request, open, release and command, what a
 * refusal says, that revocation ends what a token holds open within a
 * second, that the audit log records it, and that through all of it the
 * farm keeps serving the callers who belong.
 */
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { chmodSync, mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import type * as grpc from "@grpc/grpc-js";
import { FarmError, HostService, type HostServiceClient } from "../protos/index.ts";
import { callMetadata, makeClient, parseAddress } from "../runtime/index.ts";
import { rawHello, rawSession } from "./helpers/raw-session.ts";

const trackerHost = (address: string) => parseAddress(address).host;
import { connectTracker, type CompiledModule, type TrackerClient } from "../host-sdk/index.ts";
import { TokenFile } from "../tracker/index.ts";
import { compileVadd } from "./helpers/kernels.ts";
import { startAgentProcess, startTrackerProcess, waitFor, type AgentProcess, type TrackerProcess } from "./helpers/processes.ts";

const CLI = fileURLToPath(new URL("../cli/main.ts", import.meta.url));

/** Rejects with a FarmError of `code` whose message matches `re`. */
async function refused(p: Promise<unknown>, code: string, re: RegExp): Promise<void> {
  await assert.rejects(p, (e: unknown) => {
    assert.ok(e instanceof FarmError, `not a FarmError: ${String(e)}`);
    assert.equal(e.code, code, e.message);
    assert.match(e.message, re);
    return true;
  });
}

/** A raw gRPC client of the tracker that presents `token`, for calls the SDK would not make. */
interface Raw {
  client: HostServiceClient;
  token: string;
  close(): void;
}

function rawClient(address: string, token: string): Raw {
  const client = makeClient<HostServiceClient>(HostService, address, { token });
  return { client, token, close: () => client.close() };
}

function unary<Req, Res>(raw: Raw, method: "ReleaseSession" | "Summary" | "BoardCommand" | "Tokens", req: Req, timeoutMs = 5000): Promise<Res> {
  return new Promise((resolve, reject) =>
    (raw.client[method] as unknown as (r: Req, m: grpc.Metadata, o: grpc.CallOptions, cb: (e: grpc.ServiceError | null, v?: Res) => void) => void).call(
      raw.client,
      req,
      callMetadata({ token: raw.token }),
      { deadline: Date.now() + timeoutMs },
      (err, v) => (err ? reject(FarmError.from(err)) : resolve(v!)),
    ),
  );
}

describe("a farm with tokens", () => {
  let dir: string;
  let tokensPath: string;
  let file: TokenFile;
  let tracker: TrackerProcess;
  let agent: AgentProcess;
  let module: CompiledModule;
  const tokens: Record<string, string> = {};
  const clients: TrackerClient[] = [];

  async function client(token: string | undefined): Promise<TrackerClient> {
    const c = await connectTracker(tracker.address, token === undefined ? {} : { token });
    clients.push(c);
    return c;
  }

  function make(name: string, spec: Omit<Parameters<TokenFile["create"]>[0], "name">): string {
    return (tokens[name] = file.create({ name, ...spec }).token);
  }

  const audit = () =>
    readFileSync(join(dir, "audit.jsonl"), "utf8")
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l) as Record<string, unknown>);

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), "kf-trust-"));
    tokensPath = join(dir, "tokens.json");
    file = new TokenFile(tokensPath);
    make("gpu-box", { kind: "agent", keys: ["cpu", "cpu-*"] });
    make("ci-bot", { kind: "client", keys: ["cpu"], maxPriority: 5, maxSessionTimeoutMs: 60_000 });
    make("alice", { kind: "client", keys: ["*"] });
    make("ops", { kind: "operator" });
    make("h100-only", { kind: "client", keys: ["h100"] });
    [tracker, module] = await Promise.all([startTrackerProcess(["--tokens", tokensPath, "--max-session-timeout-ms", "120000"]), compileVadd()]);
    agent = await startAgentProcess(tracker.address, ["cpu:key=cpu", "cpu:key=cpu"], ["--token", tokens["gpu-box"]!]);
    const ops = await client(tokens.ops);
    await waitFor("2 free boards", async () => (await ops.summary()).boards.filter((b) => b.state === "free").length === 2);
  });

  after(async () => {
    for (const c of clients) c.close();
    await agent?.stop();
    await tracker?.stop();
  });

  it("names the agent after its token: the summary shows agent gpu-box", async () => {
    const s = await (await client(tokens.ops)).summary();
    assert.deepEqual([...new Set(s.agents.map((a) => a.name))], ["gpu-box"]);
  });

  it("refuses every call without a token, with UNAUTHENTICATED saying how to get one", async () => {
    const anon = await client(undefined);
    await refused(anon.summary(), "UNAUTHENTICATED", /needs a token to read the summary.*kfarm token create/);
    await refused(anon.request("cpu"), "UNAUTHENTICATED", /needs a token to request sessions/);
  });

  it("refuses malformed, over-long, unknown, revoked and expired tokens, each saying which", async () => {
    await refused((await client("not-a-token")).summary(), "UNAUTHENTICATED", /malformed token/);
    // The SDK refuses an over-long token before sending it; a raw client shows the tracker does too.
    await refused(client(`kf1.${"a".repeat(12)}.${"b".repeat(600)}`), "UNAUTHENTICATED", /at most 512/);
    const raw = rawClient(tracker.address, `kf1.${"a".repeat(12)}.${"b".repeat(600)}`);
    await refused(unary(raw, "Summary", { key: "" }), "UNAUTHENTICATED", /at most 512/);
    raw.close();
    // Right shape, wrong secret: an unknown token.
    const forged = `${tokens.alice!.slice(0, "kf1.".length + 12 + 1)}${"A".repeat(43)}`;
    await refused((await client(forged)).summary(), "UNAUTHENTICATED", /unknown token/);
    const doomed = make("doomed", { kind: "client", keys: ["cpu"] });
    file.revoke("doomed");
    await waitFor("the revocation to be read", async () => {
      try {
        await (await client(doomed)).summary();
        return false;
      } catch (e) {
        return (e as FarmError).code === "UNAUTHENTICATED" && /token 'doomed' was revoked/.test((e as FarmError).message);
      }
    });
    const soon = file.create({ name: "short-lived", kind: "client", keys: ["cpu"], expiresAtMs: Date.now() + 400 }).token;
    await waitFor("the token to expire", async () => {
      try {
        await (await client(soon)).summary();
        return false;
      } catch (e) {
        return /token 'short-lived' expired/.test((e as FarmError).message);
      }
    });
  });

  it("keeps each token to its kind: a client token cannot attach an agent, an agent token cannot request, only operators command boards", async () => {
    const rogue = await startAgentProcess(tracker.address, ["cpu:key=cpu"], ["--token", tokens.alice!, "--name", "rogue"]);
    try {
      // The agent says why it cannot attach, once; its board never appears.
      await waitFor(
        "the agent to report the refusal",
        () => /the tracker refused this agent: token 'alice' is a client token and may not attach an agent.*retrying every 10 s/.test(rogue.stderr()),
        10_000,
      );
      const s = await (await client(tokens.ops)).summary();
      assert.ok(!s.agents.some((a) => a.name === "rogue" || a.name === "alice"), JSON.stringify(s.agents));
    } finally {
      await rogue.stop();
    }
    await refused((await client(tokens["gpu-box"])).request("cpu"), "PERMISSION_DENIED", /token 'gpu-box' is a agent token|token 'gpu-box' is an agent token/);
    const board = (await (await client(tokens.ops)).summary()).boards[0]!.id;
    await refused(
      (await client(tokens.alice)).boardCommand(board, "quarantine"),
      "PERMISSION_DENIED",
      /token 'alice' is a client token and may not quarantine boards; that needs an operator token/,
    );
    await refused((await client(tokens.alice)).tokens({ action: "list" }), "PERMISSION_DENIED", /may not administer tokens/);
    // Who asks is judged before what it asks: an action outside the enum, sent raw, is still a permission refusal.
    const raw = (await client(tokens.alice)) as unknown as {
      client: { BoardCommand(req: object, md: object, cb: (err: Error | null) => void): void };
      metadata(): object;
    };
    const err = await new Promise<Error | null>((resolve) => raw.client.BoardCommand({ board_id: board, action: 99 }, raw.metadata(), resolve));
    assert.equal(FarmError.from(err).code, "PERMISSION_DENIED", String(err));
  });

  it("keeps a client to its keys, its priority cap and its session-timeout cap; 0 is never unlimited", async () => {
    const bot = await client(tokens["ci-bot"]);
    await refused((await client(tokens["h100-only"])).request("cpu"), "PERMISSION_DENIED", /token 'h100-only' may not request key 'cpu' \(its keys: h100\)/);
    await refused(bot.request("cpu", { priority: 6 }), "PERMISSION_DENIED", /token 'ci-bot' may request priority 5 at most, not 6/);
    await refused(
      bot.request("cpu", { sessionTimeoutMs: 90_000 }),
      "PERMISSION_DENIED",
      /session timeout 90000 ms is above the 60000 ms that token 'ci-bot' allows/,
    );
    await refused(
      (await client(tokens.alice)).request("cpu", { sessionTimeoutMs: 200_000 }),
      "INVALID_ARGUMENT",
      /above the 120000 ms that this tracker allows/,
    );
    const s = await bot.request("cpu", { priority: 5 });
    try {
      // The client id for fairness is the token's name, whatever the SDK claimed.
      const row = (await (await client(tokens.ops)).summary()).boards.find((b) => b.session_id === s.id)!;
      assert.equal(row.client_id, "ci-bot");
    } finally {
      await s.close();
    }
    const grant = audit()
      .filter((r) => r.event === "grant" && r.who === "ci-bot")
      .at(-1)!;
    assert.equal(grant.sessionTimeoutMs, 60_000, "a request for 0 gets the token's cap");
  });

  it("an agent token may not take another agent's name nor register boards of keys it does not hold", async () => {
    const impostor = await startAgentProcess(tracker.address, ["cpu:key=cpu"], ["--token", tokens["gpu-box"]!, "--name", "other-box"]);
    try {
      await waitFor("the refusal", () => /token 'gpu-box' attaches as agent 'gpu-box', not 'other-box'/.test(impostor.stderr()), 10_000);
    } finally {
      await impostor.stop();
    }
    make("small-box", { kind: "agent", keys: ["cpu-small"] });
    const wrongKey = await startAgentProcess(tracker.address, ["cpu:key=cpu"], ["--token", tokens["small-box"]!]);
    try {
      await waitFor("the refusal", () => /token 'small-box' may not register boards of key 'cpu'/.test(wrongKey.stderr()), 10_000);
    } finally {
      await wrongKey.stop();
    }
    // The real gpu-box was never displaced.
    const s = await (await client(tokens.ops)).summary();
    assert.equal(s.boards.filter((b) => b.agent_name === "gpu-box").length, 2);
  });

  it("refuses a wrong session ticket and another identity on the stream and on release, and audits both", async () => {
    const alice = await client(tokens.alice);
    const s = await alice.request("cpu");
    try {
      const bob = rawClient(tracker.address, tokens["ci-bot"]!);
      const raw = rawClient(tracker.address, tokens.alice!);
      try {
        const wrong = (
          await rawHello(trackerHost(tracker.address), tracker.dataPort, { session_id: s.id, ticket: "0".repeat(32), role: "host", token: tokens.alice! })
        ).error!;
        assert.equal(wrong.code, "PERMISSION_DENIED");
        assert.match(wrong.message, /wrong session token for session/);
        await refused(unary(raw, "ReleaseSession", { session_id: s.id, token: "f".repeat(32) }), "PERMISSION_DENIED", /wrong session token/);
        await refused(unary(bob, "ReleaseSession", { session_id: s.id, token: "f".repeat(32) }), "PERMISSION_DENIED", /wrong session token/);
        await refused(unary(raw, "ReleaseSession", { session_id: "s999-nope", token: "x" }), "NOT_FOUND", /no session "s999-nope"/);
      } finally {
        bob.close();
        raw.close();
      }
      // The session itself was not disturbed.
      await s.upload(module);
      const vadd = (await s.loadModule(module.name)).getFunction("vadd");
      const a = await s.array(new Float32Array([1, 2]));
      const c = await s.array({ shape: [2], dtype: "float32" });
      await vadd(a, a, c, 2);
      assert.deepEqual([...(await c.toArray())], [2, 4]);
    } finally {
      await s.close();
    }
    const refusals = audit().filter((r) => r.event === "refused" && /session/.test(String(r.doing)));
    assert.ok(
      refusals.some((r) => r.who === "alice" && r.code === "PERMISSION_DENIED" && typeof r.peer === "string"),
      JSON.stringify(refusals),
    );
    assert.ok(
      refusals.some((r) => r.who === "ci-bot"),
      JSON.stringify(refusals),
    );
  });

  it("refuses a session's ticket to another identity, even when the ticket is right", async () => {
    // A grant made through a raw client, so the test holds the ticket.
    const raw = rawClient(tracker.address, tokens.alice!);
    const bob = rawClient(tracker.address, tokens["ci-bot"]!);
    try {
      const session = await rawSession(tracker.address, { key: "cpu", priority: 1, route: "relay" }, tokens.alice!);
      const grant = { session_id: session.grant.session_id, token: session.grant.ticket };
      // Bob's hello on the tracker's data port, with Alice's ticket.
      const stolen = await rawHello(trackerHost(tracker.address), session.grant.relay_port, {
        session_id: grant.session_id,
        ticket: grant.token,
        role: "host",
        token: tokens["ci-bot"]!,
      });
      assert.equal(stolen.error?.code, "PERMISSION_DENIED");
      assert.match(stolen.error!.message, /granted to another token, not to 'ci-bot'/);
      await refused(unary(bob, "ReleaseSession", { session_id: grant.session_id, token: grant.token }), "PERMISSION_DENIED", /granted to another token/);
      await unary(raw, "ReleaseSession", { session_id: grant.session_id, token: grant.token });
      assert.ok(audit().some((r) => r.event === "release" && r.session === grant.session_id && r.who === "alice"));
      session.close();
    } finally {
      raw.close();
      bob.close();
    }
  });

  it("ends a revoked token's open sessions and waiting request within a second, with the reason", async () => {
    const holder = file.create({ name: "holder", kind: "client", keys: ["cpu"] }).token;
    const waiterToken = file.create({ name: "waiter", kind: "client", keys: ["cpu"] }).token;
    const h = await client(holder);
    const s1 = await h.request("cpu");
    const s2 = await h.request("cpu");
    // Both boards are held: this request waits in the queue.
    const waiting = (await client(waiterToken)).request("cpu", { deadlineMs: 30_000 });
    const waitingOutcome = waiting.then(
      () => undefined,
      (e: FarmError) => e,
    );
    await waitFor("the request to queue", async () => (await (await client(tokens.ops)).summary()).queues.some((q) => q.key === "cpu" && q.pending === 1));
    const t0 = Date.now();
    file.revoke("holder");
    file.revoke("waiter");
    await waitFor(
      "the held session to end",
      async () => {
        const e = await s1.listdir().then(
          () => undefined,
          (err: FarmError) => err,
        );
        return e && /revoked/.test(e.message) ? e : undefined;
      },
      3000,
    );
    const waited = await waitingOutcome;
    const took = Date.now() - t0;
    assert.ok(took < 1500, `revocation took ${took} ms`);
    assert.equal(waited?.code, "UNAUTHENTICATED");
    assert.match(waited!.message, /token 'waiter' was revoked/);
    await s1.close().catch(() => {});
    await s2.close().catch(() => {});
    // The boards come back for everyone else.
    const ops = await client(tokens.ops);
    await waitFor("2 free boards", async () => (await ops.summary()).boards.filter((b) => b.state === "free").length === 2);
    const lost = audit().filter((r) => r.event === "token_lost");
    assert.ok(
      lost.some((r) => r.who === "holder" && Number(r.ended) >= 2),
      JSON.stringify(lost),
    );
  });

  it("detaches a revoked agent token's agent within a second: its boards leave, and it says why", async () => {
    make("spare-box", { kind: "agent", keys: ["cpu-spare"] });
    const spare = await startAgentProcess(tracker.address, ["cpu:key=cpu-spare"], ["--token", tokens["spare-box"]!]);
    try {
      const ops = await client(tokens.ops);
      await waitFor("the spare board", async () => (await ops.summary()).boards.some((b) => b.agent_name === "spare-box"));
      const t0 = Date.now();
      file.revoke("spare-box");
      await waitFor("the spare board to leave", async () => !(await ops.summary()).boards.some((b) => b.agent_name === "spare-box"), 3000, 10);
      const took = Date.now() - t0;
      assert.ok(took < 1500, `the agent stayed ${took} ms`);
      await waitFor("the agent to say its token was revoked", () => /token 'spare-box' was revoked/.test(spare.stderr()), 10_000);
    } finally {
      await spare.stop();
    }
  });

  it("administers tokens through the tracker with an operator token, and the new token works at once", async () => {
    const ops = await client(tokens.ops);
    const made = await ops.tokens({ action: "create", name: "via-rpc", kind: "client", keys: ["cpu"] });
    assert.match(made.token, /^kf1\.[0-9a-f]{12}\.[A-Za-z0-9_-]{43}$/);
    const s = await (await client(made.token)).request("cpu");
    await s.close();
    const listed = await ops.tokens({ action: "list" });
    assert.ok(listed.tokens.some((t) => t.name === "via-rpc" && t.kind === "client"));
    assert.ok(!JSON.stringify(listed).includes(made.token.split(".")[2]!), "a listing never carries a secret");
    await ops.tokens({ action: "revoke", name: "via-rpc" });
    await refused((await client(made.token)).summary(), "UNAUTHENTICATED", /token 'via-rpc' was revoked/);
    assert.ok(!readFileSync(tokensPath, "utf8").includes(made.token.split(".")[2]!), "the file holds no secret");
    const changes = audit().filter((r) => r.event === "token_create" || r.event === "token_revoke");
    assert.ok(changes.some((r) => r.event === "token_create" && r.token === "via-rpc" && r.who === "ops"));
  });

  it("replaces a restarted agent's link when the same token attaches again", async () => {
    await agent.stop("SIGKILL");
    agent = await startAgentProcess(tracker.address, ["cpu:key=cpu", "cpu:key=cpu"], ["--token", tokens["gpu-box"]!]);
    const ops = await client(tokens.ops);
    await waitFor("the agent back with 2 free boards", async () => {
      const s = await ops.summary();
      return s.agents.length === 1 && s.agents[0]!.name === "gpu-box" && s.boards.filter((b) => b.state === "free").length === 2;
    });
  });

  it("kept serving the callers who belong through all of the above", async () => {
    const s = await (await client(tokens.alice)).request("cpu");
    try {
      await s.upload(module);
      const vadd = (await s.loadModule(module.name)).getFunction("vadd");
      const a = await s.array(new Float32Array([1, 2, 3]));
      const c = await s.array({ shape: [3], dtype: "float32" });
      await vadd(a, a, c, 3);
      assert.deepEqual([...(await c.toArray())], [2, 4, 6]);
    } finally {
      await s.close();
    }
  });
});

describe("the tokens file", () => {
  it("is refused at start when others may read it, naming the file and the fix", () => {
    const dir = mkdtempSync(join(tmpdir(), "kf-trust-"));
    const path = join(dir, "tokens.json");
    new TokenFile(path).create({ name: "x", kind: "operator" });
    chmodSync(path, 0o644);
    const r = spawnSync(process.execPath, ["--import", "tsx", CLI, "tracker", "--port", "0", "--tokens", path], { encoding: "utf8", timeout: 20_000 });
    assert.notEqual(r.status, 0);
    assert.match(r.stderr, new RegExp(`tokens file ${path.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")} has mode 644.*chmod 600`));
  });

  it("is never written with a secret, and `kfarm token` prints the token once", () => {
    const dir = mkdtempSync(join(tmpdir(), "kf-trust-"));
    const path = join(dir, "tokens.json");
    const r = spawnSync(
      process.execPath,
      ["--import", "tsx", CLI, "token", "create", "--tokens", path, "--name", "ci", "--kind", "client", "--keys", "cpu,h100"],
      { encoding: "utf8", timeout: 20_000 },
    );
    assert.equal(r.status, 0, r.stderr);
    const token = r.stdout.trim();
    assert.match(token, /^kf1\./);
    assert.ok(!readFileSync(path, "utf8").includes(token.split(".")[2]!));
    const list = spawnSync(process.execPath, ["--import", "tsx", CLI, "token", "list", "--tokens", path], { encoding: "utf8", timeout: 20_000 });
    assert.match(list.stdout, /ci\s+client\s+live.*keys=cpu,h100/);
    const bad = spawnSync(
      process.execPath,
      ["--import", "tsx", CLI, "token", "create", "--tokens", path, "--name", "x y", "--kind", "client", "--keys", "cpu"],
      { encoding: "utf8", timeout: 20_000 },
    );
    assert.notEqual(bad.status, 0);
    assert.match(bad.stderr, /token name "x y" must be/);
  });
});
