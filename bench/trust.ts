/**
 * Benchmark: what trust costs. Four farms of one CPU board run side by side
 * — "shared net" (workers keep the host's network and dial the tracker
 * themselves: the data path before workers were sandboxed), "open" (the
 * default sandbox, workers reach the tracker through the agent's forwarder,
 * device-agent/agent/worker-link.ts; plaintext, no tokens: the baseline for the
 * next two), "tokens" (every call carries a token the tracker verifies) and
 * "tls+tokens" — and each round measures all four in turn, so a drift of the
 * machine lands on all alike:
 *
 * - the small call round trip (a loaded `nop`), p50 over CALLS calls;
 * - an idle grant → first call (listdir), p50;
 * - a 64 MiB upload, MB/s;
 *
 * and, in this process, what the tracker's authorization adds to a grant:
 * the token check plus the scope checks (tracker/auth.ts) per request.
 */
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Metadata } from "@grpc/grpc-js";
import { certsInit } from "../cli/certs.ts";
import { connectTracker, type CompiledModule, type TrackerClient } from "../host-sdk/index.ts";
import { componentLogger } from "../runtime/index.ts";
import { AuditLog } from "../tracker/audit.ts";
import { Authorizer } from "../tracker/auth.ts";
import { TokenFile } from "../tracker/index.ts";
import { compileVadd } from "../tests/helpers/kernels.ts";
import { startAgentProcess, startTrackerProcess, waitFor, type AgentProcess, type TrackerProcess } from "../tests/helpers/processes.ts";
import { timeNopCalls } from "./lib/farm.ts";
import { fmtMBps, fmtMs, fmtRatio, fmtUs, mbps, median, nowMs, percentile, printTable, type Row } from "./lib/stats.ts";

const ROUNDS = 3;
const CALLS = 2000;
const CALL_WARMUP = 300;
const GRANTS = 15;
const UPLOAD_BYTES = 64 << 20;
const AUTH_RUNS = 20_000;

interface Variant {
  readonly label: string;
  tracker: TrackerProcess;
  agent: AgentProcess;
  client: TrackerClient;
  call: number[];
  grant: number[];
  upload: number[];
}

async function startVariant(label: string, dir: string, opts: { tokens: boolean; tls: boolean; sharedNetwork?: boolean }): Promise<Variant> {
  const trackerArgs: string[] = [];
  const agentArgs: string[] = opts.sharedNetwork ? ["--worker-network", "shared"] : [];
  let token: string | undefined;
  if (opts.tokens) {
    const file = new TokenFile(join(dir, `${label}-tokens.json`));
    trackerArgs.push("--tokens", file.path);
    agentArgs.push("--token", file.create({ name: "agent", kind: "agent", keys: ["cpu"] }).token);
    token = file.create({ name: "bench", kind: "client", keys: ["cpu"] }).token;
  }
  if (opts.tls) {
    trackerArgs.push("--tls-cert", join(dir, "server.crt"), "--tls-key", join(dir, "server.key"));
    agentArgs.push("--tls-ca", join(dir, "ca.crt"));
  }
  const tracker = await startTrackerProcess(trackerArgs);
  const agent = await startAgentProcess(tracker.address, ["cpu:key=cpu"], agentArgs);
  const client = await connectTracker(tracker.address, { ...(token ? { token } : {}), ...(opts.tls ? { tls: { caFile: join(dir, "ca.crt") } } : {}) });
  await waitFor(`${label}: a free board`, async () => (await client.summary()).boards.some((b) => b.state === "free"), 30_000);
  return { label, tracker, agent, client, call: [], grant: [], upload: [] };
}

async function waitFree(v: Variant): Promise<void> {
  await waitFor(`${v.label}: a free board`, async () => (await v.client.summary()).boards.some((b) => b.state === "free"), 30_000, 2);
}

async function round(v: Variant, module: CompiledModule, data: Buffer): Promise<void> {
  // Grants on an idle board: listdir leaves the worker clean, so the same warm worker serves each.
  for (let i = 0; i < GRANTS; i++) {
    await waitFree(v);
    const t0 = nowMs();
    const s = await v.client.request("cpu");
    await s.listdir();
    v.grant.push(nowMs() - t0);
    await s.close();
  }
  await waitFree(v);
  const s = await v.client.request("cpu");
  try {
    const t0 = nowMs();
    await s.upload(data, "blob.bin");
    v.upload.push(mbps(data.length, nowMs() - t0));
    await timeNopCalls(s, module, CALL_WARMUP, CALLS, v.call);
  } finally {
    await s.close();
  }
}

/** The tracker's authorization per grant, in this process: caller() (parse, hash, compare) + sessionRequest() (scopes). */
function authCostUs(dir: string): { withTokens: number; open: number } {
  const file = new TokenFile(join(dir, "auth-bench-tokens.json"));
  const token = file.create({ name: "bench", kind: "client", keys: ["gpu-*", "cpu"], maxPriority: 10, maxSessionTimeoutMs: 3_600_000 }).token;
  const log = componentLogger("bench", {});
  const time = (auth: Authorizer, md: Metadata) => {
    const req = { key: "cpu", priority: 1, labels: {}, deadline_ms: 0, client_id: "x", session_timeout_ms: 0, route: "auto" as const, board_id: "" };
    for (let i = 0; i < 2000; i++) auth.sessionRequest(auth.caller(md, "bench", "request sessions"), req, 86_400_000);
    const t0 = nowMs();
    for (let i = 0; i < AUTH_RUNS; i++) auth.sessionRequest(auth.caller(md, "bench", "request sessions"), req, 86_400_000);
    return ((nowMs() - t0) * 1000) / AUTH_RUNS;
  };
  const md = new Metadata();
  md.set("authorization", `Bearer ${token}`);
  const guarded = new Authorizer(file.path, new AuditLog(undefined, log), log);
  const open = new Authorizer(undefined, new AuditLog(undefined, log), log);
  try {
    return { withTokens: time(guarded, md), open: time(open, new Metadata()) };
  } finally {
    guarded.close();
  }
}

export async function benchTrust(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), "kf-bench-trust-"));
  certsInit(dir);
  const [module] = await Promise.all([compileVadd()]);
  const data = Buffer.alloc(UPLOAD_BYTES);
  for (let i = 0; i < data.length; i += 4096) data[i] = i & 0xff;
  const variants = [
    await startVariant("shared net", dir, { tokens: false, tls: false, sharedNetwork: true }),
    await startVariant("open", dir, { tokens: false, tls: false }),
    await startVariant("tokens", dir, { tokens: true, tls: false }),
    await startVariant("tls+tokens", dir, { tokens: true, tls: true }),
  ];
  try {
    for (let r = 0; r < ROUNDS; r++) for (const v of variants) await round(v, module, data);
  } finally {
    for (const v of variants) {
      v.client.close();
      await v.agent.stop();
      await v.tracker.stop();
    }
  }
  const auth = authCostUs(dir);
  const [shared, open] = variants as [Variant, Variant, Variant, Variant];
  const rows: Row[] = [];
  for (const v of variants) {
    // The forwarder's cost against the direct path; tokens' and TLS's against the sandboxed open farm.
    const base = v === shared ? undefined : v === open ? shared : open;
    const cmp = (f: (x: Variant) => number, fmt: (n: number) => string) =>
      base ? { baseline: `${base.label} ${fmt(f(base))}`, ratio: fmtRatio(f(v) / f(base)) } : { baseline: "", ratio: "" };
    const call = (x: Variant) => percentile(x.call, 50);
    const grant = (x: Variant) => percentile(x.grant, 50);
    const upload = (x: Variant) => median(x.upload);
    rows.push(
      { figure: `${v.label}: nop call round trip p50`, value: fmtUs(call(v)), target: "", verdict: "", ...cmp(call, fmtUs) },
      { figure: `${v.label}: grant → first call p50`, value: fmtMs(grant(v)), target: "", verdict: "", ...cmp(grant, fmtMs) },
      { figure: `${v.label}: 64 MiB upload`, value: fmtMBps(upload(v)), target: "", verdict: "", ...cmp(upload, fmtMBps) },
    );
  }
  rows.push({
    figure: "tracker authorization per grant (token check + scopes)",
    value: `${auth.withTokens.toFixed(1)} µs`,
    target: "",
    verdict: "",
    baseline: `open farm ${auth.open.toFixed(2)} µs`,
    ratio: "",
  });
  printTable("trust: the cost of the worker sandbox's forwarder, tokens and TLS (four farms side by side, interleaved rounds)", rows, [
    `${ROUNDS} rounds; per round and farm: ${GRANTS} idle grants, one 64 MiB upload, ${CALLS} nop calls after ${CALL_WARMUP} warm-up`,
    "shared net: workers dial the tracker themselves (--worker-network shared); open: workers in their own network namespace, through the agent's forwarder (the default where the OS allows)",
    "tokens: every call carries a token the tracker verifies; tls+tokens: the same over TLS (certs from kfarm certs init); both sandboxed like open",
  ]);
}
