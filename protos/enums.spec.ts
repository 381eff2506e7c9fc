/**
 * The enum codec: one rule maps every enum's wire values to the names users
 * see, both ways, and anything outside the enum is refused naming the choices.
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { root } from "./contract-root.ts";
import {
  BOARD_ACTION,
  BOARD_HEALTH,
  BOARD_KIND,
  BOARD_STATE,
  EnumCodec,
  LANE,
  ROUTE,
  TOKEN_KIND,
  TVM_BOARD_KIND,
  fromWireMessage,
  toEncodable,
  toWireMessage,
} from "./enums.ts";
import { FarmError } from "./errors.ts";
import { BOARD_KINDS } from "./gen/contract.ts";
import { decodeGrantFrame, decodeLaneHello, decodeSessionRequest, encodeGrantFrame, encodeLaneHello, encodeSessionRequest } from "./frames.ts";
import { LANES, ROUTES } from "./routes.ts";
import { encodeBoardEntry, encodeSummaryReply, type SummaryReply__Output } from "./summary-reply.ts";
import { decodeToWorker, encodeToWorker } from "./worker-channel.ts";

const refused = (code: string, pattern: RegExp) => (e: unknown) => e instanceof FarmError && e.code === code && pattern.test(e.message);

describe("enum codecs", () => {
  it("name each wire value by the enum's rule, in the enum's order, as contract.json declares them", () => {
    assert.deepEqual(ROUTE.names, ROUTES);
    assert.deepEqual(LANE.names, ["", "direct", "relay", "grpc", "tvm"]);
    assert.equal(ROUTE.toWire("direct"), "ROUTE_DIRECT");
    assert.equal(LANE.toWire(""), "LANE_NONE");
    assert.equal(ROUTE.fromWire("ROUTE_GRPC", "x"), "grpc");
    assert.equal(ROUTE.fromWire(2, "x"), "relay", "a protobufjs decoder gives the number");
    assert.equal(LANE.fromWire(0, "x"), "");
    assert.deepEqual(BOARD_STATE.names, ["absent", "starting", "free", "busy", "draining", "quarantined"]);
    assert.equal(BOARD_STATE.fromWire(0, "x"), "absent", "the enum's 0: a board that is not attached");
    assert.deepEqual(TOKEN_KIND.names, ["agent", "client", "operator"]);
    assert.deepEqual(BOARD_HEALTH.names, ["healthy", "suspect", "quarantined"]);
    assert.deepEqual(BOARD_KIND.names, ["cpu", "cuda", "vta-sim", "vta", "tvm-rpc", "tvm"]);
    assert.deepEqual([...BOARD_KIND.names].sort(), [...BOARD_KINDS, TVM_BOARD_KIND].sort(), "contract.json's kinds and the tracker's own");
    assert.equal(BOARD_KIND.toWire("vta-sim"), "BOARD_KIND_VTA_SIM");
    assert.equal(BOARD_KIND.toWire("tvm-rpc"), "BOARD_KIND_TVM_RPC");
    assert.equal(BOARD_KIND.fromWire(4, "x"), "vta");
    assert.equal(BOARD_KIND.fromWire("BOARD_KIND_UNSPECIFIED", "x"), "");
  });

  it(`read an UNSPECIFIED 0 as unset, "", as the string field it replaced was, and never offer it as a choice`, () => {
    assert.equal(TOKEN_KIND.fromWire(0, "x"), "");
    assert.equal(TOKEN_KIND.fromWire("TOKEN_KIND_UNSPECIFIED", "x"), "");
    assert.equal(TOKEN_KIND.toWire(""), "TOKEN_KIND_UNSPECIFIED");
    assert.throws(
      () => BOARD_ACTION.parse("", "boardCommand()"),
      refused("INVALID_ARGUMENT", /^boardCommand\(\): board command must be one of drain, quarantine, restore, got ""$/),
    );
    const request = fromWireMessage<{ action: string; kind: string }>(
      "farm.v1.TokensRequest",
      { action: "TOKEN_ACTION_LIST", kind: "TOKEN_KIND_UNSPECIFIED", name: "" },
      "x",
    );
    assert.deepEqual([request.action, request.kind], ["list", ""]);
  });

  it("refuse a value outside the enum with the caller's code, naming the choices", () => {
    assert.throws(
      () => ROUTE.fromWire(9, "the session request"),
      refused("INVALID_ARGUMENT", /^the session request: route must be one of auto, direct, relay, grpc, got 9$/),
    );
    assert.throws(() => ROUTE.fromWire("ROUTE_TELEPORT", "a grant", "PROTOCOL_ERROR"), refused("PROTOCOL_ERROR", /got "ROUTE_TELEPORT"/));
    assert.throws(() => ROUTE.fromWire(undefined, "a grant"), refused("INVALID_ARGUMENT", /got undefined/));
    assert.throws(
      () => ROUTE.parse("ROUTE_DIRECT", "--route"),
      refused("INVALID_ARGUMENT", /^--route: route must be one of/),
      "a wire name is not a user's name",
    );
    assert.throws(() => LANE.parse("none", "x"), refused("INVALID_ARGUMENT", /"" \(none\), direct/));
    assert.throws(() => ROUTE.toWire("teleport" as never), refused("INTERNAL", /teleport/));
    assert.throws(
      () => BOARD_KIND.fromWire(9, "the tracker's board a/b", "PROTOCOL_ERROR"),
      refused("PROTOCOL_ERROR", /^the tracker's board a\/b: board kind must be one of cpu, cuda, vta-sim, vta, tvm-rpc, tvm, got 9$/),
    );
  });

  it("refuse a value outside a field's own choices of the enum, naming those: an agent's board is never unset nor tvm-rpc", () => {
    const what = `agent a1's board "b0"`;
    assert.equal(BOARD_KIND.fromWireAmong(BOARD_KINDS, "BOARD_KIND_CUDA", what), "cuda");
    assert.equal(BOARD_KIND.fromWireAmong(BOARD_KINDS, 3, what), "vta-sim");
    for (const [value, got] of [
      ["BOARD_KIND_TVM_RPC", '"tvm-rpc"'],
      [5, '"tvm-rpc"'],
      ["BOARD_KIND_UNSPECIFIED", '""'],
      [0, '""'],
      [9, "9"],
      ["BOARD_KIND_TPU", '"BOARD_KIND_TPU"'],
      [undefined, "undefined"],
    ] as const) {
      assert.throws(
        () => BOARD_KIND.fromWireAmong(BOARD_KINDS, value, what),
        refused("INVALID_ARGUMENT", new RegExp(`^agent a1's board "b0": board kind must be one of cpu, cuda, vta-sim, vta, tvm, got ${got}$`)),
        String(value),
      );
    }
  });

  it("refuse to load an enum whose values break the naming rule", () => {
    assert.throws(() => new EnumCodec("farm.v1.Route", "route", "LANE_NONE"), /farm.v1.Route has no value LANE_NONE/);
  });
});

describe("the codecs of messages with enums", () => {
  it("convert every enum field of a message, in the messages it holds too, and share the rest", () => {
    const labels = { rack: "r1" };
    const board = {
      id: "a/b",
      kind: "vta-sim" as const,
      state: "busy" as const,
      session_lane: "relay" as const,
      labels,
      health_history: [{ at_ms: 1, from: "healthy" as const, to: "suspect" as const }],
    };
    const reply = { boards: [board], tracker_version: "v" };
    const wire = toWireMessage<{ boards: Array<Record<string, unknown>> }>("farm.v1.SummaryReply", reply);
    assert.deepEqual(wire.boards[0], {
      id: "a/b",
      kind: "BOARD_KIND_VTA_SIM",
      state: "BOARD_STATE_BUSY",
      session_lane: "LANE_RELAY",
      labels,
      health_history: [{ at_ms: 1, from: "BOARD_HEALTH_HEALTHY", to: "BOARD_HEALTH_SUSPECT" }],
    });
    assert.equal(wire.boards[0]!.labels, labels);
    assert.deepEqual(fromWireMessage("farm.v1.SummaryReply", wire, "x"), reply);
    assert.equal(reply.boards[0]!.state, "busy", "the message given is not changed");
    assert.throws(
      () => fromWireMessage("farm.v1.SummaryReply", { boards: [{ id: "a/b", state: 42 }] }, "the tracker's summary", "PROTOCOL_ERROR"),
      refused("PROTOCOL_ERROR", /^the tracker's summary: board state must be one of absent, starting, free, busy, draining, quarantined, got 42$/),
    );
  });

  it("give the enums of a message as their numbers for protobufjs's encode (toEncodable), which writes a name as 0", () => {
    const grant = { session_id: "s", route: "relay" as const, board: { id: "a/b", kind: "cuda" as const, state: "busy" as const, labels: { rack: "r1" } } };
    const encodable = toEncodable<{ route: unknown; board: { kind: unknown; state: unknown; labels: unknown } }>("farm.v1.Grant", grant);
    assert.deepEqual([encodable.route, encodable.board.kind, encodable.board.state], [2, 2, 3]);
    assert.equal(encodable.board.labels, grant.board.labels, "what holds no enum is shared, not copied");
    const type = root.lookupType("farm.v1.Grant");
    const viaNames = type.encode(type.fromObject(toWireMessage("farm.v1.Grant", grant))).finish();
    assert.deepEqual(type.encode(encodable as object).finish(), viaNames, "the same bytes as fromObject of the names");
    assert.throws(() => toEncodable("farm.v1.Grant", { route: "teleport" }), refused("INTERNAL", /teleport/));
  });

  it("carry a board's kind by name: an agent's registration, a summary's boards and a grant's board, through the encoders", () => {
    const agentMessage = root.lookupType("farm.v1.AgentMessage");
    const summaryReply = root.lookupType("farm.v1.SummaryReply");
    const decoded = (type: typeof agentMessage, bytes: Uint8Array) => type.toObject(type.decode(bytes), { enums: String, defaults: true });
    for (const kind of BOARD_KIND.names) {
      const register = toWireMessage<object>("farm.v1.AgentMessage", { register: { agent_name: "a1", boards: [{ name: "b0", key: "k", kind }] } });
      const back = fromWireMessage<{ register: { boards: Array<{ kind: string }> } }>(
        "farm.v1.AgentMessage",
        decoded(agentMessage, agentMessage.encode(agentMessage.fromObject(register)).finish()),
        "x",
      );
      assert.equal(back.register.boards[0]!.kind, kind);
      const summary = encodeSummaryReply({ tracker_version: "v" }, [encodeBoardEntry({ id: "a1/b0", kind })]) as unknown as Uint8Array;
      assert.equal(fromWireMessage<SummaryReply__Output>("farm.v1.SummaryReply", decoded(summaryReply, summary), "x").boards[0]!.kind, kind);
      assert.equal(decodeGrantFrame(encodeGrantFrame({ session_id: "s", ticket: "t", board: { id: "a1/b0", kind } })).board?.kind, kind);
    }
    // An unset kind, as no board the tracker describes has: "".
    assert.equal(decodeGrantFrame(encodeGrantFrame({ session_id: "s", ticket: "t", board: { id: "a1/b0" } })).board?.kind, "");
    // An older agent's kind as a string (field 3, reserved now) is not read: its board has none, which the tracker refuses.
    const spec = root.lookupType("farm.v1.BoardSpec");
    const old = Buffer.concat([spec.encode(spec.fromObject({ name: "b0", key: "k" })).finish(), Buffer.from([(3 << 3) | 2, 3]), Buffer.from("cpu")]);
    assert.equal(decoded(spec, old).kind, "BOARD_KIND_UNSPECIFIED");
  });

  it("carry a session request's and a grant's route by name, and the worker's assignment", () => {
    for (const route of ROUTES) {
      assert.equal(decodeSessionRequest(encodeSessionRequest({ key: "cpu", route })).route, route);
      assert.equal(decodeGrantFrame(encodeGrantFrame({ session_id: "s", route, ticket: "t" })).route, route);
      const assign = decodeToWorker(encodeToWorker({ assign: { session_id: "s", token: "t", dir: "/d", route } })).assign;
      assert.equal(assign?.route, route);
    }
    assert.equal(decodeSessionRequest(encodeSessionRequest({ key: "cpu" })).route, "auto", "absent: auto, the enum's 0");
    const board = decodeGrantFrame(encodeGrantFrame({ session_id: "s", route: "grpc", board: { id: "a/b", state: "busy", session_lane: "grpc" } })).board;
    assert.deepEqual([board?.state, board?.session_lane], ["busy", "grpc"]);
  });

  it('carry a lane hello\'s role by name; a hello without one reads as "", one the enum lacks is a PROTOCOL_ERROR', () => {
    for (const role of ["host", "worker"] as const) assert.equal(decodeLaneHello(encodeLaneHello({ session_id: "s", ticket: "t", role })).role, role);
    const hello = Buffer.from(encodeLaneHello({ session_id: "s", ticket: "t", role: "host" }));
    // Field 5, again: a decoder keeps a scalar field's last value.
    assert.equal(decodeLaneHello(Buffer.concat([hello, Buffer.from([5 << 3, 0])])).role, "");
    assert.throws(
      () => decodeLaneHello(Buffer.concat([hello, Buffer.from([5 << 3, 7])])),
      refused("PROTOCOL_ERROR", /^the lane hello: lane role must be one of host, worker, got 7$/),
    );
  });

  it("carry a worker's lane's kind by name, and refuse one that names no socket a worker serves", () => {
    // tvm: a TVM client's socket on a tvm board (docs/tvm-boards.md).
    for (const kind of [...LANES, "tvm" as const]) {
      const lane = decodeToWorker(encodeToWorker({ lane: { session_id: "s", kind, rest: Buffer.from("hi") } })).lane;
      assert.deepEqual([lane?.kind, Buffer.from(lane!.rest).toString()], [kind, "hi"]);
    }
    // LANE_NONE (an unset kind) and a value the enum lacks (9), as field 4 of a WorkerLane, field 2 of the AgentToWorker.
    for (const [value, got] of [
      [0, '""'],
      [9, "9"],
    ] as const) {
      const lane = Buffer.from([(1 << 3) | 2, 1, 0x73, (4 << 3) | 0, value]);
      assert.throws(
        () => decodeToWorker(Buffer.concat([Buffer.from([(2 << 3) | 2, lane.length]), lane])),
        refused("PROTOCOL_ERROR", new RegExp(`^the agent's lane: .*got ${got}$`)),
      );
    }
  });

  it("refuse a route the enum does not have (a newer peer's): field 9 of a SessionRequest, 12 of a Grant", () => {
    const request = Buffer.concat([encodeSessionRequest({ key: "cpu" }), Buffer.from([(9 << 3) | 0, 7])]);
    assert.throws(() => decodeSessionRequest(request), refused("INVALID_ARGUMENT", /route must be one of auto, direct, relay, grpc, got 7/));
    const grant = encodeGrantFrame({ session_id: "s", ticket: "t" });
    // The grant is the frame's field 12: its length byte grows by the two bytes appended.
    const bent = Buffer.concat([grant, Buffer.from([(12 << 3) | 0, 7])]);
    bent[1]! += 2;
    assert.throws(() => decodeGrantFrame(bent), refused("PROTOCOL_ERROR", /the tracker's grant: route must be one of/));
  });
});
