/**
 * Hosts that request and release sessions in a loop, with the real host SDK:
 * each host is its own `connectTracker()` client (its own HTTP/2 connection to
 * the tracker, as separate machines would have) and loops
 *
 *   request(key) → [hold the session holdMs] → close()
 *
 * for a fixed time. `request()` resolves with a usable session: the grant
 * arrived on the host's Session stream and the lane it names is open (the
 * board welcomed the host), which is what a host can call on; that wait is
 * the grant latency here. `close()` resolves when the board's clean end
 * came back on the lane.
 *
 * As a process (bench/farm-scale.ts runs several):
 *
 *   node --import tsx bench/lib/host-loops.ts TRACKER HOSTS [--key K] [--hold-ms N] [--stagger-ms N]
 *
 * connects every host, prints "ready", then waits for one line on stdin,
 * `{"warmupMs": W, "durationMs": D}`: the hosts start (spread over the stagger),
 * samples count from W ms after the line until W + D, when no host starts a
 * new request; once every host has released its last session the process
 * prints "result JSON" (HostLoopResult) and exits.
 */
import { fileURLToPath } from "node:url";
import { monitorEventLoopDelay } from "node:perf_hooks";
import { resolve } from "node:path";
import { connectTracker, type Session, type TrackerClient } from "../../host-sdk/index.ts";
import { FarmError } from "../../protos/index.ts";

export interface HostLoopOptions {
  tracker: string;
  hosts: number;
  key: string;
  /** How long each host holds a granted session before it closes it. */
  holdMs: number;
  /** Host i starts its loop at i/hosts × staggerMs, so the hosts do not all ask in the same millisecond. */
  staggerMs: number;
}

export interface HostLoopResult {
  hosts: number;
  /** request() → usable session, ms, of requests started inside the measured window. */
  grantMs: number[];
  /** close() → the board's clean end, ms, of the same sessions. */
  releaseMs: number[];
  /** Every request made, granted, and released cleanly (the whole run, warm-up included). */
  requested: number;
  granted: number;
  released: number;
  /** Sessions whose request completed inside the window (the tracker's CPU per grant divides by this). */
  grantedInWindow: number;
  /** Lanes the granted sessions got. */
  lanes: Record<string, number>;
  /** Failures by code, and the first message of each. */
  errors: Record<string, { count: number; first: string }>;
  /** How late the hosts' event loop ran while they looped (the worst process when merged). */
  loopDelay?: { p99Ms: number; maxMs: number };
}

/** Connected hosts, ready to loop. */
export interface HostFleet {
  run(window: { warmupMs: number; durationMs: number }): Promise<HostLoopResult>;
  close(): void;
}

const now = () => performance.now();
const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));

export async function connectHosts(opts: HostLoopOptions): Promise<HostFleet> {
  const clients: TrackerClient[] = await Promise.all(
    Array.from({ length: opts.hosts }, (_, i) => connectTracker(opts.tracker, { clientId: `host-${process.pid}-${i}`, connectTimeoutMs: 30_000 })),
  );
  return {
    close: () => clients.forEach((c) => c.close()),
    async run({ warmupMs, durationMs }) {
      const t0 = now();
      const from = t0 + warmupMs;
      const until = from + durationMs;
      const r: HostLoopResult = {
        hosts: opts.hosts,
        grantMs: [],
        releaseMs: [],
        requested: 0,
        granted: 0,
        released: 0,
        grantedInWindow: 0,
        lanes: {},
        errors: {},
      };
      const fail = (err: unknown) => {
        const e = FarmError.from(err);
        const seen = (r.errors[e.code] ??= { count: 0, first: e.message });
        seen.count++;
      };
      const loop = async (client: TrackerClient, i: number) => {
        await pause((i / opts.hosts) * opts.staggerMs);
        while (now() < until) {
          const a = now();
          r.requested++;
          let s: Session;
          try {
            s = await client.request(opts.key);
          } catch (err) {
            fail(err);
            continue;
          }
          const b = now();
          r.granted++;
          const measured = a >= from && a < until;
          if (measured) r.grantMs.push(b - a);
          if (b >= from && b < until) r.grantedInWindow++;
          r.lanes[s.lane] = (r.lanes[s.lane] ?? 0) + 1;
          if (opts.holdMs > 0) await pause(opts.holdMs);
          const c = now();
          try {
            await s.close();
            if (s.closedReason && s.closedReason.code !== "SESSION_CLOSED") throw s.closedReason;
            r.released++;
            if (measured) r.releaseMs.push(now() - c);
          } catch (err) {
            fail(err);
          }
        }
      };
      const lag = monitorEventLoopDelay({ resolution: 10 });
      lag.enable();
      await Promise.all(clients.map((c, i) => loop(c, i)));
      lag.disable();
      return { ...r, loopDelay: { p99Ms: lag.percentile(99) / 1e6, maxMs: lag.max / 1e6 } };
    },
  };
}

async function main(): Promise<void> {
  const args = process.argv.slice(2);
  const flag = (name: string, fallback: string) => {
    const i = args.indexOf(name);
    return i >= 0 && args[i + 1] !== undefined ? args.splice(i, 2)[1]! : fallback;
  };
  const key = flag("--key", "sim");
  const holdMs = Number(flag("--hold-ms", "0"));
  const staggerMs = Number(flag("--stagger-ms", "1000"));
  const [tracker, hostsArg] = args;
  const hosts = Number(hostsArg);
  if (!tracker || !(hosts > 0) || !(holdMs >= 0) || !(staggerMs >= 0)) {
    console.error("usage: host-loops.ts TRACKER HOSTS [--key K] [--hold-ms N] [--stagger-ms N]");
    process.exit(2);
  }
  const fleet = await connectHosts({ tracker, hosts, key, holdMs, staggerMs });
  console.log("ready");
  let line = "";
  const go = await new Promise<{ warmupMs: number; durationMs: number }>((resolve, reject) => {
    process.stdin.on("data", (c: Buffer) => {
      line += c.toString();
      const nl = line.indexOf("\n");
      if (nl >= 0) resolve(JSON.parse(line.slice(0, nl)) as { warmupMs: number; durationMs: number });
    });
    process.stdin.on("end", () => reject(new Error("stdin closed before the start line")));
  });
  const result = await fleet.run(go);
  fleet.close();
  process.stdout.write(`result ${JSON.stringify(result)}\n`, () => process.exit(0));
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  main().catch((err) => {
    console.error((err as Error).stack ?? err);
    process.exit(1);
  });
}
