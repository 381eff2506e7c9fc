/**
 * Fuzzing the agent's decoder of what its session workers say (protos/
 * worker-channel.ts, device-agent/agent/worker-channel.ts), within a fixed budget.
 *
 * fast-check rather than Jazzer.js: it runs inside node's test runner with
 * no native build (CI installs nothing more), and shrinks a failure to a
 * small input to keep as a regression example.
 *
 * In process: random bytes and mutated valid messages through the decoder,
 * which must return a checked message or throw PROTOCOL_ERROR, nothing else.
 * Against real processes: a kernel writes random frames on its worker's
 * channel; the agent lives, only that session may end (PROTOCOL_ERROR), and
 * the farm serves a normal session afterwards.
 */
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import fc from "fast-check";
import { compileCpu, type CompiledModule, type RemoteModule, type Session } from "../../host-sdk/index.ts";
import { FarmError, decodeToAgent, encodeToAgent, type WorkerToAgent } from "../../protos/index.ts";
import { framed } from "../../runtime/index.ts";
import { fuzz } from "../helpers/fuzz.ts";
import { checkVadd } from "../helpers/kernels.ts";
import { startFarm } from "../helpers/processes.ts";

const IS_ROOT = process.getuid?.() === 0;

/** Well-formed messages of every kind, with fields anywhere in their types' ranges. */
const message: fc.Arbitrary<WorkerToAgent> = fc.oneof(
  fc.constant({ ready: {} }),
  fc.string().map((id) => ({ lane_opened: { session_id: id } })),
  fc.record({ ran: fc.boolean(), ok: fc.boolean(), detail: fc.string(), duration_ms: fc.double(), kernel_ns: fc.double() }).map((canary) => ({ canary })),
  fc.string().map((id) => ({ foreign_code: { session_id: id } })),
  fc
    .record({
      calls: fc.nat(),
      time_evaluations: fc.nat(),
      errors: fc.dictionary(fc.oneof(fc.constantFrom("TIMEOUT", "RUNTIME_ERROR"), fc.string()), fc.nat()),
    })
    .map((counters) => ({ counters })),
  fc.record({ id: fc.nat(), name: fc.string(), sha256: fc.oneof(fc.stringMatching(/^[0-9a-f]{64}$/), fc.string()) }).map((store_keep) => ({ store_keep })),
  fc.record({ id: fc.nat(), sha256: fc.string(), size: fc.double() }).map((store_take) => ({ store_take })),
  fc.record({ id: fc.nat(), bitstream: fc.string(), config: fc.string() }).map((program_fpga) => ({ program_fpga })),
  fc.record({ id: fc.nat(), from: fc.oneof(fc.nat(), fc.double()) }).map((output_read) => ({ output_read })),
  // Lane bytes that lie: any session, negative, fractional, NaN, past 2^53 or beyond what a lane carries (issue 32).
  fc
    .record({
      session_id: fc.string(),
      to_board: fc.oneof(fc.nat(), fc.double(), fc.constant(1e15)),
      from_board: fc.oneof(fc.nat(), fc.double(), fc.constant(2 ** 53)),
    })
    .map((lane_bytes) => ({ lane_bytes })),
  fc
    .record({
      session_id: fc.string(),
      reusable: fc.boolean(),
      error: fc.option(fc.record({ code: fc.constantFrom("OK", "RUNTIME_CRASH", "BOGUS"), message: fc.string() }), { nil: undefined }),
    })
    .map((ended) => ({ ended })),
);

/** Valid encodings with bytes flipped, cut or appended. */
const mutated = fc
  .tuple(message, fc.array(fc.tuple(fc.nat(), fc.integer({ min: 0, max: 255 })), { maxLength: 4 }), fc.nat(), fc.uint8Array({ maxLength: 16 }))
  .map(([m, flips, cut, tail]) => {
    const bytes = Buffer.from(encodeToAgent(m));
    for (const [at, v] of flips) if (bytes.length) bytes[at % bytes.length] = v;
    return Buffer.concat([bytes.subarray(0, bytes.length ? cut % (bytes.length + 1) : 0), tail]);
  });

function decodesOrRefuses(bytes: Uint8Array): void {
  try {
    const m = decodeToAgent(bytes);
    assert.ok(m.kind in m.m || typeof m.m === "object", "a decoded message has its fields");
  } catch (err) {
    assert.ok(err instanceof FarmError, `threw ${String(err)}`);
    assert.equal(err.code, "PROTOCOL_ERROR");
    assert.match(err.message, /^the session's worker broke the agent's protocol: /);
  }
}

describe("fuzz: the agent's decoder of its workers' messages", () => {
  it("in process: random bytes and mutated messages decode to a checked message or PROTOCOL_ERROR", async () => {
    await fuzz("worker-channel decoder", { runs: 20_000, seconds: 8 }, fc.oneof(fc.uint8Array({ maxLength: 512 }), mutated), decodesOrRefuses);
    // Regression examples: nested groups (protobufjs skips them recursively), a field of the wrong wire type.
    decodesOrRefuses(Buffer.alloc(60_000, 0x0b));
    decodesOrRefuses(Buffer.from([0x0a, 0x05, 0x01]));
  });
});

const WRITER = `
#include <errno.h>
#include <stdint.h>
#include <unistd.h>
void raw_write(int32_t fd, const uint8_t* bytes, int32_t n, int32_t* out) {
  ssize_t w = write(fd, bytes, (size_t)n);
  out[0] = w < 0 ? -errno : (int32_t)w;
}
`;

describe(
  "fuzz: a kernel writing random frames on its worker's channel",
  { skip: IS_ROOT ? false : "needs root: the kernel runs in a sandboxed worker of a root agent" },
  () => {
    let farm: Awaited<ReturnType<typeof startFarm>>;
    let writer: CompiledModule;

    before(async () => {
      [farm, writer] = await Promise.all([
        startFarm(["cpu:key=cpu,name=a"], { agentArgs: ["--canary-interval-ms", "0"] }),
        compileCpu(WRITER, { functions: { raw_write: ["int32 fd", "uint8* bytes", "int32 n", "int32* out"] } }),
      ]);
    });
    after(() => farm.stop());

    it("the agent lives, only the writer's session ends, and the farm serves a normal session afterwards", async () => {
      const agentPid = farm.agent.proc.pid;
      let session: { s: Session; mod: RemoteModule } | undefined;
      let ended = 0;
      const frame = fc.oneof(
        mutated.map((b) => framed(b)),
        fc.uint8Array({ minLength: 1, maxLength: 256 }).map((b) => Buffer.from(b)),
        message.map((m) => framed(encodeToAgent(m))),
      );
      await fuzz("worker-channel (real agent)", { runs: 24, seconds: 30 }, frame, async (bytes) => {
        if (!session) {
          const s = await farm.client.request("cpu", { deadlineMs: 20_000 });
          await s.upload(writer);
          session = { s, mod: await s.loadModule(writer.name) };
        }
        const { s, mod } = session;
        try {
          const out = await s.array({ shape: [1], dtype: "int32" });
          await mod.getFunction("raw_write")(4, await s.array(new Uint8Array(bytes)), bytes.length, out);
          await s.listdir();
        } catch (err) {
          // Only this session ends, and only as a protocol breach.
          assert.ok(err instanceof FarmError, String(err));
          assert.equal(err.code, "PROTOCOL_ERROR", err.message);
          ended++;
          await s.close().catch(() => {});
          session = undefined;
        }
        assert.equal(farm.agent.proc.exitCode, null, "the agent died");
        assert.equal(farm.agent.proc.pid, agentPid);
      });
      await session?.s.close().catch(() => {});
      const s = await farm.client.request("cpu", { deadlineMs: 20_000 });
      try {
        await checkVadd(s);
      } finally {
        await s.close();
      }
      console.log(`fuzz worker-channel (real agent): ${ended} sessions ended PROTOCOL_ERROR`);
    });
  },
);
