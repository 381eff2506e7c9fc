/**
 * The session worker's warm-up: its steps leave every message type a worker
 * reads or writes with its coders generated, so none is generated (0.1–1 ms
 * each) on a session's critical path.
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type * as Protobuf from "protobufjs";
import { protobuf, root } from "./contract-root.ts";
import { WORKER_MESSAGES, workerCodecWarmups } from "./warm.ts";

/** protobufjs replaces a type's prototype coders with generated ones of its own on first use (Type#setup). */
const generated = (type: Protobuf.Type) => Object.hasOwn(type, "encode") && Object.hasOwn(type, "decode");

function reachable(name: string, into = new Set<Protobuf.Type>()): Set<Protobuf.Type> {
  const type = root.lookupType(name);
  if (into.has(type)) return into;
  into.add(type);
  for (const field of type.fieldsArray) if (field.resolve().resolvedType instanceof protobuf.Type) reachable(field.resolvedType!.fullName.slice(1), into);
  return into;
}

describe("workerCodecWarmups", () => {
  it("generate the coders of every type the agent's messages, the lane's and the frames hold", () => {
    const types = new Set<Protobuf.Type>();
    for (const name of WORKER_MESSAGES) reachable(name, types);
    // The frames hold the call's arguments, the measure results, errors, the grant: dozens of types.
    assert.ok(types.size > 40, `only ${types.size} types reachable`);
    for (const step of workerCodecWarmups()) step();
    const cold = [...types].filter((t) => !generated(t)).map((t) => t.fullName);
    assert.deepEqual(cold, []);
  });

  it("leave the session protocol's other types alone: a worker never pays for the tracker's or the agent's", () => {
    for (const step of workerCodecWarmups()) step();
    const attach = root.lookupType("farm.v1.AgentMessage");
    assert.equal(generated(attach), false, "a type no worker message holds stays lazy");
  });
});
