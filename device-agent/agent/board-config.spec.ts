/** Board declarations: --board flags, agent config files, sizes. */
import assert from "node:assert/strict";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { after, describe, it } from "node:test";
import { FarmError } from "../../protos/index.ts";
import { expandBoards, parseBoardFlag, parseBytes } from "./board-config.ts";
import { readAgentConfigFile } from "./config-file.ts";

function invalid(re: RegExp) {
  return (e: unknown) => {
    assert.ok(e instanceof FarmError, `expected a FarmError, got ${String(e)}`);
    assert.equal(e.code, "INVALID_ARGUMENT");
    assert.match(e.message, re);
    return true;
  };
}

describe("parseBoardFlag", () => {
  it("cpu:key=cpu", () => {
    assert.deepEqual(parseBoardFlag("cpu:key=cpu", 0), { kind: "cpu", key: "cpu", name: "cpu0", labels: {}, index: undefined, options: {} });
  });

  it("defaults the key to the kind and the name to kind + position", () => {
    const b = parseBoardFlag("cpu", 3);
    assert.equal(b.key, "cpu");
    assert.equal(b.name, "cpu3");
  });

  it("cpu:key=cpu,name=c0,zone=a → name c0, label zone=a (reserved keys are not labels)", () => {
    const b = parseBoardFlag("cpu:key=cpu,name=c0,zone=a", 0);
    assert.equal(b.kind, "cpu");
    assert.equal(b.key, "cpu");
    assert.equal(b.name, "c0");
    assert.deepEqual(b.labels, { zone: "a" });
    assert.deepEqual(b.options, {});
  });

  it("refuses what does not parse, showing the grammar", () => {
    const grammar = /the form is KIND\[:DEVICE\]\[:KEY=VALUE,\.\.\.\], e\.g\. cpu:key=cpu/;
    for (const [flag, why] of [
      ["cpu:rasp4b", /"rasp4b" is not KEY=VALUE \(cpu boards take no device number; to name one, give name=…\)/],
      ["cpu:key", /"key" needs a value \(key=…\)/],
      ["vta-sim:7", /"7" is not KEY=VALUE \(vta-sim boards take no device number/],
      ["cpu:1:key=big", /"1" is not KEY=VALUE/],
      ["cpu:", /an empty part between colons/],
      ["cuda:key=a:0", /the device "0" must come right after the kind/],
      ["cpu:key=a,key=b", /key is given twice/],
      ["cpu:key=a,=b", /"=b" is not KEY=VALUE/],
    ] as const) {
      assert.throws(() => parseBoardFlag(flag, 0), invalid(why), flag);
      assert.throws(() => parseBoardFlag(flag, 0), invalid(grammar), flag);
    }
  });

  it("cuda:0:key=h100 → device 0; cuda:key=h100 defaults to device 0; cuda:all stays for the agent to expand", () => {
    const b = parseBoardFlag("cuda:0:key=h100", 3);
    assert.equal(b.kind, "cuda");
    assert.equal(b.name, "cuda0");
    assert.equal(b.options.device, 0);
    const d = parseBoardFlag("cuda:key=h100", 3);
    assert.equal(d.name, "cuda0");
    assert.equal(d.options.device, 0);
    assert.equal(parseBoardFlag("cuda:2:key=h100", 0).options.device, 2);
    const all = parseBoardFlag("cuda:all:key=h100", 0);
    assert.equal(all.index, "all");
    assert.equal(all.options.device, undefined);
    assert.throws(() => parseBoardFlag("cuda:gpu0:key=h100", 0), invalid(/CUDA device "gpu0" must be a device number/));
  });

  it("vta:DEVICE: the device model or a target, with the DMA allocator, the done timeout and the model's hang; each refused where it means nothing", () => {
    assert.deepEqual(parseBoardFlag("vta:model:key=vta", 2), {
      kind: "vta",
      key: "vta",
      name: "vta2",
      labels: {},
      index: "model",
      options: { device: "model" },
    });
    assert.equal(parseBoardFlag("vta:key=vta", 0).options.device, "model", "the model by default");
    assert.deepEqual(parseBoardFlag("vta:pynq:key=pynq,dma=udmabuf0", 0).options, { device: "pynq", dma: "udmabuf0" });
    assert.deepEqual(parseBoardFlag("vta:ultra96:key=u96,dma=cma,done_timeout_ms=2000,zone=lab", 0), {
      kind: "vta",
      key: "u96",
      name: "vta0",
      labels: { zone: "lab" },
      index: "ultra96",
      options: { device: "ultra96", dma: "cma", doneTimeoutMs: 2000 },
    });
    assert.equal(parseBoardFlag("vta:model:key=vta,hang=/tmp/hang", 0).options.hang, "/tmp/hang");
    for (const [flag, why] of [
      ["vta:kria:key=vta", /VTA device "kria" is not known; give model \(the register-level device model\) or a target: pynq, ultra96, zcu104/],
      ["vta:pynq:key=vta,hang=always", /hang= injects a fault into the device model; a pynq board hangs on its own/],
      ["vta:model:key=vta,dma=cma", /dma= chooses a board's allocator; the device model has its own memory/],
      ["vta:model:key=vta,done_timeout_ms=soon", /done_timeout_ms=soon is not a positive number of milliseconds/],
      ["cpu:key=cpu,dma=cma,hang=always", /dma, hang are options of vta boards, not cpu/],
    ] as const) {
      assert.throws(() => parseBoardFlag(flag, 0), invalid(why), flag);
    }
  });

  it("expandBoards leaves indexed boards alone and refuses KIND:all for kinds without devices", async () => {
    const boards = [parseBoardFlag("cpu:key=cpu", 0), parseBoardFlag("cuda:1:key=h100", 1)];
    assert.deepEqual(await expandBoards(boards), boards);
    assert.throws(() => parseBoardFlag("cpu:all:key=cpu", 0), invalid(/cpu boards take no device number/));
  });

  it("memory=512m → options.memoryBytes, not a label", () => {
    const b = parseBoardFlag("cpu:key=small,memory=512m", 0);
    assert.equal(b.options.memoryBytes, 512 * 1024 * 1024);
    assert.deepEqual(b.labels, {});
    assert.equal(parseBoardFlag("cpu:memory=1048576", 0).options.memoryBytes, 1 << 20);
  });

  it("tvm:key=K,tvm_home=DIR,python=PATH → where TVM is, not labels; refused on other kinds", () => {
    const b = parseBoardFlag("tvm:key=rasp4,tvm_home=/opt/tvm,python=/usr/bin/python3,zone=a", 0);
    assert.deepEqual(b, {
      kind: "tvm",
      key: "rasp4",
      name: "tvm0",
      labels: { zone: "a" },
      index: undefined,
      options: { tvmHome: "/opt/tvm", python: "/usr/bin/python3" },
    });
    assert.throws(() => parseBoardFlag("cpu:key=cpu,tvm_home=/opt/tvm", 0), invalid(/tvm_home is an option of tvm boards, not cpu/));
    assert.throws(() => parseBoardFlag("tvm:0:key=k", 0), invalid(/tvm boards take no device number/));
  });

  it("refuses an unknown kind, naming it and the known kinds", () => {
    assert.throws(() => parseBoardFlag("tpu:key=tpu", 0), invalid(/unknown board kind "tpu".*known kinds: cpu/));
    assert.throws(() => parseBoardFlag("", 0), invalid(/unknown board kind/));
    assert.throws(() => parseBoardFlag(":key=cpu", 0), invalid(/unknown board kind/));
  });

  it("refuses malformed pairs, quoting the bad pair", () => {
    assert.throws(() => parseBoardFlag("cpu:key=cpu,zone", 0), invalid(/"zone" is not KEY=VALUE/));
    assert.throws(() => parseBoardFlag("cpu:key=cpu,=a", 0), invalid(/"=a" is not KEY=VALUE/));
    assert.throws(() => parseBoardFlag("cpu:key=cpu,,zone=a", 0), invalid(/"" is not KEY=VALUE/));
  });

  it("refuses a bad memory size", () => {
    assert.throws(() => parseBoardFlag("cpu:memory=lots", 0), invalid(/"lots" is not a size/));
  });

  it("refuses key and name characters outside the allowed set", () => {
    assert.throws(() => parseBoardFlag("cpu:key=a b", 0), invalid(/key "a b" may hold only/));
    assert.throws(() => parseBoardFlag("cpu:key=a/b", 0), invalid(/key "a\/b"/));
    assert.throws(() => parseBoardFlag("cpu:key=", 0), invalid(/key ""/));
    assert.throws(() => parseBoardFlag("cpu:key=cpu,name=c/0", 0), invalid(/name "c\/0" may hold only/));
    // ':' is allowed in a key, '.', '_' and '-' in both
    assert.equal(parseBoardFlag("cpu:key=a.b_c-d,name=n.1_x-y", 0).key, "a.b_c-d");
  });
});

describe("readAgentConfigFile", () => {
  const dir = mkdtempSync(join(tmpdir(), "kf-board-config-"));
  after(() => rmSync(dir, { recursive: true, force: true }));

  it("reads a JSON file", () => {
    const path = join(dir, "agent.json");
    writeFileSync(
      path,
      JSON.stringify({
        tracker: "127.0.0.1:9190",
        name: "rack1",
        boards: [
          { kind: "cpu", key: "cpu", name: "c0", labels: { zone: "a", slot: 3 } },
          { kind: "cpu", key: "small", options: { memoryBytes: 1024 }, index: 2 },
        ],
      }),
    );
    const cfg = readAgentConfigFile(path);
    assert.equal(cfg.tracker, "127.0.0.1:9190");
    assert.equal(cfg.name, "rack1");
    assert.deepEqual(cfg.boards, [
      { kind: "cpu", key: "cpu", name: "c0", labels: { zone: "a", slot: "3" }, index: undefined, options: {} },
      { kind: "cpu", key: "small", name: "cpu1", labels: {}, index: "2", options: { memoryBytes: 1024 } },
    ]);
  });

  it("reads a YAML file", () => {
    const path = join(dir, "agent.yaml");
    writeFileSync(
      path,
      ["tracker: tracker.local:9190", "boards:", "  - kind: cpu", "    key: cpu", "    labels:", "      zone: b", "  - kind: cpu", "    name: spare", ""].join(
        "\n",
      ),
    );
    const cfg = readAgentConfigFile(path);
    assert.equal(cfg.tracker, "tracker.local:9190");
    assert.equal(cfg.name, undefined);
    assert.deepEqual(
      cfg.boards.map((b) => [b.kind, b.key, b.name, b.labels]),
      [
        ["cpu", "cpu", "cpu0", { zone: "b" }],
        ["cpu", "cpu", "spare", {}],
      ],
    );
  });

  it("reads agent settings under agent:, sizes as on the command line", () => {
    const path = join(dir, "settings.yaml");
    writeFileSync(
      path,
      "boards: [{ kind: cpu }]\nagent:\n  maxUploadBytes: 512m\n  maxSessionBytes: 4096\n  callTimeoutMs: 60000\n  warmWorkers: 2\n  canaryIntervalMs: 0\n  metricsPort: 9192\n  metricsHost: 0.0.0.0\n",
    );
    assert.deepEqual(readAgentConfigFile(path).settings, {
      maxUploadBytes: 512 * 1024 * 1024,
      maxSessionBytes: 4096,
      callTimeoutMs: 60000,
      warmWorkers: 2,
      canaryIntervalMs: 0,
      metricsPort: 9192,
      metricsHost: "0.0.0.0",
    });
    const none = join(dir, "nosettings.yaml");
    writeFileSync(none, "boards: [{ kind: cpu }]\n");
    assert.deepEqual(readAgentConfigFile(none).settings, {});
  });

  it("refuses agent settings it does not know or cannot use, naming the file and setting", () => {
    const cases: [string, RegExp][] = [
      ["agent: [1]", /agent must be a mapping of settings/],
      ["agent: { metricPort: 1 }", /agent\.metricPort is not a setting; known: .*metricsPort/],
      ["agent: { callTimeoutMs: -5 }", /agent\.callTimeoutMs must be a whole number ≥ 0, got -5/],
      ["agent: { warmWorkers: 1.5 }", /agent\.warmWorkers must be a whole number/],
      ["agent: { metricsPort: 70000 }", /agent\.metricsPort must be a port/],
      ["agent: { maxUploadBytes: lots }", /agent\.maxUploadBytes/],
      ["agent: { metricsHost: 5 }", /agent\.metricsHost must be an interface address/],
    ];
    for (const [yaml, why] of cases) {
      const path = join(dir, "bad-settings.yaml");
      writeFileSync(path, `boards: [{ kind: cpu }]\n${yaml}\n`);
      assert.throws(() => readAgentConfigFile(path), invalid(why));
    }
  });

  it("refuses a file without a boards list", () => {
    const path = join(dir, "noboards.yaml");
    writeFileSync(path, "tracker: x:1\n");
    assert.throws(() => readAgentConfigFile(path), invalid(/"boards" must be a list/));
  });

  it("refuses a board of unknown kind, naming its position", () => {
    const path = join(dir, "badkind.json");
    writeFileSync(path, JSON.stringify({ boards: [{ kind: "cpu" }, { kind: "fpga" }] }));
    assert.throws(() => readAgentConfigFile(path), invalid(/boards\[1\]\.kind must be one of cpu/));
  });

  it("refuses a field it does not know (a misspelling), naming it and the fields allowed", () => {
    const cases: [string, RegExp][] = [
      [
        "boards:\n  - kind: cpu\n    lables: { zone: a }\n",
        /boards\[0\]\.lables is not a field here \(misspelled\?\); the fields allowed: kind, key, name, labels, index, options/,
      ],
      ["trackr: x:1\nboards: [{ kind: cpu }]\n", /: trackr is not a field here \(misspelled\?\); the fields allowed: tracker, name, boards, agent/],
      ["boards: [{ kind: cpu, options: { memoryByte: 1024 } }]\n", /boards\[0\]\.options\.memoryByte is not a field here .*memoryBytes/],
      ["boards: [{ kind: cpu, labels: [a, b] }]\n", /boards\[0\]\.labels must be a mapping/],
      ["- kind: cpu\n", /must be a mapping with tracker, name, boards, agent/],
    ];
    for (const [yaml, why] of cases) {
      const path = join(dir, "misspelled.yaml");
      writeFileSync(path, yaml);
      assert.throws(() => readAgentConfigFile(path), invalid(why), yaml);
    }
    const example = readAgentConfigFile(fileURLToPath(new URL("../../deploy/agent.example.yaml", import.meta.url)));
    assert.deepEqual(example.boards[0]!.labels, { zone: "rack1" }, "the deployed example still reads");
  });

  it("refuses a bad key in a file, naming the file", () => {
    const path = join(dir, "badkey.json");
    writeFileSync(path, JSON.stringify({ boards: [{ kind: "cpu", key: "has space" }] }));
    assert.throws(() => readAgentConfigFile(path), invalid(/badkey\.json.*key "has space"/));
  });

  it("refuses a missing or unparsable file, naming the path", () => {
    assert.throws(() => readAgentConfigFile(join(dir, "missing.yaml")), invalid(/cannot read agent config .*missing\.yaml/));
    const path = join(dir, "broken.json");
    writeFileSync(path, "{ boards: ");
    assert.throws(() => readAgentConfigFile(path), invalid(/cannot read agent config .*broken\.json/));
  });
});

describe("parseBytes", () => {
  it("reads plain numbers and k/m/g/t suffixes, with optional i/b and any case", () => {
    assert.equal(parseBytes("1048576", "t"), 1048576);
    assert.equal(parseBytes("0", "t"), 0);
    assert.equal(parseBytes("4k", "t"), 4096);
    assert.equal(parseBytes("512m", "t"), 512 * 2 ** 20);
    assert.equal(parseBytes("512M", "t"), 512 * 2 ** 20);
    assert.equal(parseBytes("4g", "t"), 4 * 2 ** 30);
    assert.equal(parseBytes("2t", "t"), 2 * 2 ** 40);
    assert.equal(parseBytes("1GiB", "t"), 2 ** 30);
    assert.equal(parseBytes("1kb", "t"), 1024);
    assert.equal(parseBytes("1.5k", "t"), 1536);
    assert.equal(parseBytes(" 2m ", "t"), 2 * 2 ** 20);
  });

  it("refuses anything else, naming where it came from", () => {
    for (const text of ["", "m", "-1", "1x", "1 mm", "one", "0x10"]) {
      assert.throws(() => parseBytes(text, "--max-upload-bytes"), invalid(/--max-upload-bytes: .* is not a size/), text);
    }
  });
});
