/**
 * The closed sets that travel as protobuf enums, under the lowercase names
 * users see. On the wire a value is "ROUTE_DIRECT" (proto-loader's `enums:
 * String`, protos/grpc.ts) or its number (protobufjs's own decoders); in
 * every other place (CLI flags, `kfarm status --json`, the live view, metrics
 * labels, logs, docs, the Python SDK's objects) it is "direct".
 *
 * One rule maps the two, for every enum: the value without the enum's
 * prefix, lowercased, `_` as `-` (ROUTE_DIRECT ↔ "direct"). A 0 value named
 * `<PREFIX>UNSPECIFIED` has no name (unset: refused on read, never written);
 * a codec's `empty` value stands for the empty string (LANE_NONE ↔ "").
 * The names' types come from the generated enum types, so a value added to
 * a .proto file is a name here without another declaration. Where
 * contract.json declares the names too (the lanes, the auto route), the
 * codec refuses to load when the two disagree. python/kernelfarm/enums.py
 * applies the same rule.
 */
import { createRequire } from "node:module";
import type * as Protobuf from "protobufjs";
import { fileURLToPath } from "node:url";
import { FarmError, type FarmErrorCode } from "./errors.ts";
import { AUTO_ROUTE, LANES } from "./gen/contract.ts";
import type { Lane__Output } from "./gen/farm/v1/Lane.ts";
import type { Route__Output } from "./gen/farm/v1/Route.ts";

const require = createRequire(import.meta.url);
const protobuf = require("protobufjs") as typeof Protobuf;

const root = new protobuf.Root();
root.resolvePath = (_origin, target) => (target.startsWith("farm/") ? fileURLToPath(new URL(target, import.meta.url)) : target);
root.loadSync(["farm/v1/common.proto", "farm/v1/agent.proto", "farm/v1/host.proto", "farm/v1/worker.proto"], { keepCase: true });

type Kebab<S extends string> = S extends `${infer A}_${infer B}` ? `${A}-${Kebab<B>}` : S;
/** The name users see of wire value `W` of the enum whose values start with `P`; `E`: the value that stands for "". */
export type EnumName<W extends string, P extends string, E extends string = never> = W extends E ? "" : W extends `${P}UNSPECIFIED` ? never : W extends `${P}${infer R}` ? Kebab<Lowercase<R>> : never;

/** One enum's names, both ways. `what` in the methods says whose value it is, for the error. */
export class EnumCodec<W extends string, N extends string> {
  /** The names users see, in the enum's order. */
  readonly names: readonly N[];
  private readonly wireOf = new Map<string, W>();
  private readonly nameOf = new Map<string | number, N>();

  /** `type`: the enum's full name ("farm.v1.Route"); `label`: what its values are, in errors ("route"). */
  constructor(
    readonly type: string,
    readonly label: string,
    empty?: W,
  ) {
    const e = root.lookupEnum(type);
    const prefix = e.name.replace(/[a-z0-9](?=[A-Z])/g, "$&_").toUpperCase() + "_";
    const names: N[] = [];
    for (const [wire, num] of Object.entries(e.values)) {
      if (!wire.startsWith(prefix)) throw new Error(`${type}: ${wire} does not start with ${prefix}`);
      if (wire === `${prefix}UNSPECIFIED`) continue;
      const name = (wire === empty ? "" : wire.slice(prefix.length).toLowerCase().replaceAll("_", "-")) as N;
      names.push(name);
      this.wireOf.set(name, wire as W);
      this.nameOf.set(wire, name).set(num, name);
    }
    if (empty !== undefined && !this.wireOf.has("" as N)) throw new Error(`${type} has no value ${empty}`);
    this.names = names;
  }

  /** "direct" → "ROUTE_DIRECT", for a message being built. */
  toWire(name: N): W {
    return this.wireOf.get(name) ?? this.refuse(name, "a message being built", "INTERNAL");
  }

  /** "ROUTE_DIRECT", or its number, from a decoded message → "direct"; an unknown or unset value is refused with `code`. */
  fromWire(value: string | number | null | undefined, what: string, code: FarmErrorCode = "INVALID_ARGUMENT"): N {
    return (value === null || value === undefined ? undefined : this.nameOf.get(value)) ?? this.refuse(value, what, code);
  }

  /** A name as a user or a caller gave it ("direct") → the same, typed; anything else is refused naming the choices. */
  parse(value: string, what: string): N {
    return this.wireOf.has(value) ? (value as N) : this.refuse(value, what, "INVALID_ARGUMENT");
  }

  private refuse(value: unknown, what: string, code: FarmErrorCode): never {
    const choices = this.names.map((n) => (n === "" ? '"" (none)' : n)).join(", ");
    throw new FarmError(code, `${what}: ${this.label} must be one of ${choices}, got ${JSON.stringify(value) ?? String(value)}`);
  }
}

/** Checks, as this module loads, that an enum has exactly the names another declaration gives it (contract.json). */
function agree<N extends string>(codec: EnumCodec<string, N>, declared: readonly string[], where: string): void {
  const missing = declared.filter((n) => !(codec.names as readonly string[]).includes(n));
  const extra = codec.names.filter((n) => !declared.includes(n));
  if (missing.length || extra.length) throw new Error(`${codec.type} and ${where} disagree: ${[...missing.map((n) => `${JSON.stringify(n)} only in ${where}`), ...extra.map((n) => `${JSON.stringify(n)} only in ${codec.type}`)].join("; ")}`);
}

/** How a host asks its session's frames to travel (protos/routes.ts). */
export const ROUTE = new EnumCodec<Route__Output, EnumName<Route__Output, "ROUTE_">>("farm.v1.Route", "route");
/** How a session's frames do travel; "" until its lane opens; "tvm": a TVM server's board, reached by the TVM client itself. */
export const LANE = new EnumCodec<Lane__Output, EnumName<Lane__Output, "LANE_", "LANE_NONE">>("farm.v1.Lane", "lane", "LANE_NONE");

agree(ROUTE, [AUTO_ROUTE, ...LANES], "contract.json's autoRoute and lanes");
agree(LANE, ["", ...LANES, "tvm"], `contract.json's lanes (with "" and tvm)`);
