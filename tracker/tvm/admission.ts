/**
 * Who the TVM port admits. TVM's clients and servers send no token (their
 * protocol has no place for one), so the port cannot ask who a peer is: it
 * admits by where the peer connects from (`--tvm-allow`, networks in CIDR
 * form, loopback only by default) and limits what may be served on it
 * (`--tvm-keys`, every key by default). docs/security.md, "TVM's tracker
 * protocol", says what that does and does not protect.
 */
import { BlockList, isIP } from "node:net";
import { FarmError } from "../../protos/index.ts";

/** Loopback: a TVM port nobody else can reach unless an operator says so. */
export const DEFAULT_TVM_ALLOW = ["127.0.0.0/8", "::1/128"] as const;

/** A peer address as the socket gives it, IPv4-mapped IPv6 ("::ffff:10.0.0.5") written as IPv4. */
export function plainAddress(address: string | undefined): string {
  if (!address) return "";
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  return mapped ? mapped[1]! : address;
}

export class TvmAdmission {
  private readonly networks = new BlockList();
  /** The keys that may be served and requested; undefined: every key. */
  private readonly keySet: ReadonlySet<string> | undefined;

  /**
   * `allow`: networks (`10.0.0.0/8`, `fd00::/8`) or single addresses;
   * `keys`: the keys the port serves (undefined or empty: all). Throws
   * INVALID_ARGUMENT naming an entry it cannot read.
   */
  constructor(
    readonly allow: readonly string[],
    readonly keys: readonly string[] | undefined,
  ) {
    if (allow.length === 0) throw new FarmError("INVALID_ARGUMENT", "--tvm-allow names no network: give at least one CIDR (default 127.0.0.0/8,::1/128)");
    for (const entry of allow) {
      const [address = "", prefix, extra] = entry.trim().split("/");
      const family = isIP(address);
      const bits = prefix === undefined ? (family === 6 ? 128 : 32) : Number(prefix);
      if (family === 0 || extra !== undefined || !Number.isInteger(bits) || bits < 0 || bits > (family === 6 ? 128 : 32) || prefix === "") {
        throw new FarmError(
          "INVALID_ARGUMENT",
          `--tvm-allow: ${JSON.stringify(entry)} is not a network: write ADDRESS/PREFIX, e.g. 10.1.0.0/16 or fd00::/8 (a bare address is one host)`,
        );
      }
      this.networks.addSubnet(address, bits, family === 6 ? "ipv6" : "ipv4");
    }
    const named = keys?.map((k) => k.trim()).filter(Boolean) ?? [];
    this.keySet = named.length ? new Set(named) : undefined;
  }

  /** Why a peer at `address` is refused, or undefined when it is admitted. */
  refusesPeer(address: string): string | undefined {
    const plain = plainAddress(address);
    const family = isIP(plain);
    if (family !== 0 && this.networks.check(plain, family === 6 ? "ipv6" : "ipv4")) return undefined;
    return `${plain || "an unknown address"} is not in the TVM port's networks (--tvm-allow ${this.allow.join(",")}); TVM peers send no token, so the port admits by network: an operator adds yours with --tvm-allow`;
  }

  /** Why `key` may not be served or requested on the TVM port, or undefined when it may. */
  refusesKey(key: string): string | undefined {
    if (!this.keySet || this.keySet.has(key)) return undefined;
    return `key "${key}" is not served on the TVM port (--tvm-keys ${[...this.keySet].join(",")})`;
  }

  /** Whether any admitted network reaches beyond this host (worth a warning at start). */
  get beyondLoopback(): boolean {
    return this.allow.some((entry) => {
      const [address = "", prefix] = entry.trim().split("/");
      const loopback =
        isIP(address) === 6
          ? address === "::1" && (prefix === undefined || prefix === "128")
          : address.startsWith("127.") && (prefix === undefined || Number(prefix) >= 8);
      return !loopback;
    });
  }
}
