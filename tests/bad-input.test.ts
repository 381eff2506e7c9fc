/**
 * Bad input against real tracker and agent processes: every mistake a host can
 * make gets its own FarmError code and a message naming the problem, and
 * afterwards nothing is lost — boards are free again, no request is left
 * queued, and a fresh session on the same farm still works.
 */
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { decodeBundle, describeLimit, encodeBundle, type FarmError, type ModuleBundle } from "../protos/index.ts";
import { OPTION_LIMITS, type OptionLimit } from "../protos/gen/contract.ts";
import { encodeBundleUnchecked } from "../protos/bundle.ts";
import { hostCpuTarget } from "../domain/index.ts";
import { compileCpu, connectTracker, measure, type CompiledModule, type Session, type TimeEvaluatorOptions, type TrackerClient } from "../host-sdk/index.ts";
import { compileVadd } from "./helpers/kernels.ts";
import { startAgentProcess, startFarm, startTrackerProcess, waitFor, waitForFreeBoards } from "./helpers/processes.ts";
import { names, refused } from "./helpers/assertions.ts";

type Farm = Awaited<ReturnType<typeof startFarm>>;

/**
 * Nothing was lost: every board is free, no request is queued, and a fresh
 * session on `key` starts empty and moves data both ways.
 */
async function assertNothingLost(client: TrackerClient, boards: number, key: string): Promise<void> {
  await waitForFreeBoards(client, boards);
  const summary = await client.summary();
  assert.equal(summary.boards.length, boards);
  for (const q of summary.queues) {
    assert.equal(q.pending, 0, `queue ${q.key} still has pending requests`);
    assert.equal(q.free, q.total, `queue ${q.key}: ${q.free} of ${q.total} boards free`);
  }
  const fresh = await client.request(key, { deadlineMs: 15_000 });
  try {
    assert.deepEqual(await fresh.listdir(), []);
    const data = Float32Array.from([1.5, -2, 3.25]);
    const a = await fresh.array(data);
    assert.deepEqual([...((await a.toArray()) as Float32Array)], [...data]);
    await a.free();
  } finally {
    await fresh.close();
  }
  await waitForFreeBoards(client, boards);
}

describe("requests the farm cannot serve", () => {
  let farm: Farm;
  const BOARDS = 2;

  before(async () => {
    farm = await startFarm(["cpu:key=cpu,zone=a", "cpu:key=other"]);
  });
  after(() => farm?.stop());

  it("an unknown key without a deadline of its own is NO_BOARD at once, listing the served keys and saying how to wait", async () => {
    const t0 = performance.now();
    const err = await refused(farm.client.request("h100"), "NO_BOARD");
    const ms = performance.now() - t0;
    assert.ok(ms < 1000, `NO_BOARD took ${ms.toFixed(0)} ms; without a deadline of its own it must not wait for the tracker's default`);
    names(err, '"h100"', "cpu", "other");
    assert.match(err.message, /keys served: cpu, other/);
    assert.match(
      err.message,
      /to wait for a board of "h100" to attach, give it one: request\(key, \{ deadlineMs \}\), in Python request\(key, deadline=SECONDS\)/,
    );
    await assertNothingLost(farm.client, BOARDS, "cpu");
  });

  it("an unknown key with a deadline of its own waits for a board of it to attach, and is granted", async () => {
    const waiting = farm.client.request("late", { deadlineMs: 20_000 });
    // The request is in the tracker's queue before the agent starts: refused at once, it would never get there.
    await waitFor("the request for late waiting in the queue", async () =>
      (await farm.client.summary()).queues.some((q) => q.key === "late" && q.pending === 1),
    );
    const agent = await startAgentProcess(farm.tracker.address, ["cpu:key=late,name=l0"], ["--name", "late-agent"]);
    try {
      const s = await waiting;
      assert.equal(s.board.id, "late-agent/l0");
      await s.close();
    } finally {
      await agent.stop();
    }
    await waitFor("the late agent's board gone", async () => (await farm.client.summary()).boards.length === BOARDS);
  });

  it("an unknown key whose board never comes fails at its own deadline, naming the keys served", async () => {
    const t0 = performance.now();
    const err = await refused(farm.client.request("h200", { deadlineMs: 300 }), "DEADLINE_EXCEEDED");
    assert.ok(performance.now() - t0 >= 290, "it waited for its deadline");
    assert.match(err.message, /no board of key "h200" could serve the request within 300 ms: no board serves key "h200"; keys served: cpu, other/);
    await assertNothingLost(farm.client, BOARDS, "cpu");
  });

  it("a label selector no board has is NO_BOARD, naming the selector and the boards' labels", async () => {
    const t0 = performance.now();
    const err = await refused(farm.client.request("cpu", { labels: { zone: "b" }, deadlineMs: 10_000 }), "NO_BOARD");
    assert.ok(performance.now() - t0 < 1000, "a selector no board can match must not wait in the queue");
    names(err, '"cpu"', '"zone":"b"', "zone=a");
    // A selector that only a board of another key has does not match either.
    await refused(farm.client.request("other", { labels: { zone: "a" }, deadlineMs: 10_000 }), "NO_BOARD");
    // The matching selector is served.
    const s = await farm.client.request("cpu", { labels: { zone: "a" }, deadlineMs: 10_000 });
    assert.equal(s.board.labels.zone, "a");
    await s.close();
    await assertNothingLost(farm.client, BOARDS, "cpu");
  });

  it("a request that must wait past its deadline is DEADLINE_EXCEEDED after it, and leaves the queue", async () => {
    const holder = await farm.client.request("cpu", { deadlineMs: 10_000 });
    try {
      const t0 = performance.now();
      const waiting = refused(farm.client.request("cpu", { deadlineMs: 300 }), "DEADLINE_EXCEEDED");
      await waitFor("the request to be queued", async () => (await farm.client.summary()).queues.find((q) => q.key === "cpu")?.pending === 1, 5000, 10);
      const err = await waiting;
      const ms = performance.now() - t0;
      assert.ok(ms >= 280, `gave up after ${ms.toFixed(0)} ms, before the 300 ms deadline`);
      assert.ok(ms < 1500, `gave up after ${ms.toFixed(0)} ms, long after the 300 ms deadline`);
      names(err, '"cpu"', "300 ms");
      const q = (await farm.client.summary()).queues.find((x) => x.key === "cpu")!;
      assert.deepEqual([q.total, q.free, q.pending], [1, 0, 0]);
      // The holder's session was not disturbed.
      assert.deepEqual(await holder.listdir(), []);
    } finally {
      await holder.close();
    }
    // The board the expired request waited for is not handed to it when freed.
    await assertNothingLost(farm.client, BOARDS, "cpu");
  });

  it("the tracker being unreachable is UNAVAILABLE naming the address", async () => {
    const t0 = performance.now();
    const err = await refused(connectTracker("127.0.0.1:1", { connectTimeoutMs: 500 }), "UNAVAILABLE");
    assert.ok(performance.now() - t0 < 3000, "connectTimeoutMs bounds the wait");
    names(err, "127.0.0.1:1");
  });

  it("measure()'s and connectTracker's numeric options outside contract.json's limits are INVALID_ARGUMENT before anything runs", async () => {
    const t0 = performance.now();
    const badValues = (limit: OptionLimit) => [limit.min - 1, limit.max + 1, Number.NaN, ...(limit.integer ? [limit.min + 0.5] : [])];
    for (const [option, limit] of Object.entries(OPTION_LIMITS.measure)) {
      for (const bad of badValues(limit)) {
        const err = await refused(measure(farm.client, [], { key: "cpu", [option]: bad }), "INVALID_ARGUMENT");
        assert.equal(err.message, `measure ${option} must be ${describeLimit(limit)} (${limit.doc}), got ${bad}`);
      }
    }
    names(await refused(measure(farm.client, [], { key: "cpu", remeasure: { times: -1 } }), "INVALID_ARGUMENT"), "remeasure times must be an integer in [0, ");
    for (const [option, limit] of Object.entries(OPTION_LIMITS.connectTracker)) {
      for (const bad of badValues(limit)) {
        const err = await refused(connectTracker(farm.tracker.address, { [option]: bad }), "INVALID_ARGUMENT");
        assert.equal(err.message, `connectTracker ${option} must be ${describeLimit(limit)} (${limit.doc}), got ${bad}`);
      }
    }
    assert.ok(performance.now() - t0 < 2000, "refused at once, not after a wait");
    await assertNothingLost(farm.client, BOARDS, "cpu");
  });

  it("a tracker that goes away after connecting is UNAVAILABLE naming its address", async () => {
    const tracker = await startTrackerProcess();
    const client = await connectTracker(tracker.address, { rpcTimeoutMs: 3000 });
    try {
      assert.equal((await client.summary()).boards.length, 0);
      await tracker.stop();
      const err = await refused(client.summary(), "UNAVAILABLE");
      names(err, tracker.address);
      const err2 = await refused(client.request("cpu", { deadlineMs: 1000 }), "UNAVAILABLE");
      names(err2, tracker.address);
    } finally {
      client.close();
      await tracker.stop();
    }
  });

  it("connectTracker at the tracker's HTTP or TVM port says what answered and which port to use, at once", async () => {
    const tracker = await startTrackerProcess(["--metrics-port", "0", "--tvm-port", "0"]);
    try {
      const cases: [string, RegExp][] = [
        [tracker.httpAddress!, /answered in HTTP\/1\.1, not gRPC: it is an HTTP port \(the tracker's --metrics-port/],
        [tracker.tvmAddress!, /answered with TVM's tracker magic \(0x2f271\), not gRPC: it is a TVM tracker port \(the tracker's --tvm-port/],
      ];
      for (const [address, what] of cases) {
        const t0 = performance.now();
        const err = await refused(connectTracker(address, { connectTimeoutMs: 20_000 }), "UNAVAILABLE");
        const ms = performance.now() - t0;
        names(err, address);
        assert.match(err.message, what);
        assert.match(
          err.message,
          /connect to the tracker's gRPC port instead: the one `kfarm tracker` prints as "listening on" \(its --port, 9190 unless set\)/,
        );
        assert.doesNotMatch(err.message, /running there/);
        assert.ok(ms < 5000, `told after ${ms.toFixed(0)} ms: another protocol answering is known at the first attempt, not at the 20 s timeout`);
      }
      // The gRPC port itself still connects.
      (await connectTracker(tracker.address)).close();
    } finally {
      await tracker.stop();
    }
  });

  it("a closed client says so, with a FarmError naming what to do (not grpc-js's 'Channel has been shut down')", async () => {
    const client = await connectTracker(farm.client.address);
    client.close();
    for (const call of [() => client.request("cpu"), () => client.summary(), () => client.boardCommand("a/b", "drain")]) {
      const err = await refused(call(), "INVALID_ARGUMENT");
      assert.match(err.message, /was closed with close\(\): connect again with connectTracker\("127\.0\.0\.1:\d+"\)/);
    }
  });
});

describe("bad input inside a session", () => {
  let farm: Farm;
  let vadd: CompiledModule;
  const BOARDS = 2;
  const MiB = 1 << 20;

  before(async () => {
    [farm, vadd] = await Promise.all([
      startFarm(["cpu:key=cpu", "cpu:key=small,memory=1m"], { agentArgs: ["--max-upload-bytes", "1m", "--max-session-bytes", "3m"] }),
      compileVadd(),
    ]);
  });
  after(() => farm?.stop());

  async function withSession<T>(key: string, body: (s: Session) => Promise<T>): Promise<T> {
    const s = await farm.client.request(key, { deadlineMs: 15_000 });
    try {
      return await body(s);
    } finally {
      await s.close();
    }
  }

  /** A bundle with the vadd functions, changed by `edit`, encoded (and validated). */
  function foreignBundle(edit: (b: ModuleBundle) => void): Uint8Array {
    const b = decodeBundle(vadd.bytes);
    edit(b);
    return encodeBundle(b);
  }

  it("random bytes loaded as a module are BAD_BUNDLE", async () => {
    await withSession("cpu", async (s) => {
      const junk = new Uint8Array(4096);
      let x = 0x12345678;
      for (let i = 0; i < junk.length; i++) junk[i] = (x = (Math.imul(x, 1103515245) + 12345) >>> 0) >>> 24;
      await s.upload(junk, "junk.kfm");
      const err = await refused(s.loadModule("junk.kfm"), "BAD_BUNDLE");
      assert.match(err.message, /module bundle/);
      // A record of the bundle's schema that is not a kernelfarm bundle names the field.
      await s.upload(encodeBundleUnchecked({ ...decodeBundle(vadd.bytes), format: "tvm.module" as ModuleBundle["format"] }), "tvm.kfm");
      const err2 = await refused(s.loadModule("tvm.kfm"), "BAD_BUNDLE");
      names(err2, "format", "tvm.module");
      // A module that was never uploaded is NOT_FOUND, naming it.
      names(await refused(s.loadModule("never.kfm"), "NOT_FOUND"), "never.kfm");
      // The session still loads a good module afterwards.
      await s.upload(vadd);
      const mod = await s.loadModule(vadd.name);
      assert.ok(mod.functions.some((f) => f.name === "vadd"));
    });
    await assertNothingLost(farm.client, BOARDS, "cpu");
  });

  it("a plain .so, a cubin, a fatbin or TVM's lib.tar loaded as a module: BAD_BUNDLE saying what it is and what to do", async () => {
    const elf = decodeBundle(vadd.bytes).binary;
    const cubin = Uint8Array.from(elf);
    cubin[18] = 190; // e_machine EM_CUDA
    cubin[19] = 0;
    const tar = new Uint8Array(1024);
    tar.set(Buffer.from("lib.so"), 0);
    tar.set(Buffer.from("ustar\x0000"), 257);
    const fatbin = Uint8Array.from([0x50, 0xed, 0x55, 0xba, 1, 0, 16, 0, ...new Array(56).fill(0)]);
    await withSession("cpu", async (s) => {
      for (const [name, bytes, format, what] of [
        ["vadd.so", elf, "elf", /a plain ELF file \(a shared object such as a \.so\)/],
        ["k.cubin", cubin, "cubin", /a CUDA cubin/],
        ["k.fatbin", fatbin, "fatbin", /a CUDA fatbin/],
        ["lib.tar", tar, "tar", /a tar archive \(TVM's export_library lib\.tar\?\): TVM modules are not supported yet/],
      ] as const) {
        await s.upload(bytes, name);
        const err = await refused(s.loadModule(name), "BAD_BUNDLE");
        assert.match(err.message, what, name);
        assert.match(err.message, /compileCpu \(C\), compileCuda \(CUDA\) or compileVta/, name);
        assert.doesNotMatch(err.message, /msgpack/, name);
        assert.equal(err.details?.format, format, name);
      }
    });
    await assertNothingLost(farm.client, BOARDS, "cpu");
  });

  it("uploading a directory or a missing file is a FarmError naming the path", async () => {
    await withSession("cpu", async (s) => {
      names(await refused(s.upload(tmpdir()), "INVALID_ARGUMENT"), tmpdir(), "a directory");
      names(await refused(s.upload(join(tmpdir(), "no-such-kernel.so")), "NOT_FOUND"), "no-such-kernel.so", "no such file on this host");
      await s.listdir(); // the session goes on
    });
  });

  it("a bundle for another target is TARGET_MISMATCH naming both targets", async () => {
    await withSession("cpu", async (s) => {
      const cuda = foreignBundle((b) => {
        b.target = "cuda";
        b.targetDetails = { arch: "sm_90", format: "cubin" };
      });
      await s.upload(cuda, "cuda.kfm");
      const err = await refused(s.loadModule("cuda.kfm"), "TARGET_MISMATCH");
      names(err, "cuda", "sm_90", "cpu", "cuda.kfm");

      const here = hostCpuTarget();
      const otherArch = here.arch === "aarch64" ? "x86_64" : "aarch64";
      const arm = foreignBundle((b) => {
        b.targetDetails = { ...b.targetDetails, arch: otherArch };
      });
      await s.upload(arm, "other-arch.kfm");
      const err2 = await refused(s.loadModule("other-arch.kfm"), "TARGET_MISMATCH");
      names(err2, `${here.os}/${otherArch}`, `${here.os}/${here.arch}`);
    });
    await assertNothingLost(farm.client, BOARDS, "cpu");
  });

  const cross = hostCpuTarget().arch === "aarch64" ? "x86_64-linux-gnu-gcc" : "aarch64-linux-gnu-gcc";
  const crossArch = cross.split("-")[0]!;
  it(
    `a module cross-compiled with ${cross} says ${crossArch}, and a ${hostCpuTarget().arch} board refuses it TARGET_MISMATCH naming both`,
    {
      skip:
        spawnSync(cross, ["--version"]).status === 0
          ? false
          : `no ${cross} on this host (Debian: apt-get install gcc-${cross.replace(/-gcc$/, "").replace(/_/g, "-")})`,
    },
    async () => {
      const module = await compileCpu("void f(int* a) { a[0] = 1; }\n", { functions: { f: ["int32* a"] }, cc: cross });
      assert.deepEqual(decodeBundle(module.bytes).targetDetails, { arch: crossArch, os: "linux" });
      await withSession("cpu", async (s) => {
        await s.upload(module);
        const err = await refused(s.loadModule(module.name), "TARGET_MISMATCH");
        names(err, `linux/${crossArch}`, `${hostCpuTarget().os}/${hostCpuTarget().arch}`, "cc option");
        await s.listdir(); // the session goes on
      });
    },
  );

  it("upload names that are not plain file names are INVALID_NAME", async () => {
    await withSession("cpu", async (s) => {
      const bytes = Buffer.from("payload");
      for (const [name, why] of [
        ["a/b", "path separator"],
        ["../escape", "path separator"],
        ["..", '".."'],
        ["a..b", '".."'],
        ["", "empty"],
        ["x\\y", "path separator"],
        ["bell\u0007", "control character"],
        ["n".repeat(300), "is 300 bytes long"],
        ["é".repeat(200), "is 400 bytes long"],
      ] as const) {
        const err = await refused(s.upload(bytes, name), "INVALID_NAME");
        // A long name is quoted by its first 40 characters.
        names(err, name.length > 40 ? JSON.stringify(name.slice(0, 40)).slice(0, -1) : JSON.stringify(name), why);
      }
      // The other file operations check names too.
      await refused(s.download("../etc/passwd"), "INVALID_NAME");
      await refused(s.remove("a/b"), "INVALID_NAME");
      await refused(s.loadModule("../x.kfm"), "INVALID_NAME");
      assert.deepEqual(await s.listdir(), [], "no refused upload left a file behind");
      await s.upload(bytes, "fine.txt");
      assert.deepEqual(await s.listdir(), [{ name: "fine.txt", size: bytes.length }]);
    });
    await assertNothingLost(farm.client, BOARDS, "cpu");
  });

  it("an upload over the per-file cap is TOO_LARGE, and the session goes on", async () => {
    await withSession("cpu", async (s) => {
      const err = await refused(s.upload(Buffer.alloc(MiB + 1, 1), "big.bin"), "TOO_LARGE");
      names(err, "big.bin", String(MiB + 1), `at most ${MiB} bytes per file`);
      // Far over the cap: the host stops sending once the board said no.
      await refused(s.upload(Buffer.alloc(5 * MiB, 2), "huge.bin"), "TOO_LARGE");
      // An upload that announces a small size but sends more is cut off, and nothing of it is kept.
      const liar = Buffer.alloc(2 * MiB, 3);
      const err2 = await refused(
        s.sendChunked(liar, (chunk, _offset, done) => ({ upload: { name: "liar.bin", total_bytes: 10, data: chunk, done } })),
        "TOO_LARGE",
      );
      names(err2, "liar.bin", `at most ${MiB} bytes per file`);
      assert.deepEqual(await s.listdir(), [], "refused uploads left no file behind");
      await s.upload(Buffer.from("small"), "small.txt");
      const exact = Buffer.alloc(MiB, 4);
      await s.upload(exact, "exact.bin");
      assert.deepEqual(await s.listdir(), [
        { name: "exact.bin", size: MiB },
        { name: "small.txt", size: 5 },
      ]);
      assert.ok((await s.download("exact.bin")).equals(exact));
    });
    await assertNothingLost(farm.client, BOARDS, "cpu");
  });

  it("uploads past the per-session cap are TOO_LARGE, and freeing space makes room", async () => {
    await withSession("cpu", async (s) => {
      for (const n of [1, 2, 3]) await s.upload(Buffer.alloc(MiB, n), `f${n}.bin`);
      const err = await refused(s.upload(Buffer.from("x"), "one-byte-more.bin"), "TOO_LARGE");
      names(err, "one-byte-more.bin", String(3 * MiB + 1), `${3 * MiB} bytes per session`);
      assert.deepEqual(
        (await s.listdir()).map((f) => f.name),
        ["f1.bin", "f2.bin", "f3.bin"],
      );
      // Replacing a file counts only its new size.
      await s.upload(Buffer.alloc(MiB, 9), "f1.bin");
      assert.equal((await s.download("f1.bin"))[0], 9);
      await s.remove("f2.bin");
      await s.upload(Buffer.from("x"), "one-byte-more.bin");
      assert.deepEqual(
        (await s.listdir()).map((f) => [f.name, f.size]),
        [
          ["f1.bin", MiB],
          ["f3.bin", MiB],
          ["one-byte-more.bin", 1],
        ],
      );
    });
    await assertNothingLost(farm.client, BOARDS, "cpu");
  });

  it("an unknown function is UNKNOWN_FUNCTION on the host and on the board", async () => {
    await withSession("cpu", async (s) => {
      await s.upload(vadd);
      const mod = await s.loadModule(vadd.name);
      const host = await refused(() => mod.getFunction("nope"), "UNKNOWN_FUNCTION");
      names(host, '"nope"', "vadd", "scale", "nop");
      await refused(() => s.timeEvaluator("nope"), "UNKNOWN_FUNCTION");
      // Bypass the host's check: the board refuses too.
      const board = await refused(s.request({ call: { module: mod.id, function: "nope", args: [], timeout_ms: 0 } }), "UNKNOWN_FUNCTION");
      names(board, '"nope"', "vadd", "scale", "nop");
      // A module id the session never loaded is NOT_FOUND.
      names(await refused(s.request({ call: { module: mod.id + 100, function: "vadd", args: [], timeout_ms: 0 } }), "NOT_FOUND"), `module ${mod.id + 100}`);
      await mod.getFunction("nop")();
    });
    await assertNothingLost(farm.client, BOARDS, "cpu");
  });

  it("wrong arguments are BAD_ARGUMENTS naming the parameter, and a correct call still works", async () => {
    await withSession("cpu", async (s) => {
      await s.upload(vadd);
      const mod = await s.loadModule(vadd.name);
      const fn = mod.getFunction("vadd");
      const n = 8;
      const a = await s.array(Float32Array.from({ length: n }, (_, i) => i));
      const b = await s.array(new Float32Array(n).fill(10));
      const c = await s.array({ shape: [n], dtype: "float32" });
      const ints = await s.array(new Int32Array(n));
      const signature = "vadd(float32* a, float32* b, float32* c, int32 n)";

      const count = await refused(fn(a, b, c), "BAD_ARGUMENTS");
      names(count, signature, "takes 4 argument(s), got 3");
      names(await refused(fn(a, b, c, n, n), "BAD_ARGUMENTS"), "got 5");

      const dtype = await refused(fn(ints, b, c, n), "BAD_ARGUMENTS");
      names(dtype, "argument 0 (a)", "float32 array", "got int32");

      const scalarForArray = await refused(fn(a, 3, c, n), "BAD_ARGUMENTS");
      names(scalarForArray, "argument 1 (b)", "float32 array", "got a scalar");

      const arrayForScalar = await refused(fn(a, b, c, a), "BAD_ARGUMENTS");
      names(arrayForScalar, "argument 3 (n)", "int32 scalar", "got an array");

      // A float for an int scalar, sent as the wire's float_value.
      const float = await refused(
        s.request({
          call: { module: mod.id, function: "vadd", args: [{ array: a.id }, { array: b.id }, { array: c.id }, { float_value: 1.5 }], timeout_ms: 0 },
        }),
        "BAD_ARGUMENTS",
      );
      names(float, "argument 3 (n)", "integer", "1.5");
      // The host SDK sends a non-integer number the same way, and gets the same answer.
      names(await refused(fn(a, b, c, 1.5), "BAD_ARGUMENTS"), "argument 3 (n)", "1.5");

      // An integer outside the parameter's dtype: 2^32 + 8 must not wrap to 8 and run.
      names(await refused(fn(a, b, c, 2 ** 32 + n), "BAD_ARGUMENTS"), "argument 3 (n)", "int32", String(2 ** 32 + n));
      names(await refused(fn(a, b, c, -(2 ** 31) - 1), "BAD_ARGUMENTS"), "argument 3 (n)", String(-(2 ** 31) - 1));

      // A freed or unknown array is NOT_FOUND naming it.
      names(
        await refused(
          s.request({ call: { module: mod.id, function: "vadd", args: [{ array: 999 }, { array: b.id }, { array: c.id }, { int_value: n }], timeout_ms: 0 } }),
          "NOT_FOUND",
        ),
        "array 999",
      );

      // Numeric options outside contract.json's limits are refused on the host, before anything is sent: a negative
      // repeat would travel as the uint32 4294967295 and spin the board until its timeout.
      const t0 = performance.now();
      const evaluatorRefusal = (opts: TimeEvaluatorOptions) => {
        try {
          s.timeEvaluator("vadd", opts);
        } catch (err) {
          return err as FarmError;
        }
        assert.fail(`timeEvaluator took ${JSON.stringify(opts)}`);
      };
      const repeat = evaluatorRefusal({ repeat: -1 });
      assert.equal(repeat.code, "INVALID_ARGUMENT");
      assert.equal(repeat.message, "timeEvaluator repeat must be an integer in [1, 4294967295] (repeats, each one result), got -1");
      for (const [option, limit] of Object.entries(OPTION_LIMITS.timeEvaluator)) {
        for (const bad of [limit.min - 1, limit.maxExclusive ? limit.max : limit.max + 1, Number.NaN, limit.integer ? limit.min + 0.5 : Infinity]) {
          const e = evaluatorRefusal({ [option]: bad });
          assert.equal(e.code, "INVALID_ARGUMENT", e.message);
          assert.equal(e.message, `timeEvaluator ${option} must be ${describeLimit(limit)} (${limit.doc}), got ${bad}`);
        }
      }
      names(await refused(fn.withOptions({ timeoutMs: -5 })(a, b, c, n), "INVALID_ARGUMENT"), "call timeoutMs must be an integer in [1, 4294967295]", "got -5");
      assert.ok(performance.now() - t0 < 1000, "refused at once, not at the board's timeout");

      // Nothing ran: c is still zero. Then a correct call works in the same session.
      assert.deepEqual([...((await c.toArray()) as Float32Array)], new Array(n).fill(0));
      await fn(a, b, c, n);
      assert.deepEqual(
        [...((await c.toArray()) as Float32Array)],
        Array.from({ length: n }, (_, i) => i + 10),
      );
      assert.equal((await s.stats()).counters.calls, 1, "only the correct call reached the kernel");
    });
    await assertNothingLost(farm.client, BOARDS, "cpu");
  });

  it("an array larger than the board's memory is OUT_OF_MEMORY naming the sizes", async () => {
    await withSession("small", async (s) => {
      const err = await refused(s.array({ shape: [512 * 1024], dtype: "float32" }), "OUT_OF_MEMORY");
      names(err, "[524288] float32", String(2 * MiB), `${MiB} of its ${MiB} bytes`);
      // Memory is per session and counts what is held.
      const big = await s.array({ shape: [768 * 1024], dtype: "uint8" });
      const err2 = await refused(s.array({ shape: [512 * 1024], dtype: "uint8" }), "OUT_OF_MEMORY");
      names(err2, String(512 * 1024), `${256 * 1024} of its ${MiB} bytes`);
      await big.free();
      const fits = await s.array(new Uint8Array(MiB).fill(5));
      assert.equal(((await fits.toArray()) as Uint8Array)[MiB - 1], 5);
      // A dimension past uint32 would wrap on the wire into a small array: refused by name.
      names(await refused(s.array({ shape: [2 ** 32 + 8], dtype: "uint8" }), "BAD_ARGUMENTS"), String(2 ** 32 + 8), "split a larger one");
    });
    await assertNothingLost(farm.client, BOARDS, "small");
  });

  it("array() of something that is neither data nor { shape, dtype } is BAD_ARGUMENTS saying what it takes", async () => {
    await withSession("cpu", async (s) => {
      const takes = ["typed array", "new Float32Array([1, 2, 3])", "Float64Array", "{ shape, dtype }", "int8, uint8", "float64"];
      // TVM's tvm.nd.array takes a list; "unknown dtype undefined" said nothing of what array() takes.
      const plain = await refused(s.array([1, 2, 3] as never), "BAD_ARGUMENTS");
      names(plain, "array(): a plain array has no dtype", ...takes);
      assert.doesNotMatch(plain.message, /undefined/);
      names(await refused(s.array({ shape: [3] } as never), "BAD_ARGUMENTS"), "{ shape, dtype } with no dtype", ...takes);
      names(await refused(s.array({ shape: [3], dtype: "half" } as never), "BAD_ARGUMENTS"), 'dtype "half", not one a board holds', ...takes);
      names(await refused(s.array(new Uint8ClampedArray(3) as never), "BAD_ARGUMENTS"), "a Uint8ClampedArray holds no dtype", ...takes);
      names(await refused(s.array(new DataView(new ArrayBuffer(4)) as never), "BAD_ARGUMENTS"), "a DataView", ...takes);
      names(await refused(s.array(3 as never), "BAD_ARGUMENTS"), "array(): got 3", ...takes);
      assert.deepEqual([...((await (await s.array(new Float32Array([1, 2, 3]))).toArray()) as Float32Array)], [1, 2, 3]);
    });
  });

  it("anything after close is SESSION_CLOSED", async () => {
    const s = await farm.client.request("cpu", { deadlineMs: 15_000 });
    await s.upload(vadd);
    const mod = await s.loadModule(vadd.name);
    const nop = mod.getFunction("nop");
    const a = await s.array(new Float32Array(4));
    await s.close();
    assert.equal(s.isClosed, true);
    names(await refused(nop(), "SESSION_CLOSED"), s.id);
    await refused(s.listdir(), "SESSION_CLOSED");
    await refused(s.upload(Buffer.from("x"), "late.txt"), "SESSION_CLOSED");
    await refused(s.loadModule(vadd.name), "SESSION_CLOSED");
    await refused(s.array(new Float32Array(4)), "SESSION_CLOSED");
    await refused(a.toArray(), "SESSION_CLOSED");
    await refused(mod.timeEvaluator("nop", { repeat: 1 })(), "SESSION_CLOSED");
    await assertNothingLost(farm.client, BOARDS, "cpu");
  });

  it("after all of that, the farm still runs a kernel correctly", async () => {
    await withSession("cpu", async (s) => {
      await s.upload(vadd);
      const fn = (await s.loadModule(vadd.name)).getFunction("vadd");
      const n = 1000;
      const a = await s.array(Float32Array.from({ length: n }, (_, i) => i));
      const b = await s.array(Float32Array.from({ length: n }, (_, i) => 2 * i));
      const c = await s.array({ shape: [n], dtype: "float32" });
      await fn(a, b, c, n);
      const out = (await c.toArray()) as Float32Array;
      for (let i = 0; i < n; i++) assert.equal(out[i], 3 * i);
    });
    await assertNothingLost(farm.client, BOARDS, "cpu");
  });
});

describe("bad source", () => {
  it("a compile error surfaces the compiler's diagnostic with file and line", async () => {
    const source = ["#include <stdint.h>", "void f(int32_t* a) {", "  a[0] = 1;", "  a[1] = missing_symbol;", "}", ""].join("\n");
    const err = await refused(compileCpu(source, { functions: { f: ["int32* a"] } }), "COMPILE_ERROR");
    assert.match(err.message, /kernel\.c:4:\d+:/);
    names(err, "missing_symbol", "undeclared");
    assert.doesNotMatch(err.message, /kfarm-cc-/, "no temp dir in the message");
  });
});
