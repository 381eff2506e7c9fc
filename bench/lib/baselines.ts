/**
 * Physical baselines, measured in the same run as the figure they judge:
 * plain Node `net` on loopback between this process and a peer process
 * (bench/lib/peer.ts), directly or through a relay process: bulk transfer
 * both ways and a small-message ping-pong.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { once } from "node:events";
import { connect, type Socket } from "node:net";
import { fileURLToPath } from "node:url";
import { CHUNK_BYTES } from "../../protos/index.ts";
import { cpuSeconds, selfCpuSeconds } from "./procs.ts";
import { mbps, nowMs } from "./stats.ts";

const PEER = fileURLToPath(new URL("./peer.ts", import.meta.url));

export interface Peer {
  readonly port: number;
  readonly pid: number;
  stop(): Promise<void>;
}

/** A peer process; with `relayTo`, a relay that forwards every connection to that port. */
export async function startPeer(relayTo?: number): Promise<Peer> {
  const args = relayTo === undefined ? [] : ["--relay", String(relayTo)];
  const proc: ChildProcess = spawn(process.execPath, ["--import", "tsx", PEER, ...args], { stdio: ["pipe", "pipe", "inherit"] });
  const port = await new Promise<number>((resolve, reject) => {
    let out = "";
    proc.stdout!.on("data", (c: Buffer) => {
      out += c.toString();
      const m = /peer listening on (\d+)/.exec(out);
      if (m) resolve(Number(m[1]));
    });
    proc.once("exit", (code) => reject(new Error(`baseline peer exited (code ${code}) before listening`)));
  });
  return {
    port,
    pid: proc.pid!,
    async stop() {
      if (proc.exitCode !== null || proc.signalCode !== null) return;
      const exited = once(proc, "exit");
      proc.kill("SIGTERM");
      await exited;
    },
  };
}

async function open(port: number, mode: number): Promise<Socket> {
  const socket = connect({ port, host: "127.0.0.1", noDelay: true });
  await once(socket, "connect");
  if (mode === 0x50) socket.write(Buffer.from([mode]));
  return socket;
}

function header(mode: number, count: number): Buffer {
  const h = Buffer.alloc(9);
  h[0] = mode;
  h.writeBigUInt64LE(BigInt(count), 1);
  return h;
}

/** MB/s of `repeats` transfers of `bytes` from this process to the peer, each until the peer acknowledged the last byte. */
export async function netUpload(port: number, bytes: number, repeats: number): Promise<number[]> {
  const socket = await open(port, 0x55);
  const data = Buffer.alloc(bytes, 0xa5);
  const out: number[] = [];
  try {
    for (let r = 0; r < repeats; r++) {
      const acked = once(socket, "data");
      const t0 = nowMs();
      socket.write(header(0x55, bytes));
      for (let off = 0; off < bytes; off += CHUNK_BYTES) {
        if (!socket.write(data.subarray(off, Math.min(bytes, off + CHUNK_BYTES)))) await once(socket, "drain");
      }
      await acked;
      out.push(mbps(bytes, nowMs() - t0));
    }
  } finally {
    socket.destroy();
  }
  return out;
}

/** MB/s of `repeats` transfers of `bytes` from the peer to this process, from the request to the last byte. */
export async function netDownload(port: number, bytes: number, repeats: number): Promise<number[]> {
  const socket = await open(port, 0x44);
  const out: number[] = [];
  try {
    for (let r = 0; r < repeats; r++) {
      // Collect into one buffer as a download does.
      const into = Buffer.allocUnsafe(bytes);
      let got = 0;
      const t0 = nowMs();
      const done = new Promise<void>((resolve) => {
        const onData = (c: Buffer) => {
          into.set(c, got);
          got += c.length;
          if (got >= bytes) {
            socket.off("data", onData);
            resolve();
          }
        };
        socket.on("data", onData);
      });
      socket.write(header(0x44, bytes));
      await done;
      out.push(mbps(bytes, nowMs() - t0));
    }
  } finally {
    socket.destroy();
  }
  return out;
}

/** Round-trip times (ms) of `size`-byte messages echoed by the peer, after `warmup` unrecorded ones. */
export async function pingPong(port: number, warmup: number, count: number, size = 16): Promise<number[]> {
  const socket = await open(port, 0x50);
  const msg = Buffer.alloc(size, 1);
  const out: number[] = [];
  let got = 0;
  let wake: (() => void) | undefined;
  socket.on("data", (c: Buffer) => {
    got += c.length;
    if (got >= size && wake) {
      got -= size;
      const w = wake;
      wake = undefined;
      w();
    }
  });
  try {
    for (let i = 0; i < warmup + count; i++) {
      const t0 = nowMs();
      await new Promise<void>((resolve) => {
        wake = resolve;
        socket.write(msg);
      });
      if (i >= warmup) out.push(nowMs() - t0);
    }
  } finally {
    socket.destroy();
  }
  return out;
}

/** Plain-socket figures for 64 MiB-class transfers, direct and through a relay process. */
export interface BulkBaselines {
  /** MB/s per repeat, this process → peer and back, one hop. */
  up: number[];
  down: number[];
  /** MB/s per repeat through a relay process (two hops, like host → tracker → worker). */
  relayUp: number[];
  relayDown: number[];
  /** CPU-s/GB of all processes involved, per path and direction. */
  cpu: string;
}

export async function measureBulkBaselines(bytes: number, repeats: number): Promise<BulkBaselines> {
  const sink = await startPeer();
  const relay = await startPeer(sink.port);
  try {
    const gb = (repeats * bytes) / 1e9;
    const cpuOf = (pids: number[]) => pids.reduce((a, p) => a + (p === process.pid ? selfCpuSeconds() : cpuSeconds(p)), 0);
    const run = async (port: number, pids: number[]) => {
      await netUpload(port, bytes, 1);
      await netDownload(port, bytes, 1);
      const c0 = cpuOf(pids);
      const up = await netUpload(port, bytes, repeats);
      const c1 = cpuOf(pids);
      const down = await netDownload(port, bytes, repeats);
      const c2 = cpuOf(pids);
      return { up, down, cpu: `${((c1 - c0) / gb).toFixed(2)} out / ${((c2 - c1) / gb).toFixed(2)} in` };
    };
    const direct = await run(sink.port, [process.pid, sink.pid]);
    const relayed = await run(relay.port, [process.pid, relay.pid, sink.pid]);
    return {
      up: direct.up,
      down: direct.down,
      relayUp: relayed.up,
      relayDown: relayed.down,
      cpu: `Node net CPU-s/GB, all processes: direct ${direct.cpu}; via relay ${relayed.cpu}`,
    };
  } finally {
    await relay.stop();
    await sink.stop();
  }
}
