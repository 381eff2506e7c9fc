/**
 * `kfarm certs init DIR` and `kfarm certs issue DIR`: a small CA for one farm
 * and the certificates its tracker, agents and hosts show each other, made
 * with the `openssl` command-line tool (no extra npm dependency, and the
 * files are exactly what `openssl x509 -text` shows an operator).
 *
 * Keys are ECDSA P-256, signatures SHA-256. Every certificate gets a random
 * 128-bit serial, so a re-issued certificate is always told from the last
 * one (the rotation test and an operator both watch the serial).
 *
 * Files are made in a private temporary directory inside DIR and renamed
 * into place, so a tracker that watches them (runtime/credentials.ts) never
 * reads a half-written file and private keys are never readable by others.
 */
import { spawnSync } from "node:child_process";
import { randomBytes, X509Certificate } from "node:crypto";
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { isIP } from "node:net";
import { join, resolve } from "node:path";
import { type Command, InvalidArgumentError, Option } from "commander";
import { FarmError } from "../protos/index.ts";

export const DEFAULT_LEAF_DAYS = 825;
export const DEFAULT_CA_DAYS = 3650;
export const DEFAULT_CLIENT_NAME = "kfarm-client";
/** Names every server certificate carries, so a tracker on this machine is reachable by any of its loopback names. */
export const LOOPBACK_NAMES = ["localhost", "127.0.0.1", "::1"] as const;

/** What `certs init` writes, in order; keys are 0600. */
export const INIT_FILES = ["ca.crt", "ca.key", "server.crt", "server.key", "client.crt", "client.key"] as const;

const DNS_NAME = /^(\*\.)?[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*$/;
/** A certificate's common name, and (for `issue`) its file name: nothing that needs quoting in an openssl config or a path. */
const CERT_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;

export interface CertsInitOptions {
  /** Extra subjectAltNames of the server certificate (DNS names or IP addresses). */
  hosts?: string[];
  /** Validity of the server and client certificates. */
  days?: number;
  /** Validity of the CA. */
  caDays?: number;
  /** CN of the client certificate. */
  clientName?: string;
  /** Replace existing files. */
  force?: boolean;
}

export interface CertsIssueOptions {
  /** A server certificate NAME.crt/NAME.key ("server": rotate the one `init` made). */
  server?: string;
  /** A client certificate NAME.crt/NAME.key, CN NAME. */
  client?: string;
  hosts?: string[];
  days?: number;
}

export interface MadeCert {
  /** ca | server | client */
  role: "ca" | "server" | "client";
  certFile: string;
  keyFile: string;
  subject: string;
  serial: string;
  notAfter: string;
  /** subjectAltName as the certificate states it (servers). */
  altNames?: string;
}

/** Fails with TOOLCHAIN_MISSING when `openssl` is not installed. */
export function checkOpenssl(): void {
  const r = spawnSync("openssl", ["version"], { encoding: "utf8" });
  if (r.error && (r.error as NodeJS.ErrnoException).code === "ENOENT") {
    throw new FarmError(
      "TOOLCHAIN_MISSING",
      "kfarm certs needs the openssl command-line tool, which is not installed: apt-get install openssl (or your system's openssl package)",
    );
  }
  if (r.error || r.status !== 0) throw new FarmError("TOOLCHAIN_MISSING", `openssl version failed: ${r.error?.message ?? r.stderr.trim()}`);
}

function openssl(args: string[], cwd: string): void {
  const r = spawnSync("openssl", args, { cwd, encoding: "utf8" });
  if (r.error || r.status !== 0) {
    throw new FarmError(
      "INTERNAL",
      `openssl ${args[0]} failed (exit ${r.status ?? r.error?.message}): ${(r.stderr || "").trim().split("\n").slice(-3).join("; ")}`,
    );
  }
}

/** Splits hosts into DNS names and IP addresses, the loopback names first; refuses what is neither. */
export function subjectAltNames(hosts: readonly string[]): { dns: string[]; ips: string[] } {
  const dns: string[] = [];
  const ips: string[] = [];
  for (const raw of [...LOOPBACK_NAMES, ...hosts]) {
    let h = raw.trim().replace(/^\[(.*)\]$/, "$1");
    // One spelling per address: "0:0:0:0:0:0:0:1" (how certificates print it) is "::1".
    if (isIP(h) === 6) h = new URL(`http://[${h}]/`).hostname.slice(1, -1);
    if (isIP(h)) {
      if (!ips.includes(h)) ips.push(h);
    } else if (DNS_NAME.test(h)) {
      if (!dns.includes(h.toLowerCase())) dns.push(h.toLowerCase());
    } else {
      throw new FarmError("INVALID_ARGUMENT", `--host ${JSON.stringify(raw)} is neither a DNS name nor an IP address`);
    }
  }
  return { dns, ips };
}

function checkName(name: string, flag: string): void {
  if (!CERT_NAME.test(name))
    throw new FarmError(
      "INVALID_ARGUMENT",
      `${flag} ${JSON.stringify(name)}: use letters, digits, '.', '_' and '-' (at most 64, starting with a letter or digit)`,
    );
}

function checkDays(days: number, flag: string): void {
  if (!Number.isInteger(days) || days < 1 || days > 36500)
    throw new FarmError("INVALID_ARGUMENT", `${flag} must be a whole number of days between 1 and 36500, got ${days}`);
}

/** The openssl config of one certificate: its subject and the extensions of its role. */
function config(cn: string, role: MadeCert["role"], sans?: { dns: string[]; ips: string[] }): string {
  const lines = ["[req]", "distinguished_name = dn", "prompt = no", "[dn]", `CN = ${cn}`, "[ext]"];
  if (role === "ca") {
    lines.push("basicConstraints = critical, CA:TRUE, pathlen:0", "keyUsage = critical, keyCertSign, cRLSign", "subjectKeyIdentifier = hash");
  } else {
    // ECDSA keys sign the handshake (digitalSignature); clientAuth on the server's certificate lets the same pair serve as a client of another farm port.
    lines.push(
      "basicConstraints = critical, CA:FALSE",
      "keyUsage = critical, digitalSignature",
      `extendedKeyUsage = ${role === "server" ? "serverAuth, clientAuth" : "clientAuth"}`,
      "subjectKeyIdentifier = hash",
      "authorityKeyIdentifier = keyid",
    );
    if (sans) {
      lines.push("subjectAltName = @alt", "[alt]");
      sans.dns.forEach((d, i) => lines.push(`DNS.${i + 1} = ${d}`));
      sans.ips.forEach((ip, i) => lines.push(`IP.${i + 1} = ${ip}`));
    }
  }
  return `${lines.join("\n")}\n`;
}

/** A positive 128-bit serial (RFC 5280 allows up to 20 octets; the top bit clear keeps it positive). */
function randomSerial(): string {
  const b = randomBytes(16);
  b[0]! &= 0x7f;
  b[0]! |= 0x01;
  return `0x${b.toString("hex")}`;
}

/** The DNS names and IP addresses a certificate names. */
export function namesOf(certFile: string): string[] {
  const san = new X509Certificate(readFileSync(certFile)).subjectAltName ?? "";
  return san.split(", ").flatMap((e) => {
    const m = /^(DNS|IP Address):(.+)$/.exec(e.trim());
    return m ? [m[2]!] : [];
  });
}

function describeCert(role: MadeCert["role"], certFile: string, keyFile: string): MadeCert {
  const x = new X509Certificate(readFileSync(certFile));
  return {
    role,
    certFile,
    keyFile,
    subject: x.subject.replace(/\n/g, ", "),
    serial: x.serialNumber,
    notAfter: x.validTo,
    ...(x.subjectAltName ? { altNames: x.subjectAltName } : {}),
  };
}

function newKey(work: string, name: string): string {
  const key = join(work, `${name}.key`);
  openssl(["genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out", key], work);
  chmodSync(key, 0o600);
  return key;
}

/** Makes a leaf key and certificate signed by the CA in `dir`, inside `work`; returns their temporary paths. */
function signLeaf(
  dir: string,
  work: string,
  name: string,
  cn: string,
  role: "server" | "client",
  days: number,
  sans?: { dns: string[]; ips: string[] },
): { cert: string; key: string } {
  const conf = join(work, `${name}.cnf`);
  writeFileSync(conf, config(cn, role, sans));
  const key = newKey(work, name);
  const csr = join(work, `${name}.csr`);
  const cert = join(work, `${name}.crt`);
  openssl(["req", "-new", "-config", conf, "-key", key, "-sha256", "-out", csr], work);
  openssl(
    [
      "x509",
      "-req",
      "-in",
      csr,
      "-CA",
      join(dir, "ca.crt"),
      "-CAkey",
      join(dir, "ca.key"),
      "-set_serial",
      randomSerial(),
      "-days",
      String(days),
      "-sha256",
      "-extfile",
      conf,
      "-extensions",
      "ext",
      "-out",
      cert,
    ],
    work,
  );
  return { cert, key };
}

/** Runs `fn` with a private (0700) scratch directory inside `dir`, on the same file system so renames out of it are atomic. */
function withScratch<T>(dir: string, fn: (work: string) => T): T {
  const work = mkdtempSync(join(dir, ".kfarm-certs-"));
  try {
    return fn(work);
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

/**
 * Puts a new pair in place of `certFile`/`keyFile`. Each rename is atomic, so
 * a reader sees a whole old or a whole new file, never half of one; the two
 * renames follow each other at once, and the reloaders keep the pair they
 * serve when they read a key that does not match its certificate (credentials.ts),
 * so the microseconds between them cost nothing. The key goes first: a reader
 * that sees only one new file then holds a new key it cannot use, not a new
 * certificate it would announce without the key to prove it.
 */
function install(pair: { cert: string; key: string }, certFile: string, keyFile: string): void {
  renameSync(pair.key, keyFile);
  renameSync(pair.cert, certFile);
}

/** `kfarm certs init`: a CA, a server certificate (loopback names + `hosts`) and a client certificate in `dir`. */
export function certsInit(dirArg: string, opts: CertsInitOptions = {}): MadeCert[] {
  const dir = resolve(dirArg);
  const days = opts.days ?? DEFAULT_LEAF_DAYS;
  const caDays = opts.caDays ?? DEFAULT_CA_DAYS;
  const clientName = opts.clientName ?? DEFAULT_CLIENT_NAME;
  checkDays(days, "--days");
  checkDays(caDays, "--ca-days");
  if (days > caDays)
    throw new FarmError("INVALID_ARGUMENT", `--days ${days} outlives the CA (--ca-days ${caDays}): a certificate is refused once its CA expires`);
  checkName(clientName, "--client-name");
  const sans = subjectAltNames(opts.hosts ?? []);
  checkOpenssl();
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const existing = INIT_FILES.filter((f) => existsSync(join(dir, f)));
  if (existing.length && !opts.force) {
    throw new FarmError(
      "INVALID_ARGUMENT",
      `${dir} already holds ${existing.join(", ")}: pass --force to replace them (every certificate the old CA signed stops working), or \`kfarm certs issue\` to add one`,
    );
  }
  return withScratch(dir, (work) => {
    const caConf = join(work, "ca.cnf");
    writeFileSync(caConf, config("kernelfarm CA", "ca"));
    const caKey = newKey(work, "ca");
    const caCert = join(work, "ca.crt");
    openssl(
      [
        "req",
        "-x509",
        "-new",
        "-config",
        caConf,
        "-extensions",
        "ext",
        "-key",
        caKey,
        "-sha256",
        "-days",
        String(caDays),
        "-set_serial",
        randomSerial(),
        "-out",
        caCert,
      ],
      work,
    );
    // The leaves are signed by the new CA: it goes in place first (they are read from dir).
    install({ cert: caCert, key: caKey }, join(dir, "ca.crt"), join(dir, "ca.key"));
    const server = signLeaf(dir, work, "server", "kernelfarm-tracker", "server", days, sans);
    install(server, join(dir, "server.crt"), join(dir, "server.key"));
    const client = signLeaf(dir, work, "client", clientName, "client", days);
    install(client, join(dir, "client.crt"), join(dir, "client.key"));
    return [
      describeCert("ca", join(dir, "ca.crt"), join(dir, "ca.key")),
      describeCert("server", join(dir, "server.crt"), join(dir, "server.key")),
      describeCert("client", join(dir, "client.crt"), join(dir, "client.key")),
    ];
  });
}

/** `kfarm certs issue`: another server or client certificate from the CA in `dir`, replacing NAME.crt/NAME.key in place (rotation). */
export function certsIssue(dirArg: string, opts: CertsIssueOptions): MadeCert {
  const dir = resolve(dirArg);
  if (!!opts.server === !!opts.client) throw new FarmError("INVALID_ARGUMENT", "kfarm certs issue: give exactly one of --server NAME or --client NAME");
  const role = opts.server ? "server" : "client";
  const name = (opts.server ?? opts.client)!;
  checkName(name, `--${role}`);
  if (name === "ca") throw new FarmError("INVALID_ARGUMENT", `--${role} ca would replace the CA's own files; pick another name`);
  if (role === "client" && opts.hosts?.length) throw new FarmError("INVALID_ARGUMENT", "--host names a server's addresses; a client certificate carries none");
  const days = opts.days ?? DEFAULT_LEAF_DAYS;
  checkDays(days, "--days");
  // Re-issuing a server certificate in place keeps its names unless --host gives new ones: a rotation must not drop an address clients use.
  const previous = join(dir, `${name}.crt`);
  const hosts = opts.hosts?.length ? opts.hosts : role === "server" && existsSync(previous) ? namesOf(previous) : [];
  const sans = role === "server" ? subjectAltNames(hosts) : undefined;
  for (const f of ["ca.crt", "ca.key"]) {
    if (!existsSync(join(dir, f))) throw new FarmError("INVALID_ARGUMENT", `${join(dir, f)} does not exist: \`kfarm certs init ${dirArg}\` makes the CA first`);
  }
  checkOpenssl();
  // The server's CN is informational (clients check the subjectAltNames); the client's CN is who it is.
  const cn = role === "server" ? (name === "server" ? "kernelfarm-tracker" : name) : name;
  return withScratch(dir, (work) => {
    const pair = signLeaf(dir, work, name, cn, role, days, sans);
    install(pair, join(dir, `${name}.crt`), join(dir, `${name}.key`));
    return describeCert(role, join(dir, `${name}.crt`), join(dir, `${name}.key`));
  });
}

function days(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1) throw new InvalidArgumentError(`${JSON.stringify(value)} is not a whole number of days`);
  return n;
}

function report(made: MadeCert[]): string {
  return made
    .map(
      (m) =>
        `${m.role.padEnd(6)} ${m.certFile}  (key ${m.keyFile}, 0600)\n       ${m.subject}; serial ${m.serial}; valid until ${m.notAfter}${m.altNames ? `\n       names: ${m.altNames}` : ""}`,
    )
    .join("\n");
}

function nextSteps(dir: string): string {
  const d = (f: string) => join(dir, f);
  return [
    "",
    "next:",
    `  tracker:  kfarm tracker --host 0.0.0.0 --tls-cert ${d("server.crt")} --tls-key ${d("server.key")} --tokens tokens.json`,
    `            (mutual TLS: add --tls-client-ca ${d("ca.crt")})`,
    `  agent:    kfarm agent --tracker HOST:9190 --tls-ca ${d("ca.crt")} --board cpu:key=cpu`,
    `            (mutual TLS: add --tls-cert ${d("client.crt")} --tls-key ${d("client.key")})`,
    `            its direct lane needs a certificate of its own: kfarm certs issue ${dir} --server AGENT --host AGENT-HOST,`,
    `            then --data-tls-cert AGENT.crt --data-tls-key AGENT.key --data-advertise AGENT-HOST (else its sessions take the relay)`,
    `  host:     KFARM_TLS_CA=${d("ca.crt")} (and KFARM_TLS_CERT / KFARM_TLS_KEY for mutual TLS), or connectTracker(addr, { tls: { caFile } })`,
    `  rotate:   kfarm certs issue ${dir} --server server   (the tracker re-reads it within a second)`,
    "  copy ca.crt to every machine; keep ca.key off the network (it signs new certificates).",
  ].join("\n");
}

const collect = (v: string, acc: string[]) => [...acc, v];

export function addCertsCommand(program: Command): void {
  const certs = program.command("certs").description("a CA and TLS certificates for a farm (with openssl)");

  certs
    .command("init")
    .description("make a CA, a server certificate (tracker) and a client certificate (agents, hosts) in DIR")
    .argument("<dir>", "where the files go (made if missing): ca.crt ca.key server.crt server.key client.crt client.key")
    .option("--host <name>", "a DNS name or IP address of the tracker, repeatable (localhost, 127.0.0.1 and ::1 are always in)", collect, [] as string[])
    .addOption(new Option("--days <n>", "validity of the server and client certificates").default(DEFAULT_LEAF_DAYS).argParser(days))
    .addOption(new Option("--ca-days <n>", "validity of the CA").default(DEFAULT_CA_DAYS).argParser(days))
    .option("--client-name <cn>", "the client certificate's common name", DEFAULT_CLIENT_NAME)
    .option("--force", "replace existing files (certificates of the old CA stop working)")
    .action((dir: string, o: { host: string[]; days: number; caDays: number; clientName: string; force?: boolean }) => {
      const made = certsInit(dir, { hosts: o.host, days: o.days, caDays: o.caDays, clientName: o.clientName, force: o.force });
      console.log(`made a CA and certificates in ${resolve(dir)}:\n${report(made)}${nextSteps(resolve(dir))}`);
    });

  certs
    .command("issue")
    .description("make another server or client certificate with DIR's CA, replacing NAME.crt/NAME.key atomically (rotation: --server server)")
    .argument("<dir>", "the directory `kfarm certs init` made")
    .option("--server <name>", 'a server certificate NAME.crt/NAME.key ("server": the tracker\'s, in place)')
    .option("--client <name>", "a client certificate NAME.crt/NAME.key with common name NAME")
    .option(
      "--host <name>",
      "a DNS name or IP address of the server, repeatable (loopback names are always in; default: the names of the certificate it replaces)",
      collect,
      [] as string[],
    )
    .addOption(new Option("--days <n>", "validity").default(DEFAULT_LEAF_DAYS).argParser(days))
    .action((dir: string, o: { server?: string; client?: string; host: string[]; days: number }) => {
      const made = certsIssue(dir, { server: o.server, client: o.client, hosts: o.host, days: o.days });
      console.log(`issued:\n${report([made])}`);
      if (made.role === "server") console.log("a tracker serving these files picks them up within a second; nothing to restart.");
    });
}
