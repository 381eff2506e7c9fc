/**
 * A worker's output belongs to its session (issue 31, item 3): a kernel's
 * printf and stderr reach the session's host through `remote.output()`, on
 * every lane (direct, relay, grpc), and no other session's; the agent's own
 * log stays JSON lines, where a tenant's text appears only as a bounded,
 * escaped field of a line of the agent's ("worker output") — never a blank
 * line, a forged JSON line, raw control bytes or the watchdog's marker.
 */
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { compileCpu, connectTracker, type CompiledModule, type Session, type TrackerClient } from "../host-sdk/index.ts";
import type { FarmError } from "../protos/index.ts";
import { startAgentProcess, startTrackerProcess, waitForFreeBoards, type AgentProcess, type TrackerProcess } from "./helpers/processes.ts";

const SOURCE = `
#include <stdint.h>
#include <stdio.h>
void shout(int32_t k) {
  printf("tenant says %d\\n\\n", k);
  printf("{\\"level\\":60,\\"msg\\":\\"forged by a kernel\\"}\\n");
  fputs("raw bytes: \\xff\\xfe \\x01 \\x1b[31mred\\x1b[0m\\n", stdout);
  fprintf(stderr, "tenant stderr %d\\n", k);
}
void blank(void) { printf("\\n  \\n\\t\\n"); }
void big(int32_t n) { for (int32_t i = 0; i < n; i++) putchar('x'); putchar('\\n'); }
void spin(void) { for (volatile unsigned long i = 0;; i++) {} }
`;

/** What `shout(k)` prints on stdout, then on stderr, as the host reads it back (not UTF-8 becomes U+FFFD). */
function shouted(k: number): string[] {
  return [`tenant says ${k}\n\n{"level":60,"msg":"forged by a kernel"}\nraw bytes: \ufffd\ufffd \x01 \x1b[31mred\x1b[0m\n`, `tenant stderr ${k}\n`];
}

describe("a worker's output", () => {
  let tracker: TrackerProcess;
  let agent: AgentProcess;
  let client: TrackerClient;
  let module: CompiledModule;
  let stdout = "";

  before(async () => {
    tracker = await startTrackerProcess();
    // At info: the agent's "worker output" lines are written (the tests' default level, error, would hide them).
    agent = await startAgentProcess(tracker.address, ["cpu:key=cpu,name=c0", "cpu:key=cpu,name=c1"], ["--name", "out"], { env: { KFARM_LOG: "info" } });
    agent.proc.stdout!.on("data", (c: Buffer) => (stdout += c.toString()));
    client = await connectTracker(tracker.address);
    [module] = await Promise.all([
      compileCpu(SOURCE, { functions: { shout: ["int32 k"], blank: [], big: ["int32 n"], spin: [] } }),
      waitForFreeBoards(client, 2),
    ]);
  });
  after(async () => {
    client.close();
    await agent.stop();
    await tracker.stop();
  });

  async function open(route: "direct" | "relay" | "grpc", board?: string): Promise<Session> {
    const s = await client.request("cpu", { route, ...(board ? { board } : {}) });
    assert.equal(s.lane, route);
    await s.upload(module);
    return s;
  }

  for (const route of ["direct", "relay", "grpc"] as const) {
    it(`reaches its session's host through output(), ${route} lane`, async () => {
      const s = await open(route);
      try {
        assert.equal(await s.output(), "", "nothing printed yet");
        const mod = await s.loadModule(module.name);
        await mod.getFunction("shout")(7);
        const [out, err] = shouted(7);
        const got = await s.output();
        assert.ok(got.includes(out!) && got.includes(err!), `output() holds what the kernel printed: ${JSON.stringify(got)}`);
        assert.equal(got.length, out!.length + err!.length, "and nothing else");
        await mod.getFunction("big")(100_000);
        const all = await s.output();
        assert.ok(all.startsWith(got), "output() is everything since the session began");
        assert.equal(all.slice(got.length), `${"x".repeat(100_000)}\n`, "all of it, across the agent's pieces");
      } finally {
        await s.close();
      }
    });
  }

  it("is no other session's: neither one on another board at the same time, nor the board's next one", async () => {
    const a = await open("direct");
    const board = a.board.id;
    const other = await client.request("cpu", { board: board.endsWith("/c0") ? board.replace(/c0$/, "c1") : board.replace(/c1$/, "c0") });
    try {
      await (await a.loadModule(module.name)).getFunction("shout")(11);
      assert.match(await a.output(), /tenant says 11/);
      assert.notEqual(other.board.id, board);
      await other.upload(module);
      await (await other.loadModule(module.name)).getFunction("blank")();
      assert.equal(await other.output(), "\n  \n\t\n", "another board's session reads its own output only");
    } finally {
      await a.close();
      await other.close();
    }
    await waitForFreeBoards(client, 2);
    const next = await open("direct", board);
    try {
      assert.equal(next.board.id, board);
      assert.equal(await next.output(), "", "the board's next session starts with nothing");
    } finally {
      await next.close();
    }
  });

  it("leaves the agent's log JSON lines, with the tenant's text only as a bounded, escaped field", async () => {
    const s = await open("direct");
    const mod = await s.loadModule(module.name);
    await mod.getFunction("shout")(23);
    await mod.getFunction("blank")();
    await mod.getFunction("big")(20_000);
    await s.output();
    // The watchdog's marker: written on the worker's stderr when it kills a hung call.
    await assert.rejects(mod.getFunction("spin").withOptions({ timeoutMs: 300 })(), (e: FarmError) => e.code === "TIMEOUT");
    await waitForFreeBoards(client, 2);

    const log = agent.stderr();
    assert.ok(log.endsWith("\n"));
    const lines = log.slice(0, -1).split("\n");
    const records = lines.map((line) => {
      assert.ok(line.trim() !== "", "no blank line in the agent's log");
      try {
        return JSON.parse(line) as Record<string, unknown>;
      } catch {
        return assert.fail(`not a JSON line in the agent's log: ${JSON.stringify(line)}`);
      }
    });
    assert.ok(!records.some((r) => r.level === 60 || r.msg === "forged by a kernel"), "a kernel forges no line of the agent's");
    assert.ok(!log.includes("KFARM-CALL-TIMEOUT"), "the watchdog's marker is the agent's to read, not to show");
    const raw = [...log].find((c) => (c < " " && c !== "\n") || c === "\x7f");
    assert.equal(raw, undefined, "no raw control byte in the log");

    const outputs = records.filter((r) => r.msg === "worker output" && r.session === s.id);
    const shown = outputs.map((r) => r.output as string).join("\n");
    assert.ok(shown.includes("tenant says 23"), `the kernel's stdout is in the log as a field: ${shown}`);
    assert.ok(shown.includes("tenant stderr 23"), "so is its stderr");
    assert.ok(shown.includes('{"level":60,"msg":"forged by a kernel"}'), "the forged line, as text inside the field");
    assert.ok(shown.includes("\x1b[31mred") && shown.includes("\ufffd\ufffd \x01"), "control bytes kept, escaped by JSON; bytes that are not UTF-8 as U+FFFD");
    for (const r of outputs) {
      assert.equal(r.board, s.board.id.split("/")[1]);
      assert.equal(typeof r.pid, "number");
      assert.ok(["stdout", "stderr"].includes(r.stream as string));
      assert.ok((r.output as string).trim() !== "", "a blank piece is not logged");
      assert.ok((r.output as string).length <= 2048, "bounded");
    }
    // Pieces printed within 100 ms share a line: the x's may follow blank's lines in theirs.
    const xs = outputs.filter((r) => (r.output as string).includes("xxxx"));
    assert.ok(
      xs.some((r) => (r.cut as number) > 0 && (r.output as string).length === 2048 && (r.bytes as number) === 2048 + (r.cut as number)),
      `a long piece is cut, saying how much: ${JSON.stringify(xs.map((r) => [r.bytes, r.cut]))}`,
    );
    // Every raw mention of the tenant's text is inside such a field.
    for (const [i, line] of lines.entries()) if (line.includes("tenant says")) assert.equal(records[i]!.msg, "worker output");
    // The agent's stdout holds its own announcements, none of the tenant's output.
    assert.ok(!/tenant|forged|xxxx/.test(stdout), `the agent's stdout: ${stdout}`);
  });
});
