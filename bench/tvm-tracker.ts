/**
 * Benchmark 12, the tracker's own work per grant: TVM's tracker protocol on
 * kernelfarm's tracker (--tvm-port), driven by a TVM-protocol client that is
 * not TVM's (tests/tvm/fake-tvm.ts, written from the protocol description):
 * it sets TCP_NODELAY and sends each frame in one write. It sends REQUEST for
 * a key whose one TVM server is free and waits for the grant,
 * [0, [host, port, matchkey]]: p50/p90 over REQUEST_RUNS requests on one
 * tracker connection, as TVM's TrackerSession keeps one. Between requests
 * (untimed) the client opens and closes the session with the match key, and
 * the server puts itself back with a fresh key, as TVM's does.
 *
 * Against, in the same run: a raw TCP ping-pong of frames of the same sizes
 * with a Node process that answers at once in one write with TCP_NODELAY (the
 * floor for any tracker), and the same server answering as TVM's tracker
 * writes: length and JSON in two writes, without TCP_NODELAY.
 *
 * These are not what a TVM user sees: TVM's own client writes its REQUEST in
 * two sends without TCP_NODELAY, and waits ~44 ms for the tracker's delayed
 * ACK on any tracker, this one included. bench/tvm-stock.ts measures TVM's
 * own client and servers on both trackers.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { once } from "node:events";
import { connect } from "node:net";
import { startTrackerProcess, waitFor } from "../tests/helpers/processes.ts";
import { CODES, FakeRpcServer, SocketReader, TrackerConn, frame, rpcConnect } from "../tests/tvm/fake-tvm.ts";
import { fmtMs, fmtRatio, nowMs, percentile, printTable, verdict } from "./lib/stats.ts";

const WARMUP = 20;
const REQUEST_RUNS = 200;
const PINGPONG_RUNS = 200;
/** Each answer of the two-write server waits for a delayed ACK: fewer runs. */
const TWO_WRITE_RUNS = 40;
/** The tracker's answer to REQUEST must come well under a millisecond of work: the target is a loopback round trip and a little. */
export const TARGET_TVM_GRANT_MS = 1;

/** A one-file echo server in a child process: each frame gets a reply frame of `replyBytes` (one write and TCP_NODELAY, or two writes without). */
const ECHO = `
const net = require("node:net");
const [mode, replyBytes] = [process.argv[1], Number(process.argv[2])];
const pad = replyBytes - JSON.stringify([0, ["127.0.0.1", 9090, ""]]).length;
const body = Buffer.from(JSON.stringify([0, ["127.0.0.1", 9090, "x".repeat(Math.max(0, pad))]]));
const head = Buffer.alloc(4); head.writeInt32LE(body.length);
const server = net.createServer((s) => {
  s.setNoDelay(mode === "one");
  let buf = Buffer.alloc(0);
  s.on("data", (c) => {
    buf = Buffer.concat([buf, c]);
    while (buf.length >= 4 && buf.length >= 4 + buf.readInt32LE(0)) {
      buf = buf.subarray(4 + buf.readInt32LE(0));
      if (mode === "one") s.write(Buffer.concat([head, body])); else { s.write(head); s.write(body); }
    }
  });
});
server.listen(0, "127.0.0.1", () => console.log(server.address().port));
`;

async function echoServer(mode: "one" | "two", replyBytes: number): Promise<{ proc: ChildProcess; port: number }> {
  const proc = spawn(process.execPath, ["-e", ECHO, mode, String(replyBytes)], { stdio: ["ignore", "pipe", "inherit"] });
  const [line] = (await once(proc.stdout!, "data")) as [Buffer];
  return { proc, port: Number(line.toString().trim()) };
}

/** Round trips of `request` (bytes) against an echo server: ms each. */
async function pingPong(port: number, request: Buffer, runs: number): Promise<number[]> {
  const socket = connect({ host: "127.0.0.1", port, noDelay: true });
  await once(socket, "connect");
  const reader = new SocketReader(socket);
  const times: number[] = [];
  for (let i = 0; i < WARMUP + runs; i++) {
    const t0 = nowMs();
    socket.write(request);
    const n = (await reader.read(4)).readInt32LE(0);
    await reader.read(n);
    if (i >= WARMUP) times.push(nowMs() - t0);
  }
  socket.destroy();
  return times;
}

export async function benchTvmTracker(): Promise<void> {
  const tracker = await startTrackerProcess(["--tvm-port", "0"]);
  const server = await FakeRpcServer.start(tracker.tvmAddress!, "bench");
  const echoes: ChildProcess[] = [];
  try {
    const client = await TrackerConn.open(tracker.tvmAddress!);
    const waitPut = (n: number) => waitFor("the TVM server's PUT", () => server.puts >= n, 10_000, 1);
    await waitFor("the TVM server free", async () => ((await client.summary()).queue_info.bench?.free ?? 0) === 1, 15_000);
    const request = frame([CODES.REQUEST, "bench", "", 1]);
    let replyBytes = 0;
    const grant: number[] = [];
    const session: number[] = [];
    for (let i = 0; i < WARMUP + REQUEST_RUNS; i++) {
      const puts = server.puts;
      const t0 = nowMs();
      client.send([CODES.REQUEST, "bench", "", 1]);
      const reply = (await client.next()) as [number, [string, number, string]];
      const t1 = nowMs();
      if (reply[0] !== CODES.SUCCESS) throw new Error(`REQUEST answered ${JSON.stringify(reply)}`);
      const { socket } = await rpcConnect(...reply[1]);
      const t2 = nowMs();
      replyBytes = Buffer.byteLength(JSON.stringify(reply));
      if (i >= WARMUP) {
        grant.push(t1 - t0);
        session.push(t2 - t0);
      }
      socket.destroy();
      await waitPut(puts + 1);
    }
    client.close();

    const one = await echoServer("one", replyBytes);
    const two = await echoServer("two", replyBytes);
    echoes.push(one.proc, two.proc);
    const raw = await pingPong(one.port, request, PINGPONG_RUNS);
    const twoWrites = await pingPong(two.port, request, TWO_WRITE_RUNS);

    const g50 = percentile(grant, 50);
    const r50 = percentile(raw, 50);
    printTable(
      `TVM's tracker protocol: REQUEST → grant on kernelfarm's TVM port with a TCP_NODELAY protocol client (not TVM's), a free TVM server waiting (${REQUEST_RUNS} requests on one connection, key "bench")`,
      [
        {
          figure: "REQUEST → grant, p50",
          value: fmtMs(g50),
          target: `< ${TARGET_TVM_GRANT_MS} ms`,
          verdict: verdict(g50 < TARGET_TVM_GRANT_MS),
          baseline: `raw ping-pong p50 ${fmtMs(r50)}`,
          ratio: fmtRatio(g50 / r50),
        },
        {
          figure: "REQUEST → grant, p90",
          value: fmtMs(percentile(grant, 90)),
          target: "",
          verdict: "",
          baseline: `raw ping-pong p90 ${fmtMs(percentile(raw, 90))}`,
          ratio: fmtRatio(percentile(grant, 90) / percentile(raw, 90)),
        },
        {
          figure: "REQUEST → grant − raw ping-pong, p50 (the tracker's work)",
          value: fmtMs(g50 - r50),
          target: "",
          verdict: "",
          baseline: "",
          ratio: "",
        },
        {
          figure: "REQUEST → server handshake done, p50",
          value: fmtMs(percentile(session, 50)),
          target: "",
          verdict: "",
          baseline: "",
          ratio: "",
        },
        {
          figure: "same ping-pong, answered in two writes without TCP_NODELAY, p50",
          value: fmtMs(percentile(twoWrites, 50)),
          target: "",
          verdict: "",
          baseline: `one write, TCP_NODELAY ${fmtMs(r50)}`,
          ratio: fmtRatio(percentile(twoWrites, 50) / r50),
        },
      ],
      [
        `frames: REQUEST ${request.length} B, grant ${replyBytes + 4} B; the raw ping-pong sends and answers frames of those sizes with a Node process that answers at once (one write, TCP_NODELAY)`,
        `"two writes": the same process writing length and JSON separately without TCP_NODELAY, as TVM's tracker does (and TVM's client, whose request waits ~44 ms on any tracker: bench/tvm-stock.ts)`,
        `the client here is not TVM's: it sets TCP_NODELAY and sends each frame in one write, so these rows are the tracker's own work per grant; the handshake row adds its RPC handshake with a fake server (tests/tvm/fake-tvm.ts), which does no session set-up`,
      ],
    );
  } finally {
    server.stop();
    for (const p of echoes) p.kill();
    await tracker.stop();
  }
}
