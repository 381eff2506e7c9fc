/**
 * kernelfarm/server: the tracker and the agent, for programs that run them
 * (the CLI uses the parts directly).
 *
 *   import { startTracker, startAgent } from "kernelfarm/server";
 */
export { startTracker, Tracker, type TrackerOptions } from "./tracker/index.ts";
export { startAgent, Agent, type AgentOptions } from "./device-agent/index.ts";
export { startLocalFarm, type LocalFarm, type LocalFarmOptions } from "./local-farm.ts";
