/**
 * The contract's messages by reflection (protobufjs), parsed once per
 * process: the codecs of protos/ (frames, worker messages, summary replies,
 * the enums) look their types up here instead of each parsing the .proto
 * files again at start-up. The module bundle keeps a root of its own
 * (bundle.ts): its schema is not the session protocol's.
 */
import { createRequire } from "node:module";
import type * as Protobuf from "protobufjs";
import { fileURLToPath } from "node:url";

const require = createRequire(import.meta.url);
export const protobuf = require("protobufjs") as typeof Protobuf;

// 64-bit integers decode as JS numbers: frame fields that are 64-bit hold
// kernel scalar arguments, and sizes are doubles (exact to 2^53).
protobuf.util.Long = undefined as never;
protobuf.configure();

export const root = new protobuf.Root();
root.resolvePath = (_origin, target) => (target.startsWith("farm/") ? fileURLToPath(new URL(target, import.meta.url)) : target);
root.loadSync(["farm/v1/common.proto", "farm/v1/agent.proto", "farm/v1/host.proto", "farm/v1/session.proto", "farm/v1/worker.proto"], { keepCase: true });
