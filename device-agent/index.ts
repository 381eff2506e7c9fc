/** The device agent part: startAgent(), board declarations, and the session server LocalSession reuses. */
export { Agent, startAgent } from "./agent.ts";
export { resolveAgentOptions, type AgentOptions, type ResolvedAgentOptions } from "./options.ts";
export { parseBoardFlag, parseBytes, type BoardConfig } from "./board-config.ts";
export { readAgentConfigFile } from "./config-file.ts";
export { createBackend, BOARD_KINDS, type Backend } from "./backends/index.ts";
export { SessionServer, type SessionLimits, type FrameSink } from "./worker/session-server.ts";
