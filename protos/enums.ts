/**
 * The closed sets that travel as protobuf enums, under the lowercase names
 * users see. On the wire a value is "ROUTE_DIRECT" (proto-loader's `enums:
 * String`, protos/grpc.ts) or its number (protobufjs's own decoders); in
 * every other place (CLI flags, `kfarm status --json`, the live view, metrics
 * labels, logs, docs, the Python SDK's objects) it is "direct".
 *
 * One rule maps the two, for every enum: the value without the enum's
 * prefix, lowercased, `_` as `-` (ROUTE_DIRECT ↔ "direct"). A 0 value named
 * `<PREFIX>UNSPECIFIED` is "", unset, as the string field it replaced was
 * (its reader says whether unset is allowed), and not one of the choices an
 * error names; a codec's `empty` value is "" too, and one of the choices
 * (LANE_NONE: no lane yet).
 * The names' types come from the generated enum types, so a value added to
 * a .proto file is a name here without another declaration. Where
 * contract.json declares the names too (the lanes, the auto route, the board
 * kinds agents serve), the codec refuses to load when the two disagree.
 * python/kernelfarm/enums.py applies the same rule.
 *
 * toWireMessage and fromWireMessage convert every enum field of a message,
 * nested messages included, by the message's reflection: the codecs of
 * protos/ call them where messages are encoded and decoded, and a part that
 * builds or reads a gRPC message itself calls them at that point.
 */
import type * as Protobuf from "protobufjs";
import { protobuf, root } from "./contract-root.ts";
import { FarmError, type FarmErrorCode } from "./errors.ts";
import { AUTO_ROUTE, BOARD_KINDS, LANES } from "./gen/contract.ts";
import type { BoardAction__Output } from "./gen/farm/v1/BoardAction.ts";
import type { BoardHealth__Output } from "./gen/farm/v1/BoardHealth.ts";
import type { BoardKind__Output } from "./gen/farm/v1/BoardKind.ts";
import type { BoardState__Output } from "./gen/farm/v1/BoardState.ts";
import type { HealthReportKind__Output } from "./gen/farm/v1/HealthReportKind.ts";
import type { TokenAction__Output } from "./gen/farm/v1/TokenAction.ts";
import type { TokenKind__Output } from "./gen/farm/v1/TokenKind.ts";
import type { Lane__Output } from "./gen/farm/v1/Lane.ts";
import type { LaneRole__Output } from "./gen/farm/v1/LaneRole.ts";
import type { Route__Output } from "./gen/farm/v1/Route.ts";

type Kebab<S extends string> = S extends `${infer A}_${infer B}` ? `${A}-${Kebab<B>}` : S;
/** The name users see of wire value `W` of the enum whose values start with `P`; `E`: the value that stands for "". */
export type EnumName<W extends string, P extends string, E extends string = never> = W extends E
  ? ""
  : W extends `${P}UNSPECIFIED`
    ? never
    : W extends `${P}${infer R}`
      ? Kebab<Lowercase<R>>
      : never;
/** "" where the enum has an UNSPECIFIED value: what an unset field reads as, and is written from. */
export type Unset<W extends string> = [Extract<W, `${string}_UNSPECIFIED`>] extends [never] ? never : "";

/** One enum's names, both ways. `what` in the methods says whose value it is, for the error. */
export class EnumCodec<W extends string, N extends string> {
  /** The choices, as users see them, in the enum's order ("" only where it means something: `empty`). */
  readonly names: readonly N[];
  private readonly wireOf = new Map<string, W>();
  private readonly numberOf = new Map<string, number>();
  private readonly nameOf = new Map<string | number, N | Unset<W>>();

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
      const unset = wire === `${prefix}UNSPECIFIED`;
      const name = (unset || wire === empty ? "" : wire.slice(prefix.length).toLowerCase().replaceAll("_", "-")) as N;
      if (!unset) names.push(name);
      this.wireOf.set(name, wire as W);
      this.numberOf.set(name, num);
      this.nameOf.set(wire, name).set(num, name);
    }
    if (empty !== undefined && !names.includes("" as N)) throw new Error(`${type} has no value ${empty}`);
    this.names = names;
    CODECS.set(e.fullName, this);
  }

  /** "direct" → "ROUTE_DIRECT", for a message being built. */
  toWire(name: N | Unset<W>): W {
    return this.wireOf.get(name) ?? this.refuse(name, "a message being built", "INTERNAL");
  }

  /** "direct" → 1, for protobufjs's encode, which takes an enum's number only. */
  toNumber(name: N | Unset<W>): number {
    return this.numberOf.get(name) ?? this.refuse(name, "a message being built", "INTERNAL");
  }

  /** "ROUTE_DIRECT", or its number, from a decoded message → "direct"; a value outside the enum is refused with `code`. */
  fromWire(value: string | number | null | undefined, what: string, code: FarmErrorCode = "INVALID_ARGUMENT"): N | Unset<W> {
    return (value === null || value === undefined ? undefined : this.nameOf.get(value)) ?? this.refuse(value, what, code);
  }

  /** A name as a user or a caller gave it ("direct") → the same, typed; anything else, unset included, is refused naming the choices. */
  parse(value: string, what: string): N {
    return (this.names as readonly string[]).includes(value) ? (value as N) : this.refuse(value, what, "INVALID_ARGUMENT");
  }

  /**
   * As fromWire, for a field that may hold only `choices` of the enum (an
   * agent's board: the kinds agents serve): any other value, unset included,
   * is refused naming those, a value of the enum by its name ("tvm-rpc").
   */
  fromWireAmong<C extends N>(choices: readonly C[], value: string | number | null | undefined, what: string, code: FarmErrorCode = "INVALID_ARGUMENT"): C {
    const name = value === null || value === undefined ? undefined : this.nameOf.get(value);
    return name !== undefined && (choices as readonly string[]).includes(name) ? (name as C) : this.refuse(name ?? value, what, code, choices);
  }

  private refuse(value: unknown, what: string, code: FarmErrorCode, among: readonly string[] = this.names): never {
    const choices = among.map((n) => (n === "" ? '"" (none)' : n)).join(", ");
    throw new FarmError(code, `${what}: ${this.label} must be one of ${choices}, got ${JSON.stringify(value) ?? String(value)}`);
  }
}

/** Every codec, by its enum's reflected full name (".farm.v1.Route"). */
const CODECS = new Map<string, EnumCodec<string, string>>();

/** A field that holds an enum with a codec, or a message that does (its own plan). */
interface PlannedField {
  readonly name: string;
  readonly codec: EnumCodec<string, string> | undefined;
  readonly inner: Plan | undefined;
  readonly map: boolean;
  readonly repeated: boolean;
}
/** The fields of a message type that need converting; undefined when none does. */
type Plan = readonly PlannedField[] | undefined;

/**
 * Each message type's plan, made once: a conversion then visits only the
 * fields that hold enums (a grant's 3 of its ~20 fields, nested ones
 * included), which matters on a farm that sat idle and runs this cold.
 */
const plans = new Map<Protobuf.Type, Plan>();
function planOf(type: Protobuf.Type): Plan {
  if (plans.has(type)) return plans.get(type);
  plans.set(type, undefined); // a recursive message: what it holds is decided below
  type.resolveAll();
  const fields: PlannedField[] = [];
  for (const f of type.fieldsArray) {
    const codec = f.resolvedType instanceof protobuf.Enum ? CODECS.get(f.resolvedType.fullName) : undefined;
    const inner = f.resolvedType instanceof protobuf.Type ? planOf(f.resolvedType) : undefined;
    if (codec || inner) fields.push({ name: f.name, codec, inner, map: !!f.map, repeated: f.repeated });
  }
  const plan = fields.length ? fields : undefined;
  plans.set(type, plan);
  return plan;
}
const typePlans = new Map<string, Plan>();
function planByName(type: string): Plan {
  if (!typePlans.has(type)) typePlans.set(type, planOf(root.lookupType(type)));
  return typePlans.get(type);
}

/** How one enum value is converted: to its wire value, or from it (refused with `code`, naming `what`). */
type Direction = { readonly toWire: true; readonly numbers: boolean } | { readonly toWire: false; readonly what: string; readonly code: FarmErrorCode };

/** A copy of `value` (a plain object, as grpc-js and toObject give) with its enum fields converted; fields without enums are shared, not copied. */
function convertMessage(plan: Plan, value: Record<string, unknown>, dir: Direction): Record<string, unknown> {
  if (!plan) return value;
  const out: Record<string, unknown> = { ...value };
  for (const f of plan) {
    const v = value[f.name];
    if (v === undefined || v === null) continue;
    const each = (x: unknown): unknown =>
      f.codec
        ? dir.toWire
          ? dir.numbers
            ? f.codec.toNumber(x as string)
            : f.codec.toWire(x as string)
          : f.codec.fromWire(x as string | number, dir.what, dir.code)
        : convertMessage(f.inner, x as Record<string, unknown>, dir);
    if (f.map) out[f.name] = Object.fromEntries(Object.entries(v as Record<string, unknown>).map(([k, x]) => [k, each(x)]));
    else if (f.repeated) out[f.name] = (v as unknown[]).map(each);
    else out[f.name] = each(v);
  }
  return out;
}

const TO_WIRE: Direction = { toWire: true, numbers: false };
const TO_NUMBERS: Direction = { toWire: true, numbers: true };

/** `value` as a message of `type` ("farm.v1.BoardInfo") with every enum field's name ("free") as its wire value ("BOARD_STATE_FREE"). */
export function toWireMessage<T>(type: string, value: object): T {
  return convertMessage(planByName(type), value as Record<string, unknown>, TO_WIRE) as T;
}

/**
 * As toWireMessage, with each enum field as its number: what protobufjs's
 * encode takes (a name it would write as 0), so protos/' own encoders need
 * no fromObject, a copy of the whole message, on the grant's path.
 */
export function toEncodable<T>(type: string, value: object): T {
  return convertMessage(planByName(type), value as Record<string, unknown>, TO_NUMBERS) as T;
}

/**
 * A decoded message of `type` (a plain object, enums as names or numbers)
 * with every enum field as the name users see; a value outside its enum is
 * refused with `code`, `what` saying whose message it was.
 */
export function fromWireMessage<T>(type: string, value: object, what: string, code: FarmErrorCode = "INVALID_ARGUMENT"): T {
  return convertMessage(planByName(type), value as Record<string, unknown>, { toWire: false, what, code }) as T;
}

/** Checks, as this module loads, that an enum has exactly the names another declaration gives it (contract.json). */
function agree<N extends string>(codec: EnumCodec<string, N>, declared: readonly string[], where: string): void {
  const missing = declared.filter((n) => !(codec.names as readonly string[]).includes(n));
  const extra = codec.names.filter((n) => !declared.includes(n));
  if (missing.length || extra.length)
    throw new Error(
      `${codec.type} and ${where} disagree: ${[...missing.map((n) => `${JSON.stringify(n)} only in ${where}`), ...extra.map((n) => `${JSON.stringify(n)} only in ${codec.type}`)].join("; ")}`,
    );
}

/** How a host asks its session's frames to travel (protos/routes.ts). */
export const ROUTE = new EnumCodec<Route__Output, EnumName<Route__Output, "ROUTE_">>("farm.v1.Route", "route");
/** How a session's frames do travel; "" until its lane opens; "tvm": a TVM server's board, reached by the TVM client itself. */
export const LANE = new EnumCodec<Lane__Output, EnumName<Lane__Output, "LANE_", "LANE_NONE">>("farm.v1.Lane", "lane", "LANE_NONE");

/** Who opens a lane with a LaneHello: "" where the hello named no role, which the accepting side refuses (runtime/lane.ts). */
export const LANE_ROLE = new EnumCodec<LaneRole__Output, EnumName<LaneRole__Output, "LANE_ROLE_">>("farm.v1.LaneRole", "lane role");
export type LaneRoleName = (typeof LANE_ROLE.names)[number];

/** Where a board stands with the tracker; "absent": not attached (a remembered board, in BoardCommand replies). */
export const BOARD_STATE = new EnumCodec<BoardState__Output, EnumName<BoardState__Output, "BOARD_STATE_">>("farm.v1.BoardState", "board state");

export type BoardStateName = (typeof BOARD_STATE.names)[number];
/** A board's health (tracker/health.ts takes its HEALTH_STATES from here); "" where unset. */
export const BOARD_HEALTH = new EnumCodec<BoardHealth__Output, EnumName<BoardHealth__Output, "BOARD_HEALTH_">>("farm.v1.BoardHealth", "board health");
export type BoardHealthName = ReturnType<typeof BOARD_HEALTH.fromWire>;
/** What an agent's BoardHealthReport tells: a canary's result, or an infrastructure error. */
export const HEALTH_REPORT_KIND = new EnumCodec<HealthReportKind__Output, EnumName<HealthReportKind__Output, "HEALTH_REPORT_KIND_">>(
  "farm.v1.HealthReportKind",
  "health report kind",
);
/** An operator's command on one board (HostService.BoardCommand). */
export const BOARD_ACTION = new EnumCodec<BoardAction__Output, EnumName<BoardAction__Output, "BOARD_ACTION_">>("farm.v1.BoardAction", "board command");
/** What HostService.Tokens is asked to do. */
export const TOKEN_ACTION = new EnumCodec<TokenAction__Output, EnumName<TokenAction__Output, "TOKEN_ACTION_">>("farm.v1.TokenAction", "token action");
/** Who a token speaks for (tracker/tokens.ts takes its TOKEN_KINDS from here). */
export const TOKEN_KIND = new EnumCodec<TokenKind__Output, EnumName<TokenKind__Output, "TOKEN_KIND_">>("farm.v1.TokenKind", "token kind");
/**
 * What a board is: one of the kinds agents serve (contract.json's boardKinds,
 * BOARD_KINDS) or the tracker's own TVM_BOARD_KIND; "" where unset, which the
 * tracker refuses of an agent's board.
 */
export const BOARD_KIND = new EnumCodec<BoardKind__Output, EnumName<BoardKind__Output, "BOARD_KIND_">>("farm.v1.BoardKind", "board kind");
export type BoardKindName = (typeof BOARD_KIND.names)[number];
/** The kind of every board a stock TVM server registers on the tracker's TVM port (tracker/tvm): no agent serves it. */
export const TVM_BOARD_KIND = "tvm-rpc" satisfies BoardKindName;
/** A busy board's session's lane ("" until it opens). */
export type SessionLane = (typeof LANE.names)[number];

agree(ROUTE, [AUTO_ROUTE, ...LANES], "contract.json's autoRoute and lanes");
agree(LANE, ["", ...LANES, "tvm"], `contract.json's lanes (with "" and tvm)`);
agree(BOARD_KIND, [...BOARD_KINDS, TVM_BOARD_KIND], `contract.json's boardKinds (with the tracker's ${TVM_BOARD_KIND})`);
