/**
 * The multi-host test bed: hosts of their own (network namespaces, each with
 * its own kernel TCP stack, address and `lo`) joined by one switch, the wire
 * (wire.c), through a TUN device per host. Links get delay, jitter, loss and
 * rate limits per direction, and can be cut (no FIN, no RST: packets vanish)
 * and restored; a one-way block drops what one host sends another.
 *
 * Why not veth pairs, a bridge and `tc netem`: the kernels this runs on (this
 * machine's and CI's) are built without netem and without tc's drop actions
 * (CONFIG_NET_SCH_NETEM, CONFIG_NET_ACT_GACT unset), so the wire does in
 * userspace what netem would do on a veth. Everything above the wire — TCP,
 * keepalives, retransmits, the farm's processes — is the real thing.
 *
 * The bed cleans up whatever happens: `destroy()`, a process exit handler,
 * and, at the next start, namespaces left by a bed whose process is gone.
 *
 * Of iproute2 it needs `ip` alone (netns add/del/list/exec, link, addr; no
 * tc), taken from $KFARM_IP where set (tests/helpers/ip.ts): a host without
 * iproute2 runs a packed one (bench/lib/pack-iproute2.sh).
 */
import { execFileSync, spawn, spawnSync, type ChildProcess } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync, mkdirSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { IP } from "../helpers/ip.ts";

const WIRE_SOURCE = fileURLToPath(new URL("./wire.c", import.meta.url));
const NS_PREFIX = "kfmh";
const SUBNET = "10.213.0";

/** One direction or both of a host's link to the switch; `up` is what the host sends, `down` what it receives. */
export interface LinkSettings {
  delayMs?: number;
  jitterMs?: number;
  lossPct?: number;
  rateMbit?: number;
  dir?: "both" | "up" | "down";
}

export interface BedHost {
  readonly name: string;
  /** Its network namespace (`ip netns exec NS …`). */
  readonly ns: string;
  readonly address: string;
}

export interface LinkStats {
  sentPackets: number;
  sentBytes: number;
  dropped: number;
}

/** Why the bed cannot be made here, or false. The multi-host suite skips with this reason. */
export function netBedUnavailable(): string | false {
  if (process.platform !== "linux") return `network namespaces are Linux's; this is ${process.platform}`;
  if (process.getuid?.() !== 0) return "needs root to make network namespaces and TUN devices (CI runs as root)";
  const version = spawnSync(IP, ["-V"], { encoding: "utf8" });
  if (version.status !== 0) {
    return process.env.KFARM_IP
      ? `KFARM_IP=${IP} does not run: ${version.error?.message ?? version.stderr.trim()}`
      : "the ip tool (iproute2) is not installed (KFARM_IP may name one: bench/lib/pack-iproute2.sh packs this machine's)";
  }
  if (!existsSync("/dev/net/tun")) return "/dev/net/tun does not exist (no TUN support)";
  if (spawnSync("cc", ["--version"]).status !== 0) return "no C compiler (cc) to build the wire";
  const probe = `${NS_PREFIX}probe${process.pid}`;
  const made = spawnSync(IP, ["netns", "add", probe], { encoding: "utf8" });
  if (made.status !== 0) return `ip netns add fails here: ${made.stderr.trim()}`;
  // exec makes a mount namespace and mounts /sys in it: a container may allow the one and not the other.
  const exec = spawnSync(IP, ["netns", "exec", probe, process.execPath, "-e", ""], { encoding: "utf8" });
  spawnSync(IP, ["netns", "del", probe]);
  if (exec.status !== 0) return `ip netns exec fails here: ${exec.stderr.trim()}`;
  return false;
}

/** Builds the wire once per source version, in the user's temp folder. */
function wireBinary(): string {
  const source = readFileSync(WIRE_SOURCE);
  const dir = join(tmpdir(), "kfarm-wire");
  const bin = join(dir, `wire-${createHash("sha256").update(source).digest("hex").slice(0, 12)}`);
  if (!existsSync(bin)) {
    mkdirSync(dir, { recursive: true });
    const tmp = `${bin}.${process.pid}`;
    execFileSync("cc", ["-O2", "-Wall", "-Wextra", "-Werror", "-o", tmp, WIRE_SOURCE], { stdio: "pipe" });
    execFileSync("mv", [tmp, bin]);
  }
  return bin;
}

function ip(...args: string[]): void {
  const r = spawnSync(IP, args, { encoding: "utf8" });
  if (r.status !== 0) throw new Error(`ip ${args.join(" ")}: ${r.stderr.trim()}`);
}

/** Namespaces of beds whose process has died (a killed test run). */
function removeStaleNamespaces(): void {
  const list = spawnSync(IP, ["netns", "list"], { encoding: "utf8" }).stdout ?? "";
  for (const line of list.split("\n")) {
    const ns = line.split(" ")[0] ?? "";
    const m = /^kfmh(\d+)-/.exec(ns);
    if (!m) continue;
    const pid = Number(m[1]);
    let alive = true;
    try {
      process.kill(pid, 0);
    } catch {
      alive = false;
    }
    if (!alive) spawnSync(IP, ["netns", "del", ns]);
  }
}

const liveBeds = new Set<NetBed>();
process.on("exit", () => {
  for (const bed of liveBeds) bed.destroySync();
});

export class NetBed {
  private readonly hosts = new Map<string, BedHost>();
  private readonly replies: Array<(line: string) => void> = [];
  private destroyed = false;

  private constructor(private readonly wire: ChildProcess) {
    createInterface({ input: wire.stdout! }).on("line", (line) => this.replies.shift()?.(line));
    liveBeds.add(this);
  }

  /** Makes one host per name, addresses 10.213.0.10, .11, … in order. */
  static async create(names: string[]): Promise<NetBed> {
    removeStaleNamespaces();
    const wire = spawn(wireBinary(), [], { stdio: ["pipe", "pipe", "inherit"] });
    const bed = new NetBed(wire);
    try {
      let n = 10;
      for (const name of names) await bed.addHost(name, `${SUBNET}.${n++}`);
    } catch (err) {
      bed.destroySync();
      throw err;
    }
    return bed;
  }

  private command(line: string): Promise<string> {
    if (this.destroyed) return Promise.reject(new Error(`the bed is destroyed: ${line}`));
    return new Promise((resolve, reject) => {
      this.replies.push((reply) => (reply.startsWith("ok") ? resolve(reply.slice(3)) : reject(new Error(`wire: ${line}: ${reply}`))));
      this.wire.stdin!.write(`${line}\n`);
    });
  }

  private async addHost(name: string, address: string): Promise<void> {
    const ns = `${NS_PREFIX}${process.pid}-${name}`;
    // TUN names live in the creating namespace first: the pid keeps two beds' names apart there.
    const ifname = `kf${process.pid % 100000}${name.slice(0, 1)}${this.hosts.size}`.slice(0, 15);
    ip("netns", "add", ns);
    this.hosts.set(name, { name, ns, address });
    await this.command(`port ${name} ${address} ${ifname}`);
    ip("link", "set", ifname, "netns", ns);
    ip("-n", ns, "link", "set", ifname, "name", "eth0");
    // The wire forwards IPv4 only; IPv6's own chatter (router solicitations) would only be dropped.
    // Written by sh inside the namespace (its /proc/sys/net is the namespace's): no procps needed.
    spawnSync(IP, ["netns", "exec", ns, "sh", "-c", "echo 1 > /proc/sys/net/ipv6/conf/all/disable_ipv6"], { stdio: "ignore" });
    ip("-n", ns, "addr", "add", `${address}/24`, "dev", "eth0");
    ip("-n", ns, "link", "set", "eth0", "txqueuelen", "10000");
    ip("-n", ns, "link", "set", "eth0", "up");
    ip("-n", ns, "link", "set", "lo", "up");
  }

  host(name: string): BedHost {
    const h = this.hosts.get(name);
    if (!h) throw new Error(`the bed has no host ${name}; it has ${[...this.hosts.keys()].join(", ")}`);
    return h;
  }

  /** Sets a host's link: what is not named keeps its value. */
  async link(name: string, s: LinkSettings): Promise<void> {
    this.host(name);
    const parts = [`dir=${s.dir ?? "both"}`];
    if (s.delayMs !== undefined) parts.push(`delay=${s.delayMs}`);
    if (s.jitterMs !== undefined) parts.push(`jitter=${s.jitterMs}`);
    if (s.lossPct !== undefined) parts.push(`loss=${s.lossPct}`);
    if (s.rateMbit !== undefined) parts.push(`rate=${s.rateMbit}`);
    await this.command(`link ${name} ${parts.join(" ")}`);
  }

  /** Every host's link, both directions. */
  async allLinks(s: LinkSettings): Promise<void> {
    for (const name of this.hosts.keys()) await this.link(name, s);
  }

  /** Unplugs a host: what it sends and what is sent to it vanish, packets in flight with them. */
  async cut(name: string): Promise<void> {
    this.host(name);
    await this.command(`link ${name} down`);
  }

  async restore(name: string): Promise<void> {
    this.host(name);
    await this.command(`link ${name} up`);
  }

  /** Drops every packet `from` sends `to` (one way). */
  async block(from: string, to: string): Promise<void> {
    await this.command(`block ${from} ${to}`);
  }

  async unblock(from: string, to: string): Promise<void> {
    await this.command(`unblock ${from} ${to}`);
  }

  async stats(name: string): Promise<LinkStats> {
    const line = await this.command(`stats ${name}`);
    const get = (k: string) => Number(new RegExp(`${k}=(\\d+)`).exec(line)?.[1] ?? NaN);
    return { sentPackets: get("sent_packets"), sentBytes: get("sent_bytes"), dropped: get("dropped") };
  }

  /** Removes the hosts and stops the wire. */
  async destroy(): Promise<void> {
    this.destroySync();
  }

  destroySync(): void {
    if (this.destroyed) return;
    this.destroyed = true;
    liveBeds.delete(this);
    this.wire.stdin!.end();
    this.wire.kill("SIGKILL");
    // Deleting a namespace kills nothing in it: the test stops its processes first; this removes the names.
    for (const { ns } of this.hosts.values()) spawnSync(IP, ["netns", "del", ns]);
    for (const r of this.replies.splice(0)) r("error the bed was destroyed");
  }
}
