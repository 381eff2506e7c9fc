/**
 * Probe endpoints for orchestrators (Kubernetes liveness and readiness
 * probes, a load balancer's health check), served by the tracker's HTTP side
 * (`--metrics-port`) and by an agent's metrics server:
 *
 * | path       | answers                                                                 |
 * |------------|-------------------------------------------------------------------------|
 * | `/healthz` | 200 `ok` whenever the process's event loop runs (liveness)              |
 * | `/readyz`  | 200 `ready` when the process does its job, else 503 `not ready: REASON` |
 *
 * Liveness checks nothing else on purpose: a tracker that lost its agents or
 * an agent that lost its tracker recovers by itself, and a restart would only
 * drop its sessions. Readiness is the process's own test (tracker: its gRPC
 * port is bound and serving; agent: attached to its tracker).
 *
 * Probes take no token, even on a farm with tokens: a kubelet has none, and
 * they say only "up" or "not ready, because …" (a phase, a tracker address).
 */
import type { ServerResponse } from "node:http";

export const LIVENESS_PATH = "/healthz";
export const READINESS_PATH = "/readyz";

/** Why the process is not ready, or undefined when it is. */
export type Readiness = () => string | undefined;

export function isProbePath(path: string): boolean {
  return path === LIVENESS_PATH || path === READINESS_PATH;
}

/** Answers a probe (`path` is one isProbePath accepts). */
export function answerProbe(path: string, res: ServerResponse, notReady: Readiness): void {
  const headers = { "content-type": "text/plain; charset=utf-8", "cache-control": "no-store" };
  const reason = path === READINESS_PATH ? notReady() : undefined;
  if (reason !== undefined) {
    res.writeHead(503, headers).end(`not ready: ${reason}\n`);
    return;
  }
  res.writeHead(200, headers).end(path === LIVENESS_PATH ? "ok\n" : "ready\n");
}
