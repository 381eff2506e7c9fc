/**
 * TLS on every port of a farm, against real tracker and agent processes with
 * certificates made by `kfarm certs init`: what a host, an agent and a
 * browser-like client see with the right CA, the wrong one, no TLS, mutual
 * TLS, a certificate rotated under a running tracker, the HTTPS side with
 * tokens, the agent's HTTPS /metrics, the refusal to serve a network in the
 * clear, and a session end to end over TLS.
 */
import assert from "node:assert/strict";
import { X509Certificate } from "node:crypto";
import { once } from "node:events";
import { spawn } from "node:child_process";
import { accessSync, constants, mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { request as httpsRequest } from "node:https";
import { request as httpRequest } from "node:http";
import { tmpdir } from "node:os";
import { delimiter, join } from "node:path";
import { connect as tlsConnect } from "node:tls";
import { after, before, describe, it } from "./helpers/suites.ts";
import { unpack } from "msgpackr";
import WebSocket from "ws";
import { FarmError } from "../protos/index.ts";
import { connectTracker, type ConnectOptions, type TrackerClient } from "../host-sdk/index.ts";
import type { FeedMessage } from "../tracker/live/protocol.ts";
import { compileVadd } from "./helpers/kernels.ts";
import { runCli, startAgentProcess, startTrackerProcess, waitFor, waitForFreeBoards, type AgentProcess, type TrackerProcess } from "./helpers/processes.ts";

/** How long a refused connect waits before it diagnoses (the default 5 s only slows the test down). */
const REFUSED_CONNECT_MS = 1000;

let root: string;
/** The farm's certificates, and another farm's (a CA the tracker does not know). */
let farm: string;
let other: string;
const f = (dir: string, name: string) => join(dir, name);

async function certsInit(dir: string, ...args: string[]): Promise<void> {
  const r = await runCli(["certs", "init", dir, ...args]);
  assert.equal(r.code, 0, r.stderr);
}

before(async () => {
  root = mkdtempSync(join(tmpdir(), "kf-tls-"));
  farm = join(root, "farm");
  other = join(root, "other");
  await Promise.all([certsInit(farm), certsInit(other)]);
});
after(() => rmSync(root, { recursive: true, force: true }));

/** Rejects with a FarmError of `code` whose message is `message` (or matches it). */
async function refused(p: Promise<unknown>, code: string, message: string | RegExp): Promise<void> {
  await assert.rejects(p, (e: unknown) => {
    assert.ok(e instanceof FarmError, `not a FarmError: ${String(e)}`);
    assert.equal(e.code, code, e.message);
    if (typeof message === "string") assert.equal(e.message, message);
    else assert.match(e.message, message);
    return true;
  });
}

const clients: TrackerClient[] = [];
async function connect(address: string, opts: ConnectOptions): Promise<TrackerClient> {
  const c = await connectTracker(address, opts);
  clients.push(c);
  return c;
}
after(() => clients.forEach((c) => c.close()));

const serverTlsArgs = (dir: string) => ["--tls-cert", f(dir, "server.crt"), "--tls-key", f(dir, "server.key")];
const clientTlsArgs = (dir: string) => ["--tls-ca", f(dir, "ca.crt")];

interface Reply {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

/** GET over https (or http) with an optional CA, bearer token and path query. */
function get(url: string, opts: { ca?: Buffer; token?: string } = {}): Promise<Reply> {
  const request = url.startsWith("https:") ? httpsRequest : httpRequest;
  return new Promise((resolve, reject) => {
    const req = request(
      url,
      { agent: false, ...(opts.ca ? { ca: opts.ca } : {}), headers: opts.token ? { authorization: `Bearer ${opts.token}` } : {} },
      (res) => {
        let body = "";
        res.setEncoding("utf8");
        res.on("data", (c: string) => (body += c));
        res.on("end", () => resolve({ status: res.statusCode!, headers: res.headers, body }));
      },
    );
    req.on("error", reject);
    req.end();
  });
}

/** The serial number of the certificate a TLS port presents now (a fresh connection each time); the gRPC port wants ALPN h2, the HTTPS side has none. */
function peerSerial(address: string, ca: Buffer, alpn?: string): Promise<string> {
  const i = address.lastIndexOf(":");
  return new Promise((resolve, reject) => {
    const socket = tlsConnect({ host: address.slice(0, i), port: Number(address.slice(i + 1)), ca, ...(alpn ? { ALPNProtocols: [alpn] } : {}) }, () => {
      const serial = socket.getPeerCertificate().serialNumber;
      socket.destroy();
      resolve(serial);
    });
    socket.on("error", reject);
  });
}

const serialOf = (file: string) => new X509Certificate(readFileSync(file)).serialNumber;

describe("kfarm certs", () => {
  it("init makes a CA, a server and a client certificate: P-256, SHA-256, the right uses and names, keys 0600", () => {
    for (const name of ["ca.key", "server.key", "client.key"]) assert.equal(statSync(f(farm, name)).mode & 0o777, 0o600, name);
    const ca = new X509Certificate(readFileSync(f(farm, "ca.crt")));
    const server = new X509Certificate(readFileSync(f(farm, "server.crt")));
    const client = new X509Certificate(readFileSync(f(farm, "client.crt")));
    assert.equal(ca.ca, true);
    assert.equal(server.ca, false);
    assert.ok(server.verify(ca.publicKey) && client.verify(ca.publicKey), "signed by the CA");
    assert.ok(!server.verify(new X509Certificate(readFileSync(f(other, "ca.crt"))).publicKey), "not by another farm's CA");
    assert.equal(server.publicKey.asymmetricKeyDetails?.namedCurve, "prime256v1");
    assert.equal(server.subjectAltName, "DNS:localhost, IP Address:127.0.0.1, IP Address:0:0:0:0:0:0:0:1");
    assert.deepEqual(server.keyUsage, ["1.3.6.1.5.5.7.3.1", "1.3.6.1.5.5.7.3.2"], "serverAuth (and clientAuth)");
    assert.deepEqual(client.keyUsage, ["1.3.6.1.5.5.7.3.2"], "clientAuth only");
    assert.equal(client.subject, "CN=kfarm-client");
    assert.notEqual(server.serialNumber, client.serialNumber);
  });

  it("init refuses to replace existing files, naming them; --force replaces them with a new CA", async () => {
    const dir = join(root, "again");
    await certsInit(dir, "--host", "farm.example.com", "--host", "10.1.2.3", "--client-name", "ci-bot", "--days", "30");
    const server = new X509Certificate(readFileSync(f(dir, "server.crt")));
    assert.equal(server.subjectAltName, "DNS:localhost, DNS:farm.example.com, IP Address:127.0.0.1, IP Address:0:0:0:0:0:0:0:1, IP Address:10.1.2.3");
    assert.equal(new X509Certificate(readFileSync(f(dir, "client.crt"))).subject, "CN=ci-bot");
    const days = (Date.parse(server.validTo) - Date.parse(server.validFrom)) / 86_400_000;
    assert.equal(days, 30);
    const caSerial = serialOf(f(dir, "ca.crt"));
    const r = await runCli(["certs", "init", dir]);
    assert.equal(r.code, 1);
    assert.equal(
      r.stderr,
      `kfarm: ${dir} already holds ca.crt, ca.key, server.crt, server.key, client.crt, client.key: pass --force to replace them (every certificate the old CA signed stops working), or \`kfarm certs issue\` to add one [INVALID_ARGUMENT]\n`,
    );
    assert.equal(serialOf(f(dir, "ca.crt")), caSerial, "nothing was touched");
    await certsInit(dir, "--force");
    assert.notEqual(serialOf(f(dir, "ca.crt")), caSerial);
  });

  it("issue re-issues a server certificate in place with a new serial, keeping its names", async () => {
    const dir = join(root, "issue");
    await certsInit(dir, "--host", "farm.example.com");
    const before = new X509Certificate(readFileSync(f(dir, "server.crt")));
    const r = await runCli(["certs", "issue", dir, "--server", "server"]);
    assert.equal(r.code, 0, r.stderr);
    const after = new X509Certificate(readFileSync(f(dir, "server.crt")));
    assert.notEqual(after.serialNumber, before.serialNumber);
    assert.equal(after.subjectAltName, before.subjectAltName);
    assert.equal(statSync(f(dir, "server.key")).mode & 0o777, 0o600);
    const c = await runCli(["certs", "issue", dir, "--client", "alice"]);
    assert.equal(c.code, 0, c.stderr);
    assert.equal(new X509Certificate(readFileSync(f(dir, "alice.crt"))).subject, "CN=alice");
  });

  it("says how to install openssl when it is missing", async () => {
    const r = await runCli(["certs", "init", join(root, "no-openssl")], { env: { PATH: join(root, "empty-path") } });
    assert.equal(r.code, 1);
    assert.equal(
      r.stderr,
      "kfarm: kfarm certs needs the openssl command-line tool, which is not installed: apt-get install openssl (or your system's openssl package) [TOOLCHAIN_MISSING]\n",
    );
  });
});

describe("a tracker with TLS", () => {
  let tracker: TrackerProcess;
  let agent: AgentProcess | undefined;

  before(async () => {
    tracker = await startTrackerProcess(serverTlsArgs(farm));
    assert.equal(tracker.tls, true, "it says (TLS) after its address");
  });
  after(async () => {
    await agent?.stop();
    await tracker?.stop();
  });

  it("serves a host that trusts the farm's CA", async () => {
    const c = await connect(tracker.address, { tls: { caFile: f(farm, "ca.crt") } });
    const s = await c.summary();
    assert.deepEqual(s.boards, []);
  });

  it("tells a plaintext client that the port speaks TLS", async () => {
    await refused(
      connectTracker(tracker.address, { connectTimeoutMs: REFUSED_CONNECT_MS }),
      "UNAVAILABLE",
      `${tracker.address} speaks TLS and this client spoke plaintext: pass --tls-ca (the farm's ca.crt) to connect`,
    );
  });

  it("refuses a client that trusts another CA, naming the certificate problem", async () => {
    await refused(
      connectTracker(tracker.address, { tls: { caFile: f(other, "ca.crt") }, connectTimeoutMs: REFUSED_CONNECT_MS }),
      "UNAVAILABLE",
      `the tracker's certificate at ${tracker.address} is not signed by the CA in ${f(other, "ca.crt")} (unable to verify the first certificate [UNABLE_TO_VERIFY_LEAF_SIGNATURE]): pass the farm's ca.crt as --tls-ca`,
    );
  });

  it("refuses a client that checks a name the certificate does not hold", async () => {
    await refused(
      connectTracker(tracker.address, { tls: { caFile: f(farm, "ca.crt"), serverName: "tracker.example.com" }, connectTimeoutMs: REFUSED_CONNECT_MS }),
      "UNAVAILABLE",
      `the tracker's certificate at ${tracker.address} does not name tracker.example.com (Host: tracker.example.com. is not in the cert's altnames: DNS:localhost, IP Address:127.0.0.1, IP Address:0:0:0:0:0:0:0:1 [ERR_TLS_CERT_ALTNAME_INVALID]): connect by a name it holds, pass --tls-server-name, or re-issue it with --host tracker.example.com`,
    );
  });

  it("serves the agent's /metrics over HTTPS with the farm's certificate, and the agent attaches over TLS", async () => {
    agent = await startAgentProcess(
      tracker.address,
      ["cpu:key=cpu,name=c0"],
      [
        ...clientTlsArgs(farm),
        "--name",
        "tls-agent",
        "--metrics-port",
        "0",
        "--metrics-tls-cert",
        f(farm, "server.crt"),
        "--metrics-tls-key",
        f(farm, "server.key"),
      ],
    );
    assert.equal(agent.metricsScheme, "https");
    const ca = readFileSync(f(farm, "ca.crt"));
    const reply = await waitFor("the agent attached, in its metrics", async () => {
      const r = await get(`https://${agent!.metricsAddress}/metrics`, { ca });
      return r.status === 200 && /^kernelfarm_agent_tracker_connected 1$/m.test(r.body) ? r : undefined;
    });
    assert.match(String(reply.headers["content-type"]), /^text\/plain; version=0\.0\.4/);
    const c = await connect(tracker.address, { tls: { caFile: f(farm, "ca.crt") } });
    assert.deepEqual(
      (await c.summary()).boards.map((b) => [b.id, b.key]),
      [["tls-agent/c0", "cpu"]],
    );
    // A scraper without the CA does not get the page.
    await assert.rejects(get(`https://${agent.metricsAddress}/metrics`), (e: NodeJS.ErrnoException) => e.code === "UNABLE_TO_VERIFY_LEAF_SIGNATURE");
  });

  it("carries sessions over TLS on every lane: direct with the agent's certificate, relay on the tracker's data port, grpc", async () => {
    const direct = await startAgentProcess(
      tracker.address,
      ["cpu:key=lanes,name=l0"],
      [...clientTlsArgs(farm), "--name", "lanes-agent", "--data-tls-cert", f(farm, "server.crt"), "--data-tls-key", f(farm, "server.key")],
    );
    try {
      const c = await connect(tracker.address, { tls: { caFile: f(farm, "ca.crt") } });
      await waitForFreeBoards(c, 1, "lanes");
      const payload = Buffer.alloc(3 * (1 << 20) + 5);
      for (let i = 0; i < payload.length; i += 997) payload[i] = i & 0xff;
      for (const route of ["direct", "relay", "grpc"] as const) {
        const s = await c.request("lanes", { route });
        try {
          assert.equal(s.lane, route);
          await s.upload(payload, "p.bin");
          assert.ok((await s.download("p.bin")).equals(payload), `${route}: the bytes came back intact`);
        } finally {
          await s.close();
        }
      }
    } finally {
      await direct.stop();
    }
  });

  it("an agent with TLS to its tracker and no certificate for hosts serves no direct lane: auto takes the relay", async () => {
    const plain = await startAgentProcess(tracker.address, ["cpu:key=nodirect,name=n0"], [...clientTlsArgs(farm), "--name", "nodirect-agent"]);
    try {
      const c = await connect(tracker.address, { tls: { caFile: f(farm, "ca.crt") } });
      await waitForFreeBoards(c, 1, "nodirect");
      const s = await c.request("nodirect");
      assert.equal(s.lane, "relay");
      await s.listdir();
      await s.close();
      await assert.rejects(c.request("nodirect", { route: "direct" }), (e: FarmError) => e.code === "UNAVAILABLE" && /serves no direct lane/.test(e.message));
    } finally {
      await plain.stop();
    }
  });
});

describe("a plaintext tracker", () => {
  let tracker: TrackerProcess;
  before(async () => {
    tracker = await startTrackerProcess();
    assert.equal(tracker.tls, false);
  });
  after(() => tracker?.stop());

  it("tells a TLS client that it does not speak TLS", async () => {
    await refused(
      connectTracker(tracker.address, { tls: { caFile: f(farm, "ca.crt") }, connectTimeoutMs: REFUSED_CONNECT_MS }),
      "UNAVAILABLE",
      `${tracker.address} does not speak TLS (it answered a TLS hello with something else): drop --tls-ca, or start that server with --tls-cert and --tls-key`,
    );
  });
});

describe("a tracker with mutual TLS (--tls-client-ca)", () => {
  let tracker: TrackerProcess;
  let agent: AgentProcess | undefined;
  const mtls = () => ({ caFile: f(farm, "ca.crt"), certFile: f(farm, "client.crt"), keyFile: f(farm, "client.key") });

  before(async () => {
    tracker = await startTrackerProcess([...serverTlsArgs(farm), "--tls-client-ca", f(farm, "ca.crt")]);
  });
  after(async () => {
    await agent?.stop();
    await tracker?.stop();
  });

  it("refuses a host without a client certificate", async () => {
    await refused(
      connectTracker(tracker.address, { tls: { caFile: f(farm, "ca.crt") }, connectTimeoutMs: REFUSED_CONNECT_MS }),
      "UNAVAILABLE",
      `the tracker at ${tracker.address} requires a client certificate (mutual TLS) and this client has none (tlsv13 alert certificate required [ERR_SSL_TLSV13_ALERT_CERTIFICATE_REQUIRED]): pass --tls-cert and --tls-key, a certificate signed by the CA of its --tls-client-ca`,
    );
  });

  it("refuses a host whose certificate another CA signed", async () => {
    await refused(
      connectTracker(tracker.address, {
        tls: { caFile: f(farm, "ca.crt"), certFile: f(other, "client.crt"), keyFile: f(other, "client.key") },
        connectTimeoutMs: REFUSED_CONNECT_MS,
      }),
      "UNAVAILABLE",
      `the tracker at ${tracker.address} hung up right after the TLS handshake: it refused this client's certificate ${f(other, "client.crt")}; it takes only valid certificates signed by the CA of its --tls-client-ca (\`kfarm certs issue DIR --client NAME\` with that CA)`,
    );
  });

  it("serves a host with the farm's client certificate", async () => {
    const c = await connect(tracker.address, { tls: mtls() });
    assert.deepEqual((await c.summary()).boards, []);
  });

  it("lets an agent with the farm's client certificate attach: its boards appear in the summary", async () => {
    agent = await startAgentProcess(
      tracker.address,
      ["cpu:key=mtls,name=m0"],
      [...clientTlsArgs(farm), "--tls-cert", f(farm, "client.crt"), "--tls-key", f(farm, "client.key"), "--name", "mtls-agent"],
    );
    const c = await connect(tracker.address, { tls: mtls() });
    const boards = await waitFor("the agent's board in the summary", async () => {
      const b = (await c.summary()).boards;
      return b.length ? b : undefined;
    });
    assert.deepEqual(
      boards.map((b) => [b.id, b.key, b.kind]),
      [["mtls-agent/m0", "mtls", "cpu"]],
    );
  });

  it("lets an agent whose client certificate is replaced attach without a restart", async () => {
    // The agent starts with another CA's certificate in its files: refused, and it says so.
    const mine = mkdtempSync(join(root, "agent-cert-"));
    const [cert, key] = [join(mine, "client.crt"), join(mine, "client.key")];
    writeFileSync(cert, readFileSync(f(other, "client.crt")));
    writeFileSync(key, readFileSync(f(other, "client.key")), { mode: 0o600 });
    const renewed = await startAgentProcess(
      tracker.address,
      ["cpu:key=renewed,name=r0"],
      [...clientTlsArgs(farm), "--tls-cert", cert, "--tls-key", key, "--name", "renewed-agent"],
      { env: { KFARM_LOG: "warn" } },
    );
    try {
      await waitFor(
        "the agent to report its refused certificate",
        () => /cannot attach to the tracker at \S+: .*refused this client's certificate/.test(renewed.stderr()),
        15_000,
      );
      // The farm's own certificate is put in place, key first (a mismatched pair is never loaded).
      writeFileSync(`${key}.new`, readFileSync(f(farm, "client.key")), { mode: 0o600 });
      writeFileSync(`${cert}.new`, readFileSync(f(farm, "client.crt")));
      renameSync(`${key}.new`, key);
      renameSync(`${cert}.new`, cert);
      const c = await connect(tracker.address, { tls: mtls() });
      await waitFor("the renewed agent's board", async () => (await c.summary()).boards.some((b) => b.id === "renewed-agent/r0"), 15_000);
      assert.equal(renewed.proc.exitCode, null, "the agent was not restarted");
    } finally {
      await renewed.stop();
    }
  });
});

describe("certificate rotation", () => {
  let dir: string;
  let tracker: TrackerProcess;

  before(async () => {
    dir = join(root, "rotate");
    await certsInit(dir);
    tracker = await startTrackerProcess([...serverTlsArgs(dir), "--metrics-port", "0"]);
  });
  after(() => tracker?.stop());

  it("serves a re-issued server certificate on the gRPC and HTTPS ports without a restart", async () => {
    const ca = readFileSync(f(dir, "ca.crt"));
    const first = serialOf(f(dir, "server.crt"));
    assert.equal(await peerSerial(tracker.address, ca, "h2"), first);
    assert.equal(await peerSerial(tracker.httpAddress!, ca), first);
    const before = await connect(tracker.address, { tls: { caFile: f(dir, "ca.crt") } });
    const pid = tracker.proc.pid;

    const r = await runCli(["certs", "issue", dir, "--server", "server"]);
    assert.equal(r.code, 0, r.stderr);
    const second = serialOf(f(dir, "server.crt"));
    assert.notEqual(second, first);

    await waitFor("the gRPC port to serve the new certificate", async () => (await peerSerial(tracker.address, ca, "h2")) === second, 10_000, 100);
    await waitFor("the HTTPS port to serve the new certificate", async () => (await peerSerial(tracker.httpAddress!, ca)) === second, 10_000, 100);
    const fresh = await connect(tracker.address, { tls: { caFile: f(dir, "ca.crt") } });
    assert.deepEqual((await fresh.summary()).boards, []);
    assert.deepEqual((await before.summary()).boards, [], "a connection made before the rotation still works");
    assert.equal((await get(`https://${tracker.httpAddress}/metrics`, { ca })).status, 200);
    assert.equal(tracker.proc.pid, pid);
    assert.equal(tracker.proc.exitCode, null, "the tracker never restarted");
  });
});

describe("the tracker's HTTPS side with tokens", () => {
  let tokens: string;
  let tracker: TrackerProcess;
  let publicTracker: TrackerProcess;
  let ca: Buffer;
  const token: Record<string, string> = {};

  async function createToken(name: string, kind: string, ...extra: string[]): Promise<string> {
    const r = await runCli(["token", "create", "--tokens", tokens, "--name", name, "--kind", kind, ...extra]);
    assert.equal(r.code, 0, r.stderr);
    return (token[name] = r.stdout.trim());
  }

  before(async () => {
    tokens = join(root, "tokens.json");
    ca = readFileSync(f(farm, "ca.crt"));
    await createToken("ops", "operator");
    await createToken("watcher", "operator");
    await createToken("ci-bot", "client", "--keys", "cpu");
    [tracker, publicTracker] = await Promise.all([
      startTrackerProcess([...serverTlsArgs(farm), "--metrics-port", "0", "--tokens", tokens]),
      startTrackerProcess([
        ...serverTlsArgs(farm),
        "--metrics-port",
        "0",
        "--tokens",
        tokens,
        "--public-http",
        "--audit-log",
        join(root, "public-audit.jsonl"),
      ]),
    ]);
    assert.equal(tracker.httpScheme, "https");
  });
  after(async () => {
    await tracker?.stop();
    await publicTracker?.stop();
  });

  it("serves /metrics and the page over HTTPS only to operators: no token 401, a client token 403, an operator token 200", async () => {
    const url = `https://${tracker.httpAddress}`;
    const none = await get(`${url}/metrics`, { ca });
    assert.equal(none.status, 401);
    assert.equal(none.headers["www-authenticate"], 'Bearer realm="kernelfarm"');
    const client = await get(`${url}/metrics`, { ca, token: token["ci-bot"] });
    assert.equal(client.status, 403, client.body);
    const ops = await get(`${url}/metrics`, { ca, token: token.ops });
    assert.equal(ops.status, 200, ops.body);
    assert.match(ops.body, /^kernelfarm_agents 0$/m);
    assert.equal((await get(`${url}/`, { ca })).status, 401);
    const page = await get(`${url}/?token=${encodeURIComponent(token.ops!)}`, { ca });
    assert.equal(page.status, 200);
    assert.match(String(page.headers["content-type"]), /^text\/html/);
    assert.equal((await get(`${url}/?token=${encodeURIComponent(token["ci-bot"]!)}`, { ca })).status, 403);
  });

  it("does not speak plain HTTP on the HTTPS port", async () => {
    await assert.rejects(
      get(`http://${tracker.httpAddress}/metrics`),
      (e: NodeJS.ErrnoException) => e.code === "ECONNRESET" || e.code === "HPE_INVALID_CONSTANT",
    );
  });

  it("--public-http serves the pages without a token", async () => {
    const url = `https://${publicTracker.httpAddress}`;
    const m = await get(`${url}/metrics`, { ca });
    assert.equal(m.status, 200);
    assert.match(m.body, /^kernelfarm_agents 0$/m);
    assert.equal((await get(`${url}/`, { ca })).status, 200);
  });

  it("feeds an operator over wss and cuts the feed within 2 s of the token's revocation", { timeout: 30_000 }, async () => {
    const refusedWs = new WebSocket(`wss://${tracker.httpAddress}/feed`, {
      ca,
      perMessageDeflate: false,
      headers: { authorization: `Bearer ${token["ci-bot"]}` },
    });
    const [err] = (await once(refusedWs, "error")) as [Error];
    assert.equal(err.message, "Unexpected server response: 403");

    const ws = new WebSocket(`wss://${tracker.httpAddress}/feed`, { ca, perMessageDeflate: false, headers: { authorization: `Bearer ${token.watcher}` } });
    const messages: FeedMessage[] = [];
    ws.on("message", (data: Buffer) => messages.push(unpack(data) as FeedMessage));
    ws.on("error", () => {});
    const closed = once(ws, "close");
    await waitFor("the feed's snapshot", () => messages[0]?.kind === "snapshot");

    const r = await runCli(["token", "revoke", "watcher", "--tokens", tokens]);
    assert.equal(r.code, 0, r.stderr);
    const revokedAt = Date.now();
    // The revocation itself took: the token's requests are refused (so a feed left open is the feed's fault).
    await waitFor(
      "the revoked token refused",
      async () => (await get(`https://${tracker.httpAddress}/metrics`, { ca, token: token.watcher })).status === 401,
      2000,
    );
    // The close itself, however long it takes (the test's timeout bounds a feed that never closes); then how long it took.
    await closed;
    const cutMs = Date.now() - revokedAt;
    assert.ok(cutMs <= 2000, `the feed of a revoked operator token closed ${cutMs} ms after the revocation (at most 2000)`);
    // Others keep their feed.
    const ops = await get(`https://${tracker.httpAddress}/metrics`, { ca, token: token.ops });
    assert.equal(ops.status, 200);
  });
});

describe("binding a network address", () => {
  it("is refused without TLS and tokens, naming both", async () => {
    const r = await runCli(["tracker", "--host", "0.0.0.0", "--port", "0"]);
    assert.equal(r.code, 1);
    assert.equal(
      r.stderr,
      "kfarm: the tracker would listen on 0.0.0.0 without TLS (--tls-cert, --tls-key) and tokens (--tokens FILE): anyone who reaches it could run code on every board. Add TLS (--tls-cert, --tls-key) and tokens (--tokens FILE) (docs/security.md), or pass --insecure on a network you trust [INVALID_ARGUMENT]\n",
    );
  });

  it("is refused with TLS but no tokens, naming tokens", async () => {
    const r = await runCli(["tracker", "--host", "0.0.0.0", "--port", "0", ...serverTlsArgs(farm)]);
    assert.equal(r.code, 1);
    assert.match(r.stderr, /^kfarm: the tracker would listen on 0\.0\.0\.0 without tokens \(--tokens FILE\): .* \[INVALID_ARGUMENT\]\n$/);
  });

  it("starts with --insecure and logs the warning", async () => {
    const t = await startTrackerProcess(["--host", "0.0.0.0", "--insecure"], 0, { env: { KFARM_LOG: "warn" } });
    try {
      assert.match(t.address, /^0\.0\.0\.0:\d+$/);
      const line = await waitFor("the --insecure warning", () =>
        t
          .stderr()
          .split("\n")
          .find((l) => l.includes("--insecure")),
      );
      const entry = JSON.parse(line) as { level: number; msg: string; host: string };
      assert.equal(entry.level, 40, "a warning");
      assert.equal(entry.host, "0.0.0.0");
      assert.equal(entry.msg, "--insecure: serving 0.0.0.0 without TLS or tokens; anyone who reaches this port can run code on every board");
    } finally {
      await t.stop();
    }
  });
});

describe("a session over TLS end to end", () => {
  let tracker: TrackerProcess;
  let agent: AgentProcess;
  let client: TrackerClient;

  before(async () => {
    tracker = await startTrackerProcess([...serverTlsArgs(farm), "--tls-client-ca", f(farm, "ca.crt")]);
    agent = await startAgentProcess(
      tracker.address,
      ["cpu:key=cpu,name=s0"],
      [...clientTlsArgs(farm), "--tls-cert", f(farm, "client.crt"), "--tls-key", f(farm, "client.key"), "--name", "tls-session"],
    );
    client = await connect(tracker.address, { tls: { caFile: f(farm, "ca.crt"), certFile: f(farm, "client.crt"), keyFile: f(farm, "client.key") } });
  });
  after(async () => {
    await agent?.stop();
    await tracker?.stop();
  });

  it("uploads a module, calls it on remote arrays and reads the result back", async () => {
    const module = await compileVadd();
    await waitForFreeBoards(client, 1, "cpu");
    const s = await client.request("cpu");
    try {
      await s.upload(module);
      const mod = await s.loadModule(module.name);
      const n = 300_000;
      const a = Float32Array.from({ length: n }, (_, i) => i);
      const b = Float32Array.from({ length: n }, (_, i) => 2 * i + 0.5);
      const [ra, rb, rc] = await Promise.all([s.array(a), s.array(b), s.array({ shape: [n], dtype: "float32" })]);
      await mod.getFunction("vadd")(ra, rb, rc, n);
      const c = (await rc.toArray()) as Float32Array;
      assert.equal(c.length, n);
      for (let i = 0; i < n; i += 997) assert.equal(c[i], a[i]! + b[i]!);
    } finally {
      await s.close();
    }
  });
});

const PROMETHEUS = (process.env.PATH ?? "")
  .split(delimiter)
  .map((d) => join(d, "prometheus"))
  .find((p) => {
    try {
      accessSync(p, constants.X_OK);
      return true;
    } catch {
      return false;
    }
  });

describe("Prometheus scrapes over HTTPS", { skip: PROMETHEUS ? false : "the prometheus binary is not installed (apt-get install prometheus)" }, () => {
  let tracker: TrackerProcess;
  let agent: AgentProcess;
  let dir: string;

  before(async () => {
    dir = join(root, "prometheus");
    const tokens = join(root, "prom-tokens.json");
    const token = async (name: string, kind: string, ...extra: string[]) => {
      const r = await runCli(["token", "create", "--tokens", tokens, "--name", name, "--kind", kind, ...extra]);
      assert.equal(r.code, 0, r.stderr);
      return r.stdout.trim();
    };
    const [operator, agentToken] = [await token("prometheus", "operator"), await token("scraped-box", "agent", "--keys", "cpu")];
    tracker = await startTrackerProcess([...serverTlsArgs(farm), "--metrics-port", "0", "--tokens", tokens]);
    agent = await startAgentProcess(
      tracker.address,
      ["cpu:key=cpu"],
      [...clientTlsArgs(farm), "--metrics-port", "0", "--metrics-tls-cert", f(farm, "server.crt"), "--metrics-tls-key", f(farm, "server.key")],
      {
        env: { KFARM_TOKEN: agentToken },
      },
    );
    mkdirSync(dir);
    writeFileSync(join(dir, "operator.token"), operator, { mode: 0o600 });
  });
  after(async () => {
    await agent?.stop();
    await tracker?.stop();
  });

  it("with scheme https, tls_config.ca_file and authorization.credentials_file (docs/tls.md): both targets up, the farm's series read", async () => {
    // The config docs/tls.md gives, with this test's files and a 1 s interval.
    writeFileSync(
      join(dir, "prometheus.yml"),
      [
        "global: { scrape_interval: 1s, scrape_timeout: 1s }",
        "scrape_configs:",
        "  - job_name: kfarm-tracker",
        "    scheme: https",
        `    tls_config: { ca_file: ${f(farm, "ca.crt")} }`,
        `    authorization: { credentials_file: ${join(dir, "operator.token")} }`,
        `    static_configs: [{ targets: ["${tracker.httpAddress}"] }]`,
        "  - job_name: kfarm-agent",
        "    scheme: https",
        `    tls_config: { ca_file: ${f(farm, "ca.crt")} }`,
        `    static_configs: [{ targets: ["${agent.metricsAddress}"] }]`,
        "",
      ].join("\n"),
    );
    const port = await new Promise<number>((resolve) => {
      const s = createServer().listen(0, "127.0.0.1", () => {
        const p = (s.address() as { port: number }).port;
        s.close(() => resolve(p));
      });
    });
    const api = `http://127.0.0.1:${port}`;
    const prom = spawn(
      PROMETHEUS!,
      [`--config.file=${join(dir, "prometheus.yml")}`, `--storage.tsdb.path=${join(dir, "data")}`, `--web.listen-address=127.0.0.1:${port}`],
      { stdio: "ignore" },
    );
    try {
      const query = (expr: string) =>
        waitFor(
          `Prometheus to return ${expr}`,
          async () => {
            const body = (await (await fetch(`${api}/api/v1/query?query=${encodeURIComponent(expr)}`)).json()) as {
              data: { result: { metric: Record<string, string>; value: [number, string] }[] };
            };
            return body.data.result.length ? body.data.result : undefined;
          },
          30_000,
          250,
        );
      await waitFor("both targets up", async () => (await query("up == 1")).length === 2, 30_000, 250).catch(async (err: Error) => {
        throw new Error(`${err.message}; targets: ${await (await fetch(`${api}/api/v1/targets`)).text()}`);
      });
      const agents = await query("kernelfarm_agents");
      assert.equal(agents[0]!.metric.job, "kfarm-tracker");
      const connected = await query("kernelfarm_agent_tracker_connected == 1");
      assert.equal(connected[0]!.metric.job, "kfarm-agent");
    } finally {
      prom.kill("SIGTERM");
      await once(prom, "exit");
    }
  });
});
