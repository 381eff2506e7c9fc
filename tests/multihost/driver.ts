/**
 * A host of the multi-host bed, driven by the test: a process inside a
 * network namespace that runs host-SDK verbs (and raw TCP for baselines) as
 * the test asks, one JSON command per stdin line, one JSON reply per stdout
 * line with the same id: `{ id, ok: {...} }` or `{ id, error: { code, message } }`.
 * Commands run concurrently; each reply names how long its work took.
 *
 * It is a real client on its own address: what it sees of cuts and delays
 * on its link is what a user's laptop or CI runner would see.
 */
import { existsSync, readFileSync } from "node:fs";
import { createServer, connect, type Socket } from "node:net";
import { createInterface } from "node:readline";
import { connectTracker, measure, type Candidate, type CompiledModule, type RemoteFunction, type Session, type TrackerClient } from "../../host-sdk/index.ts";
import { FarmError, type Route } from "../../protos/index.ts";
import { compileVadd } from "../helpers/kernels.ts";

type Command = { id: number; op: string } & Record<string, unknown>;

let client: TrackerClient | undefined;
let vadd: Promise<CompiledModule> | undefined;
const sessions = new Map<string, { session: Session; nop?: RemoteFunction }>();

function tracker(): TrackerClient {
  if (!client) throw new Error("connect first");
  return client;
}

function session(sid: unknown): { session: Session; nop?: RemoteFunction } {
  const s = sessions.get(String(sid));
  if (!s) throw new Error(`no session ${String(sid)}`);
  return s;
}

function ms(t0: bigint): number {
  return Number(process.hrtime.bigint() - t0) / 1e6;
}

/** A raw TCP sink: reads a length, then that many bytes, and answers one byte when all arrived. */
function sink(port: number): Promise<number> {
  const server = createServer((sock: Socket) => {
    let want = -1;
    let got = 0;
    let head = Buffer.alloc(0);
    sock.on("data", (chunk: Buffer) => {
      if (want < 0) {
        head = Buffer.concat([head, chunk]);
        if (head.length < 8) return;
        want = Number(head.readBigUInt64BE(0));
        chunk = head.subarray(8);
      }
      got += chunk.length;
      if (got >= want) sock.end(Buffer.from([1]));
    });
    sock.on("error", () => {});
  });
  return new Promise((resolve) => server.listen(port, "0.0.0.0", () => resolve((server.address() as { port: number }).port)));
}

/** Sends `bytes` to a sink and resolves when the sink says it has them all: the same end point as an upload's reply. */
function rawSend(address: string, bytes: number): Promise<number> {
  const [host, port] = address.split(":");
  return new Promise((resolve, reject) => {
    const t0 = process.hrtime.bigint();
    const sock = connect(Number(port), host, () => {
      const head = Buffer.alloc(8);
      head.writeBigUInt64BE(BigInt(bytes));
      sock.write(head);
      const chunk = Buffer.alloc(1 << 20, 7);
      let sent = 0;
      const pump = () => {
        while (sent < bytes) {
          const n = Math.min(chunk.length, bytes - sent);
          sent += n;
          if (!sock.write(n === chunk.length ? chunk : chunk.subarray(0, n))) return void sock.once("drain", pump);
        }
      };
      pump();
    });
    sock.once("data", () => {
      resolve(ms(t0));
      sock.destroy();
    });
    sock.on("error", reject);
  });
}

/** vadd over 1024 floats generated on the board: nothing but the module crosses the network. */
const VADD_ARGS: Candidate["args"] = [
  { random: { seed: 1 }, shape: [1024], dtype: "float32" },
  { random: { seed: 2 }, shape: [1024], dtype: "float32" },
  { output: { shape: [1024], dtype: "float32" } },
  { scalar: 1024 },
];

async function run(cmd: Command): Promise<unknown> {
  switch (cmd.op) {
    case "connect": {
      client = await connectTracker(String(cmd.tracker));
      return {};
    }
    case "request": {
      const t0 = process.hrtime.bigint();
      const s = await tracker().request(String(cmd.key), {
        ...(cmd.route ? { route: cmd.route as Route } : {}),
        ...(cmd.deadlineMs ? { deadlineMs: Number(cmd.deadlineMs) } : {}),
        ...(cmd.sessionTimeoutMs ? { sessionTimeoutMs: Number(cmd.sessionTimeoutMs) } : {}),
        ...(cmd.labels ? { labels: cmd.labels as Record<string, string> } : {}),
      });
      sessions.set(s.id, { session: s });
      return { sid: s.id, board: s.board.id, lane: s.lane, ms: ms(t0) };
    }
    case "load": {
      const s = session(cmd.sid);
      const t0 = process.hrtime.bigint();
      const mod = await s.session.loadModule(await s.session.upload(await (vadd ??= compileVadd())));
      s.nop = mod.getFunction("nop");
      return { ms: ms(t0) };
    }
    case "calls": {
      // n small calls one after another: each is one round trip to the worker.
      const s = session(cmd.sid);
      if (!s.nop) throw new Error("load first");
      const times: number[] = [];
      for (let i = 0; i < Number(cmd.n); i++) {
        const t0 = process.hrtime.bigint();
        await s.nop();
        times.push(ms(t0));
      }
      return { times };
    }
    case "upload": {
      const s = session(cmd.sid);
      const bytes = Buffer.alloc(Number(cmd.bytes), 7);
      const t0 = process.hrtime.bigint();
      await s.session.upload(bytes, String(cmd.name ?? "blob"));
      return { ms: ms(t0) };
    }
    case "close": {
      const s = session(cmd.sid);
      const t0 = process.hrtime.bigint();
      await s.session.close();
      sessions.delete(String(cmd.sid));
      return { ms: ms(t0) };
    }
    case "ended": {
      // How and when the session ended, waiting for it up to timeoutMs.
      const s = session(cmd.sid);
      const t0 = process.hrtime.bigint();
      const until = Date.now() + Number(cmd.timeoutMs ?? 60_000);
      while (!s.session.closedReason && Date.now() < until) {
        // A call notices a dead lane at once; an idle session learns it from the tracker's end.
        await new Promise((r) => setTimeout(r, 20));
      }
      const reason = s.session.closedReason;
      return reason ? { code: reason.code, message: reason.message, ms: ms(t0) } : { code: null, ms: ms(t0) };
    }
    case "measure": {
      const n = Number(cmd.n);
      const candidates: Candidate[] = Array.from({ length: n }, (_, i) => ({
        id: `c${i}`,
        module: () => (vadd ??= compileVadd()),
        function: "vadd",
        args: VADD_ARGS,
        reference: ([a, b]) => [Float32Array.from(a as Float32Array, (x, j) => x + (b as Float32Array)[j]!)],
      }));
      const t0 = process.hrtime.bigint();
      const results = await measure(tracker(), candidates, {
        key: String(cmd.key),
        resultsFile: String(cmd.resultsFile),
        timeEvaluator: { number: Number(cmd.number ?? 1), repeat: Number(cmd.repeat ?? 1) },
        ...(cmd.deadlineMs ? { deadlineMs: Number(cmd.deadlineMs) } : {}),
      });
      const lines = existsSync(String(cmd.resultsFile))
        ? readFileSync(String(cmd.resultsFile), "utf8")
            .trim()
            .split("\n")
            .map((l) => JSON.parse(l) as { id: string; outcome: string })
        : [];
      return {
        ms: ms(t0),
        results: results.map((r) => ({ id: r.id, outcome: r.outcome, board: r.board, attempts: r.attempts, message: r.message })),
        fileIds: lines.map((l) => l.id),
      };
    }
    case "summary": {
      if (!cmd.fresh) return await tracker().summary();
      // On a connection of its own: what the farm looks like now, not when this host's channel next reconnects.
      const fresh = await connectTracker(tracker().address, { connectTimeoutMs: 1000 });
      try {
        return await fresh.summary();
      } finally {
        fresh.close();
      }
    }
    case "sink": {
      return { port: await sink(Number(cmd.port ?? 0)) };
    }
    case "rawsend": {
      return { ms: await rawSend(String(cmd.address), Number(cmd.bytes)) };
    }
    default:
      throw new Error(`unknown op ${cmd.op}`);
  }
}

function reply(msg: unknown): void {
  process.stdout.write(`${JSON.stringify(msg)}\n`);
}

createInterface({ input: process.stdin }).on("line", (line) => {
  const cmd = JSON.parse(line) as Command;
  const t0 = process.hrtime.bigint();
  run(cmd).then(
    (ok) => reply({ id: cmd.id, ok }),
    (err: unknown) => {
      const e = err instanceof FarmError ? err : undefined;
      // How long the command took to fail: a test checks that a failure came within its bound.
      reply({ id: cmd.id, error: { code: e?.code ?? "ERROR", message: (err as Error).message, ms: ms(t0) } });
    },
  );
});
process.stdin.on("end", () => process.exit(0));
reply({ id: 0, ok: { ready: true } });
