/**
 * `kfarm`: tracker, agent, status and the demo on an embedded farm.
 */
import { hostname, userInfo } from "node:os";
import { Command, InvalidArgumentError, Option } from "commander";
import { DEFAULT_TRACKER_PORT, FARM_VERSION, FarmError } from "../protos/index.ts";
import { clientSecurity } from "../runtime/index.ts";
import { DEFAULT_MAX_CANARY_DRIFT, DEFAULT_OPEN_TIMEOUT_MS, startTracker, formatSummary } from "../tracker/index.ts";
import { startAgent, parseBoardFlag, parseBytes, readAgentConfigFile, type BoardConfig } from "../device-agent/index.ts";
import { connectTracker, defaultTracker } from "../host-sdk/index.ts";
import { runDemo } from "./demo.ts";
import { watchFarm } from "./watch.ts";
import { TUTORIAL_NAMES, vtaDisasm, vtaProgram } from "./vta.ts";
import { TRACKER_FLAG_HELP, addClientSecurityFlags, addTrackerFlag, connectOptionsOf, type ClientSecurityFlags } from "./security-flags.ts";
import { PIPE_WIDTH, outputWidth } from "./terminal-width.ts";
import { addTokenCommand } from "./token.ts";
import { addCertsCommand } from "./certs.ts";

function integer(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0) throw new InvalidArgumentError(`${JSON.stringify(value)} is not a non-negative integer`);
  return n;
}

/** A plain number ("1.25"); its range is the option's to check. */
function number(value: string): number {
  const n = Number(value);
  if (value.trim() === "" || !Number.isFinite(n)) throw new InvalidArgumentError(`${JSON.stringify(value)} is not a number`);
  return n;
}

/** A comma-separated list ("a,b" → ["a", "b"]). */
function list(value: string): string[] {
  return value
    .split(",")
    .map((v) => v.trim())
    .filter(Boolean);
}

function bytes(value: string): number {
  try {
    return parseBytes(value, "size");
  } catch (err) {
    throw new InvalidArgumentError((err as Error).message);
  }
}

/** Runs until SIGINT/SIGTERM, then calls `stop`. */
function untilSignal(stop: () => Promise<void> | void): void {
  let stopping = false;
  for (const sig of ["SIGINT", "SIGTERM"] as const) {
    process.on(sig, () => {
      if (stopping) process.exit(1);
      stopping = true;
      // A failed stop is said, not left as a rejection nobody handles; the exit is what it was.
      void Promise.resolve(stop())
        .catch((err: unknown) => console.error(`kfarm: stopping failed: ${(err as Error).message}`))
        .finally(() => process.exit(0));
    });
  }
}

const program = new Command("kfarm")
  .description("kernelfarm: a device farm for tensor kernels (tracker, agents, status)")
  .version(FARM_VERSION, "-V, --version", "print kernelfarm's version")
  .showHelpAfterError();

program
  .command("tracker")
  .description("run the tracker: agents attach to it, hosts request sessions from it")
  .option("--host <host>", "interface to bind", "127.0.0.1")
  .addOption(
    new Option("--port <port>", "gRPC port to bind, for hosts and agents (0: any free port); where clients that name no tracker look")
      .default(DEFAULT_TRACKER_PORT)
      .argParser(integer),
  )
  .addOption(new Option("--heartbeat-ms <ms>", "agent heartbeat interval").default(500).argParser(integer))
  .addOption(new Option("--missed-heartbeats <n>", "heartbeats an agent may miss before it is lost").default(3).argParser(integer))
  .addOption(
    new Option("--default-deadline-ms <ms>", "queue wait of requests that name no deadline; 0: no cap (as TVM's tracker)").default(60_000).argParser(integer),
  )
  .addOption(new Option("--metrics-port <port>", "HTTP port for /metrics and the live view (0: any free port; default: none)").argParser(integer))
  .option("--tls-cert <file>", "serve TLS on every port with this certificate (PEM; re-read when it changes)")
  .option("--tls-key <file>", "the key of --tls-cert")
  .option("--tls-client-ca <file>", "mutual TLS: every client (agents, hosts) needs a certificate this CA signed")
  .option("--tokens <file>", "tokens file (kfarm token create --tokens FILE): every call then needs a token")
  .option("--audit-log <file>", "audit log, JSON lines, rotated (default: audit.jsonl beside --tokens)")
  .option(
    "--state-dir <dir>",
    'keep what must survive a restart here, in tracker-state.json: operators\' drains and quarantines, board health and its history (default: the directory of --tokens; without --tokens, none: nothing is kept). A damaged file stops the start, naming what to do (docs/architecture.md, "Tracker restarts")',
  )
  .addOption(
    new Option("--max-session-timeout-ms <ms>", "the longest session anyone may hold; a request for 0 gets this").default(86_400_000).argParser(integer),
  )
  .option("--public-http", "serve the live view and /metrics without a token even when the farm has tokens")
  .option("--insecure", "allow a non-loopback --host without TLS and tokens (logged as a warning)")
  .addOption(new Option("--data-port <port>", "port of the data port, where relay lanes join (0: any free port)").default(0).argParser(integer))
  .addOption(
    new Option("--end-grace-ms <ms>", "after a session's lane closes, how long its agent (and the host) may take to say why").default(1000).argParser(integer),
  )
  .addOption(
    new Option(
      "--open-timeout-ms <ms>",
      "how long a granted session's lane may take to open (hosts on slow links may need more); its ticket expires then, and the lease ends CANCELLED",
    )
      .default(DEFAULT_OPEN_TIMEOUT_MS)
      .argParser(integer),
  )
  .addOption(
    new Option(
      "--tvm-port <port>",
      "also speak Apache TVM's tracker protocol on this port: TVM's rpc_server --tracker and request() work unchanged (0: any free port; default: none; docs/tvm-tracker.md)",
    ).argParser(integer),
  )
  .addOption(
    new Option("--tvm-allow <cidrs>", "networks the TVM port admits, comma-separated CIDRs (TVM peers send no token)")
      .default(["127.0.0.0/8", "::1/128"], "127.0.0.0/8,::1/128")
      .argParser(list),
  )
  .addOption(
    new Option(
      "--tvm-keys <keys>",
      "keys the TVM port serves, comma-separated: other keys are refused to TVM servers and clients (default: every key)",
    ).argParser(list),
  )
  .addOption(
    new Option(
      "--tvm-deadline-ms <ms>",
      "how long a TVM client's request waits for a server: 0, no cap, as TVM's tracker (its client gives up on nothing but a closed connection)",
    )
      .default(0)
      .argParser(integer),
  )
  .addOption(
    new Option(
      "--tvm-fairness <order>",
      "equal priorities on the TVM port: fifo (arrival order, as TVM's tracker) or per-client (round robin by client address)",
    )
      .choices(["fifo", "per-client"])
      .default("fifo"),
  )
  .addOption(
    new Option(
      "--max-canary-drift <ratio>",
      'a board whose canary runs more than this many times slower than its baseline is suspect, with the figures as reason (above 1; 0: keep and show canary times, judge none; docs/architecture.md, "Canary drift")',
    )
      .default(DEFAULT_MAX_CANARY_DRIFT)
      .argParser(number),
  )
  .action(
    async (o: {
      tvmPort?: number;
      tvmAllow: string[];
      tvmKeys?: string[];
      tvmDeadlineMs: number;
      tvmFairness: "fifo" | "per-client";
      maxCanaryDrift: number;
      dataPort: number;
      endGraceMs: number;
      openTimeoutMs: number;
      host: string;
      port: number;
      heartbeatMs: number;
      missedHeartbeats: number;
      defaultDeadlineMs: number;
      metricsPort?: number;
      tlsCert?: string;
      tlsKey?: string;
      tlsClientCa?: string;
      tokens?: string;
      auditLog?: string;
      stateDir?: string;
      maxSessionTimeoutMs: number;
      publicHttp?: boolean;
      insecure?: boolean;
    }) => {
      if (!!o.tlsCert !== !!o.tlsKey) throw new FarmError("INVALID_ARGUMENT", "kfarm tracker: --tls-cert and --tls-key go together");
      if (o.tlsClientCa && !o.tlsCert) throw new FarmError("INVALID_ARGUMENT", "kfarm tracker: --tls-client-ca (mutual TLS) needs --tls-cert and --tls-key");
      const tracker = await startTracker({
        host: o.host,
        port: o.port,
        metricsPort: o.metricsPort,
        heartbeatIntervalMs: o.heartbeatMs,
        maxMissedHeartbeats: o.missedHeartbeats,
        defaultDeadlineMs: o.defaultDeadlineMs,
        ...(o.tlsCert ? { tls: { certFile: o.tlsCert, keyFile: o.tlsKey!, ...(o.tlsClientCa ? { clientCaFile: o.tlsClientCa } : {}) } } : {}),
        tokensFile: o.tokens,
        auditLog: o.auditLog,
        stateDir: o.stateDir,
        maxSessionTimeoutMs: o.maxSessionTimeoutMs,
        publicHttp: o.publicHttp,
        insecure: o.insecure,
        dataPort: o.dataPort,
        endGraceMs: o.endGraceMs,
        openTimeoutMs: o.openTimeoutMs,
        tvmPort: o.tvmPort,
        tvmAllow: o.tvmAllow,
        tvmKeys: o.tvmKeys,
        tvmDeadlineMs: o.tvmDeadlineMs,
        tvmFairness: o.tvmFairness,
        maxCanaryDrift: o.maxCanaryDrift,
      });
      // One line on stdout that scripts (and our tests) read for the bound address.
      console.log(`kfarm tracker listening on ${tracker.address}${o.tlsCert ? " (TLS)" : ""}`);
      console.log(`kfarm tracker data port ${tracker.dataPort} (relay lanes)`);
      if (tracker.httpAddress) console.log(`kfarm tracker http on ${tracker.http!.scheme}://${tracker.httpAddress}/ (metrics: /metrics)`);
      if (tracker.tvmAddress) console.log(`kfarm tracker tvm port ${tracker.tvmAddress} (TVM's tracker protocol: rpc_server --tracker ${tracker.tvmAddress})`);
      untilSignal(() => tracker.close());
    },
  );

addClientSecurityFlags(program.command("agent"), "agent")
  .description("run a device agent: dial the tracker and serve boards")
  .option("--tracker <host:port>", `${TRACKER_FLAG_HELP}; \`tracker:\` in --config comes before the environment`)
  .option(
    "--board <spec>",
    "a board, KIND[:DEVICE][:key=K,name=N,label=V...], repeatable (e.g. cpu:key=cpu, cuda:0:key=h100; DEVICE: CUDA only)",
    (v: string, acc: string[]) => [...acc, v],
    [] as string[],
  )
  .option("--config <file>", "JSON or YAML file with tracker, name, boards and agent settings (flags win)")
  .option("--name <name>", "agent name shown in the summary")
  .addOption(new Option("--max-upload-bytes <size>", "largest single upload (e.g. 512m)").argParser(bytes))
  .addOption(new Option("--max-session-bytes <size>", "all files of one session (e.g. 4g)").argParser(bytes))
  .addOption(new Option("--call-timeout-ms <ms>", "per-call timeout when the host gives none").argParser(integer))
  .addOption(new Option("--warm-workers <n>", "idle session workers kept started per board").argParser(integer))
  .addOption(
    new Option("--canary-interval-ms <ms>", "idle boards run their canary this often (every new worker runs it once; 0: only then)").argParser(integer),
  )
  .addOption(new Option("--metrics-port <port>", "HTTP port for Prometheus /metrics (0: any free port; default: none)").argParser(integer))
  .option("--metrics-host <host>", "interface the metrics server binds (0.0.0.0: scraped from other hosts; default 127.0.0.1)")
  .option(
    "--metrics-tls-cert <file>",
    "serve /metrics over HTTPS with this certificate (PEM; re-read when it changes), e.g. one from `kfarm certs issue DIR --server NAME --host THIS-HOST`",
  )
  .option("--metrics-tls-key <file>", "the key of --metrics-tls-cert")
  .option(
    "--worker-uids <first-last>",
    'as root, the ids session workers run as: FIRST is their group, each live worker takes one of the rest; "off": as the agent\'s user (default 61000-61999; docs/sandbox.md)',
  )
  .option(
    "--worker-network <mode>",
    '"isolated": each worker in a network namespace of its own, reaching the tracker through the agent, where the OS allows; "shared": the host\'s network (default isolated)',
  )
  .addOption(
    new Option(
      "--worker-disk <size>",
      "as root, each session's folder is a tmpfs of this size: all its files, its kernels' temporary files included (e.g. 4g; \"off\": none; default --max-session-bytes; at least --max-upload-bytes; tmpfs takes RAM or swap only as it fills)",
    ).argParser((v: string) => (v === "off" ? 0 : bytes(v))),
  )
  .option(
    "--worker-limits <limits>",
    "resource limits of each worker, e.g. nofile=1024,nproc=256,fsize=1g,as=off (defaults: those, fsize = --max-upload-bytes, as off; nproc only with a uid or user namespace of the worker's own)",
  )
  .option("--no-direct", "serve no direct lane: hosts reach this agent's boards through the tracker's relay")
  .option(
    "--no-standby",
    "hosts reach the direct lane only at --data-port (firewalls that open one port): no standby lane (a port of its own) per session worker",
  )
  .option("--data-host <host>", "interface of the direct lane (default 127.0.0.1 for a loopback tracker, else 0.0.0.0)")
  .addOption(new Option("--data-port <port>", "port of the direct lane (0: any free port)").argParser(integer))
  .option(
    "--data-advertise <host[:port]>",
    "the name or address hosts reach the direct lane at, with the port where it is forwarded (default: the address the tracker sees this agent at)",
  )
  .option(
    "--data-tls-cert <file>",
    "TLS on the direct lane with this certificate (from the farm's CA, naming this host); needed for a direct lane when the agent talks TLS to its tracker",
  )
  .option("--data-tls-key <file>", "the key of --data-tls-cert")
  .action(
    async (
      o: ClientSecurityFlags & {
        direct: boolean;
        standby: boolean;
        dataHost?: string;
        dataPort?: number;
        dataAdvertise?: string;
        dataTlsCert?: string;
        dataTlsKey?: string;
        workerUids?: string;
        workerNetwork?: "isolated" | "shared";
        workerLimits?: string;
        workerDisk?: number;
        tracker?: string;
        board: string[];
        config?: string;
        name?: string;
        maxUploadBytes?: number;
        maxSessionBytes?: number;
        callTimeoutMs?: number;
        warmWorkers?: number;
        canaryIntervalMs?: number;
        metricsPort?: number;
        metricsHost?: string;
        metricsTlsCert?: string;
        metricsTlsKey?: string;
      },
    ) => {
      if (!!o.metricsTlsCert !== !!o.metricsTlsKey)
        throw new FarmError("INVALID_ARGUMENT", "kfarm agent: --metrics-tls-cert and --metrics-tls-key go together");
      if (!!o.dataTlsCert !== !!o.dataTlsKey) throw new FarmError("INVALID_ARGUMENT", "kfarm agent: --data-tls-cert and --data-tls-key go together");
      const file = o.config ? readAgentConfigFile(o.config) : undefined;
      if (o.metricsTlsCert && (o.metricsPort ?? file?.settings.metricsPort) === undefined)
        throw new FarmError("INVALID_ARGUMENT", "kfarm agent: --metrics-tls-cert serves /metrics over HTTPS, which needs --metrics-port");
      const tracker = o.tracker ?? file?.tracker ?? defaultTracker().address;
      const boards: BoardConfig[] = [...(file?.boards ?? []), ...o.board.map((b, i) => parseBoardFlag(b, i + (file?.boards.length ?? 0)))];
      if (boards.length === 0) throw new FarmError("INVALID_ARGUMENT", "kfarm agent needs at least one --board (e.g. --board cpu:key=cpu) or a --config file");
      const agent = await startAgent({
        tracker,
        security: clientSecurity(o, "kfarm agent"),
        boards,
        name: o.name ?? file?.name,
        maxUploadBytes: o.maxUploadBytes ?? file?.settings.maxUploadBytes,
        maxSessionBytes: o.maxSessionBytes ?? file?.settings.maxSessionBytes,
        callTimeoutMs: o.callTimeoutMs ?? file?.settings.callTimeoutMs,
        warmWorkers: o.warmWorkers ?? file?.settings.warmWorkers,
        canaryIntervalMs: o.canaryIntervalMs ?? file?.settings.canaryIntervalMs,
        metricsPort: o.metricsPort ?? file?.settings.metricsPort,
        metricsHost: o.metricsHost ?? file?.settings.metricsHost ?? "127.0.0.1",
        workerUids: o.workerUids ?? file?.settings.workerUids,
        workerNetwork: o.workerNetwork ?? file?.settings.workerNetwork,
        workerLimits: o.workerLimits ?? file?.settings.workerLimits,
        workerDiskBytes: o.workerDisk ?? file?.settings.workerDiskBytes,
        ...(o.metricsTlsCert ? { metricsTls: { certFile: o.metricsTlsCert, keyFile: o.metricsTlsKey! } } : {}),
        direct: o.direct,
        standby: o.standby,
        dataHost: o.dataHost,
        dataPort: o.dataPort,
        dataAdvertise: o.dataAdvertise,
        ...(o.dataTlsCert ? { dataTls: { certFile: o.dataTlsCert, keyFile: o.dataTlsKey! } } : {}),
      });
      if (agent.metricsAddress) console.log(`kfarm agent metrics on ${agent.metrics!.scheme}://${agent.metricsAddress}/metrics`);
      console.log(
        `kfarm agent ${agent.options.name || "(named by its token)"} serving ${boards.map((b) => `${b.name} (${b.kind}, key ${b.key})`).join(", ")} for tracker ${tracker}`,
      );
      untilSignal(() => agent.close());
    },
  );

type StatusFlags = ClientSecurityFlags & { tracker?: string; json?: boolean; width?: number; key?: string; watch?: boolean; http?: string; history?: boolean };

addTrackerFlag(addClientSecurityFlags(program.command("status"), "client or operator"))
  .description("print the tracker's summary: queues per key, boards and their sessions (--watch: then every change, live)")
  .option("--json", "print JSON instead of a table, every value whole (with --watch: one feed message per line)")
  .addOption(
    new Option(
      "--width <columns>",
      `the table's widest line: longer cells (health reasons, labels…) are cut with "…" to fit (0: none). Default: $COLUMNS, else the terminal's width, else ${PIPE_WIDTH} when stdout is not a terminal`,
    ).argParser(integer),
  )
  .option("--key <key>", "only this key's boards and queue")
  .option("--watch", "follow the tracker's live feed: the table, then one line per event, until Ctrl-C (needs --http)")
  .option("--http <host:port>", "the tracker's HTTP address (its --metrics-port), for --watch")
  .option("--history", "also each board's last health changes (when, from, to, why; kept across tracker restarts with --state-dir)")
  .action(async (o: StatusFlags) => {
    if (o.watch) {
      if (o.key) throw new FarmError("INVALID_ARGUMENT", "kfarm status --watch follows the whole farm; --key is for the one-shot summary");
      if (!o.http) {
        throw new FarmError(
          "INVALID_ARGUMENT",
          'kfarm status --watch needs --http HOST:PORT, the tracker\'s HTTP address: start the tracker with --metrics-port and use the address it prints ("kfarm tracker http on http://HOST:PORT/")',
        );
      }
      const stop = new AbortController();
      untilSignal(() => stop.abort());
      await watchFarm({ http: o.http, json: o.json, width: outputWidth(o.width), signal: stop.signal, security: clientSecurity(o, "kfarm status --watch") });
      return;
    }
    const client = await connectTracker(o.tracker, connectOptionsOf(o, "kfarm status"));
    try {
      const summary = await client.summary({ key: o.key, healthHistory: o.history });
      console.log(o.json ? JSON.stringify(summary, null, 2) : formatSummary(summary, client.address, { width: outputWidth(o.width) }));
    } finally {
      client.close();
    }
  });

addTrackerFlag(addClientSecurityFlags(program.command("board"), "operator"))
  .description("operator commands on one board: drain (no new sessions), quarantine, restore; a tracker with a state directory keeps them across its restarts")
  .argument("<action>", "drain | quarantine | restore")
  .argument("<board>", "the board's id as `kfarm status` shows it: AGENT/BOARD")
  .option("--by <name>", "who asks (shown as the reason); default user@host (with tokens: the token's name)")
  .option("--reason <text>", 'why, shown after who asked: "quarantined by alice: fan failing" (one line, at most 200 characters)')
  .action(async (action: string, board: string, o: ClientSecurityFlags & { tracker?: string; by?: string; reason?: string }) => {
    if (!["drain", "quarantine", "restore"].includes(action)) {
      throw new FarmError("INVALID_ARGUMENT", `unknown board command "${action}"; commands: drain, quarantine, restore`);
    }
    const client = await connectTracker(o.tracker, connectOptionsOf(o, "kfarm board"));
    try {
      const b = await client.boardCommand(board, action as "drain" | "quarantine" | "restore", o.by ?? `${userInfo().username}@${hostname()}`, o.reason);
      console.log(
        `${b.id}: state ${b.state}, health ${b.health}${b.health_reason ? ` (${b.health_reason})` : ""}${b.drained ? `, ${b.drain_reason || "drained"}` : ""}${b.state === "absent" ? " (not attached: applies when it is)" : ""}`,
      );
    } finally {
      client.close();
    }
  });

addTokenCommand(program);
addCertsCommand(program);

const vta = program.command("vta").description("the VTA toolchain, and VTA boards");
addTrackerFlag(addClientSecurityFlags(vta.command("program"), "client"))
  .description(
    "load a bitstream into a VTA board's FPGA (TVM's program_fpga): its companion vta_config.json must describe the board's VTA configuration; the board's `bitstream` label becomes the bitstream's SHA-256",
  )
  .argument("<board>", "the board's id as `kfarm status` shows it: AGENT/BOARD")
  .argument("<bitstream>", "the bitstream file (the .bin form Zynq's FPGA manager loads)")
  .option("--config <file>", "its companion JSON, TVM's vta_config.json (default: the bitstream's name with .json)")
  .action(async (board: string, bitstream: string, o: ClientSecurityFlags & { tracker?: string; config?: string }) => {
    console.log(await vtaProgram(board, bitstream, o.config, o.tracker, connectOptionsOf(o, "kfarm vta program")));
  });
vta
  .command("disasm")
  .description("print a VTA module's instruction streams readably")
  .argument("[module]", "a module bundle file (what compileVta returns as .bytes)")
  .option("--tutorial <name>", `compile one of TVM's VTA tutorials instead: ${TUTORIAL_NAMES.join(", ")}`)
  .option("--function <name>", "only this function")
  .option("--uops", "also list the micro-ops each LOAD UOP brings in")
  .action(async (file: string | undefined, o: { tutorial?: string; function?: string; uops?: boolean }) => {
    console.log(await vtaDisasm(file, o));
  });

program
  .command("demo")
  .description(
    "start an embedded farm (tracker + agent with a VTA simulator and a CPU board), run TVM's VTA conv2d tutorial and a CPU kernel on it, and print what came back",
  )
  .action(async () => {
    await runDemo();
  });

try {
  await program.parseAsync(process.argv);
} catch (err) {
  const e = FarmError.from(err);
  console.error(`kfarm: ${e.message} [${e.code}]`);
  process.exit(1);
}
