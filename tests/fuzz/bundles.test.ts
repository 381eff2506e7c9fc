/**
 * Fuzz: module bundles uploaded and loaded on a real CPU board — random
 * bytes, a real bundle (compileCpu) with bytes flipped, inserted or cut, and
 * with fields of any type (tests/helpers/bundle-inputs.ts). What the host's
 * own decoder refuses, the board refuses as BAD_BUNDLE naming the field;
 * what it accepts loads cleanly or fails as LOAD_ERROR / TARGET_MISMATCH —
 * and only a bundle whose binary was changed may take its session's worker
 * down (RUNTIME_CRASH: the loader ran foreign code). The agent never dies,
 * and serves a normal session afterwards.
 */
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { compileCpu, type Session } from "../../host-sdk/index.ts";
import { decodeBundle, FarmError } from "../../protos/index.ts";
import { bundleInputs, checkRefusal } from "../helpers/bundle-inputs.ts";
import { fuzz } from "../helpers/fuzz.ts";
import { checkVadd } from "../helpers/kernels.ts";
import { startFarm } from "../helpers/processes.ts";

describe("fuzz: bundles loaded on a real CPU board", () => {
  let farm: Awaited<ReturnType<typeof startFarm>>;
  let good: Uint8Array;
  let s: Session;
  /** How inputs ended, for the log: a run that never loads (or never refuses) tests less than its count says. */
  const outcomes = new Map<string, number>();
  const tally = (what: string) => outcomes.set(what, (outcomes.get(what) ?? 0) + 1);

  before(async () => {
    farm = await startFarm(["cpu:key=cpu"]);
    good = (await compileCpu("void f(float* a, int n) { for (int i = 0; i < n; i++) a[i] += 1; }", { functions: { f: ["float32* a", "int32 n"] } })).bytes;
    s = await farm.client.request("cpu", { deadlineMs: 10_000 });
  });
  after(async () => {
    await s?.close();
    await farm?.stop();
  });

  /** Uploads and loads `bytes`; checks the outcome against what the host's decoder makes of them. */
  async function check(bytes: Uint8Array): Promise<void> {
    let local: ReturnType<typeof decodeBundle> | undefined;
    try {
      local = decodeBundle(bytes);
    } catch {
      local = undefined;
    }
    const goodBinary = local !== undefined && Buffer.from(local.binary).equals(Buffer.from(decodeBundle(good).binary));
    try {
      await s.upload(bytes, "fuzzed.kfm");
      await s.loadModule("fuzzed.kfm");
      assert.ok(local, "the board loaded a bundle the host's decoder refuses");
      tally("loaded");
    } catch (err) {
      if (err instanceof FarmError) tally(err.code);
      if (!local) {
        checkRefusal(err);
      } else {
        assert.ok(err instanceof FarmError, String(err));
        const crashed = err.code === "RUNTIME_CRASH" && !goodBinary;
        assert.ok(["LOAD_ERROR", "TARGET_MISMATCH"].includes(err.code) || crashed, `a bundle the host decodes failed with ${err.code}: ${err.message}`);
        // The loader ran a changed binary's code and its worker died: a new session.
        if (crashed) s = await farm.client.request("cpu", { deadlineMs: 10_000 });
      }
    }
    assert.equal(farm.agent.proc.exitCode, null, `the agent died:\n${farm.agent.stderr().slice(-2000)}`);
  }

  it("refuses with BAD_BUNDLE naming the field, or loads cleanly; never a crash of the agent", async () => {
    const n = await fuzz("bundles (real CPU board)", { runs: 2000, seconds: 8 }, bundleInputs(good), check);
    console.log(`fuzz bundles (real CPU board): outcomes ${[...outcomes].map(([k, v]) => `${k} ${v}`).join(", ")}`);
    assert.ok(n > 0);
    await checkVadd(s);
  });
});
