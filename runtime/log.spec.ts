import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { describe, it } from "node:test";
import { fileURLToPath } from "node:url";
import { topLevelKeys } from "../tests/helpers/json-keys.ts";

const LOG = fileURLToPath(new URL("./log.ts", import.meta.url));

describe("log lines", () => {
  it("have unique keys: a child or a call that names a bound key replaces its value", () => {
    const script = `
      const { componentLogger } = await import(${JSON.stringify(LOG)});
      const tracker = componentLogger("tracker");
      tracker.child({ component: "tvm-port" }).info({ peer: "p" }, "child rebinds component");
      const agent = componentLogger("agent", { agent: "rack-a" });
      agent.info({ agent: "rack-a#3", board: "c0" }, "call names a bound key");
      agent.child({ board: "c0" }).warn({ board: "c1" }, "grandchild call");
      agent.debug({ agent: "x" }, "below the level: nothing");`;
    const run = spawnSync(process.execPath, ["--import", "tsx", "--input-type=module", "-e", script], {
      encoding: "utf8",
      env: { ...process.env, KFARM_LOG: "info" },
    });
    assert.equal(run.status, 0, run.stderr);
    const lines = run.stderr.split("\n").filter((l) => l.startsWith("{"));
    assert.equal(lines.length, 3, run.stderr);
    for (const line of lines) {
      const keys = topLevelKeys(line);
      assert.deepEqual(
        keys.filter((k, i) => keys.indexOf(k) !== i),
        [],
        line,
      );
    }
    const [a, b, c] = lines.map((l) => JSON.parse(l) as Record<string, unknown>);
    assert.equal(a!.component, "tvm-port");
    assert.deepEqual([b!.component, b!.agent, b!.board], ["agent", "rack-a#3", "c0"]);
    assert.deepEqual([c!.agent, c!.board, c!.msg], ["rack-a", "c1", "grandchild call"]);
  });

  it("an embedded farm's loggers default to warn; KFARM_LOG wins, read when the first logger is made, after the script's imports", () => {
    const GRPC_OPTIONS = fileURLToPath(new URL("./grpc-options.ts", import.meta.url));
    const script = (before: string) => `
      const { componentLogger } = await import(${JSON.stringify(LOG)});
      await import(${JSON.stringify(GRPC_OPTIONS)});
      ${before}
      const quiet = componentLogger("tracker", {}, { defaultLevel: "warn" });
      quiet.info({}, "quiet info");
      quiet.child({ component: "tvm-port" }).info({}, "quiet child info");
      quiet.warn({ component: "tvm-port" }, "quiet warn");
      componentLogger("server").info({}, "server info");`;
    const messages = (before: string, env: Record<string, string>) => {
      const { KFARM_LOG: _, ...rest } = process.env;
      const run = spawnSync(process.execPath, ["--import", "tsx", "--input-type=module", "-e", script(before)], { encoding: "utf8", env: { ...rest, ...env } });
      assert.equal(run.status, 0, run.stderr);
      return run.stderr
        .split("\n")
        .filter((l) => l.startsWith("{"))
        .map((l) => (JSON.parse(l) as { msg: string }).msg);
    };
    assert.deepEqual(messages("", {}), ["quiet warn", "server info"]);
    assert.deepEqual(messages("", { KFARM_LOG: "info" }), ["quiet info", "quiet child info", "quiet warn", "server info"]);
    assert.deepEqual(messages('process.env.KFARM_LOG = "error";', {}), [], "set after the imports, before the first logger");
  });

  it("topLevelKeys sees duplicates JSON.parse would hide", () => {
    assert.deepEqual(topLevelKeys('{"a":1,"b":{"a":2,"c":[{"d":"}"}]},"a":"x\\"y"}'), ["a", "b", "a"]);
  });
});
