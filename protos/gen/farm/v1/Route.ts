// Original file: protos/farm/v1/common.proto

/**
 * How a session's frames travel (docs/architecture.md, "Lanes"): a host asks
 * for a route, the session gets a lane. The lanes' names are declared in
 * contract.json; protos/enums.ts refuses to load when these enums and it
 * disagree. Read and written through protos/enums.ts (TypeScript) and
 * python/kernelfarm/enums.py, which give the lowercase names users see.
 */
export const Route = {
  /**
   * direct, falling back to relay within a bounded time
   */
  ROUTE_AUTO: 'ROUTE_AUTO',
  ROUTE_DIRECT: 'ROUTE_DIRECT',
  ROUTE_RELAY: 'ROUTE_RELAY',
  ROUTE_GRPC: 'ROUTE_GRPC',
} as const;

/**
 * How a session's frames travel (docs/architecture.md, "Lanes"): a host asks
 * for a route, the session gets a lane. The lanes' names are declared in
 * contract.json; protos/enums.ts refuses to load when these enums and it
 * disagree. Read and written through protos/enums.ts (TypeScript) and
 * python/kernelfarm/enums.py, which give the lowercase names users see.
 */
export type Route =
  /**
   * direct, falling back to relay within a bounded time
   */
  | 'ROUTE_AUTO'
  | 0
  | 'ROUTE_DIRECT'
  | 1
  | 'ROUTE_RELAY'
  | 2
  | 'ROUTE_GRPC'
  | 3

/**
 * How a session's frames travel (docs/architecture.md, "Lanes"): a host asks
 * for a route, the session gets a lane. The lanes' names are declared in
 * contract.json; protos/enums.ts refuses to load when these enums and it
 * disagree. Read and written through protos/enums.ts (TypeScript) and
 * python/kernelfarm/enums.py, which give the lowercase names users see.
 */
export type Route__Output = typeof Route[keyof typeof Route]
