/**
 * Fuzz: upload names through a real session (host SDK → tracker → agent →
 * worker, device-agent/worker/files.ts): any unicode, fragments such as
 * `../`, NUL, slashes and backslashes, dot names, the reserved `.module`
 * prefix, lone surrogates, and names long in characters or in bytes. Each
 * upload is either a clean success — listdir shows exactly that name, and
 * it can be downloaded and removed — or INVALID_NAME; never INTERNAL or
 * another code, and never a file outside the session's folder.
 */
import assert from "node:assert/strict";
import { chmodSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import fc from "fast-check";
import { connectTracker, type Session, type TrackerClient } from "../../host-sdk/index.ts";
import { FarmError } from "../../protos/index.ts";
import { fuzz } from "../helpers/fuzz.ts";
import { checkVadd } from "../helpers/kernels.ts";
import { startAgentProcess, startTrackerProcess, waitForFreeBoards, type AgentProcess, type TrackerProcess } from "../helpers/processes.ts";
import { cwdOf } from "../helpers/procfs.ts";

const FRAGMENTS = [
  "../",
  "..",
  ".",
  "/",
  "\\",
  "\0",
  "\n",
  "\x7f",
  "é",
  "😀",
  "a",
  ".module",
  " ",
  "%2F",
  "\u202e",
  "\ufeff",
  "\ud800",
  "\udfff",
  "x".repeat(100),
  "é".repeat(60),
  "~",
  "-",
  ":",
  "*",
  "?",
];

const names = fc.oneof(
  fc.string({ unit: "binary", minLength: 0, maxLength: 300 }),
  fc.string({ unit: "grapheme", maxLength: 80 }),
  fc.string({ unit: fc.constantFrom(...FRAGMENTS), maxLength: 8 }),
  fc.tuple(fc.constantFrom("é", "😀", "a", "€"), fc.integer({ min: 60, max: 300 })).map(([c, n]) => c.repeat(n)),
  fc.constantFrom(
    ".",
    "..",
    "...",
    "a/b",
    "/etc/passwd",
    "..\\x",
    "\0",
    ".module1.so",
    "x".repeat(255),
    "x".repeat(256),
    `${"é".repeat(127)}x`,
    `${"é".repeat(127)}xy`,
  ),
);

describe("fuzz: upload names", () => {
  let root: string;
  let tracker: TrackerProcess;
  let agent: AgentProcess;
  let client: TrackerClient;
  let s: Session;
  let scratch: string;
  let scratchBefore: string[];
  let rootBefore: string[];

  before(async () => {
    // The agent's TMPDIR: nothing else in it, so that any file a name put outside the session's folder shows.
    root = mkdtempSync(join(tmpdir(), "kfarm-names-"));
    chmodSync(root, 0o755);
    tracker = await startTrackerProcess();
    agent = await startAgentProcess(tracker.address, ["cpu:key=cpu"], [], { env: { TMPDIR: root } });
    client = await connectTracker(tracker.address);
    await waitForFreeBoards(client, 1);
    scratch = join(root, `kfarm-agent-${agent.proc.pid}`);
    s = await client.request("cpu", { deadlineMs: 10_000 });
    scratchBefore = readdirSync(scratch).sort();
    rootBefore = readdirSync(root).sort();
  });
  after(async () => {
    await s?.close();
    client?.close();
    await agent?.stop();
    await tracker?.stop();
    if (root) rmSync(root, { recursive: true, force: true });
  });

  /** One name: a clean success, listed exactly, or INVALID_NAME. */
  async function check(name: string): Promise<void> {
    const bytes = new Uint8Array([name.length & 0xff, 42]);
    try {
      assert.equal(await s.upload(bytes, name), name);
    } catch (err) {
      assert.ok(err instanceof FarmError, `not a FarmError for ${JSON.stringify(name)}: ${String(err)}`);
      assert.equal(err.code, "INVALID_NAME", `${JSON.stringify(name)}: ${err.code} ${err.message}`);
      assert.ok(!err.message.includes(scratch), `the refusal names the agent's folder: ${err.message}`);
      return;
    }
    const listed = (await s.listdir()).map((f) => f.name);
    assert.deepEqual(listed, [name], `listdir after uploading ${JSON.stringify(name)}`);
    assert.deepEqual([...(await s.download(name))], [...bytes]);
    await s.remove(name);
  }

  it("every name is a clean success listed exactly, or INVALID_NAME; no file lands outside the session", async () => {
    await fuzz("upload names", { runs: 2000, seconds: 8 }, names, check);
    // Nothing outside the session's folder: the agent's TMPDIR and scratch folder hold what they held.
    assert.deepEqual(readdirSync(root).sort(), rootBefore);
    assert.deepEqual(readdirSync(scratch).sort(), scratchBefore);
    // The session's folder (made while its worker was idle, so not named for the session): its worker's working directory.
    assert.deepEqual(readdirSync(cwdOf(Number((await s.stats()).info.worker_pid))), []);
    assert.equal(agent.proc.exitCode, null);
    await checkVadd(s);
  });

  it("regressions the fuzzer found, kept", async () => {
    // A lone surrogate has no UTF-8 form: the encoder sent U+FFFD, and the file was listed under another name.
    for (const name of ["\ud800", "a\udfffb"]) await check(name);
    // Over 255 bytes in fewer characters.
    await check("é".repeat(200));
  });
});
