/**
 * How a session's frames travel (docs/architecture.md, "Lanes"). A host asks
 * for a route; the session gets one lane:
 * * `direct`: a socket from the host straight to the board's agent, which
 *   hands it to the session's worker;
 * * `relay`: both sides dial the tracker's data port, which joins the two
 *   sockets by the session's ticket and pipes bytes without decoding them;
 * * `grpc`: the frames ride the host's Session stream and the board's
 *   ServeSession stream (its agent's, bridged to the worker), relayed by the tracker (for networks where only the
 *   gRPC port is reachable);
 * * `auto`: direct, falling back to relay within a bounded time.
 *
 * The lanes, the routes, SESSION_REQUEST_HEADER (metadata of
 * HostService.Session: the encoded SessionRequest) and SESSION_END_GRACE_MS
 * are declared once for both SDKs, in protos/farm/v1/contract.json.
 *
 * SESSION_END_GRACE_MS is the one grace of a session's end: how long a side
 * that saw a lane or stream close waits for whoever knows why (the agent's
 * report at the tracker, the tracker's end at the host, a worker's own report
 * at the agent) before it settles for a generic reason. Trackers send theirs
 * to agents (Registered) and hosts (Grant).
 */
import { FarmError } from "./errors.ts";
import { AUTO_ROUTE, LANES, SESSION_END_GRACE_MS, SESSION_REQUEST_HEADER } from "./gen/contract.ts";

export { LANES, SESSION_END_GRACE_MS, SESSION_REQUEST_HEADER };
export type Lane = (typeof LANES)[number];
export const ROUTES = [AUTO_ROUTE, ...LANES] as const;
export type Route = (typeof ROUTES)[number];

/** A route from a request or the environment (empty: auto); anything else is refused naming the choices. */
export function parseRoute(value: string | undefined, what: string): Route {
  if (value === undefined || value === "") return AUTO_ROUTE;
  if ((ROUTES as readonly string[]).includes(value)) return value as Route;
  throw new FarmError("INVALID_ARGUMENT", `${what}: route must be one of ${ROUTES.join(", ")}, got ${JSON.stringify(value)}`);
}
