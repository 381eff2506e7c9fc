/** The device agent part: startAgent(), board declarations, and the session server LocalSession reuses. */
export { Agent, startAgent } from "./agent/agent.ts";
export { resolveAgentOptions, type AgentOptions, type ResolvedAgentOptions } from "./agent/options.ts";
export { parseBoardFlag, parseBytes, type BoardConfig } from "./agent/board-config.ts";
export { readAgentConfigFile } from "./agent/config-file.ts";
export { createBackend, BOARD_KINDS, type Backend, type BoardKind } from "./backends/index.ts";
export { SessionServer, type SessionLimits, type FrameSink } from "./worker/session-server.ts";
