/**
 * The process runtime every part shares: gRPC channel and server settings,
 * credentials (TLS, tokens) and the servers and sockets built with them, the
 * socket lanes' framing and handshakes, logging, health probes, the named
 * timers of the lifecycle machines' shells.
 */
export { LaneSocket, LaneReads, framed, acceptHello, welcome, refuse, awaitWelcome, HELLO_TIMEOUT_MS, type AcceptedHello } from "./lane.ts";
export { rootLogger, componentLogger, DEFAULT_LOG_LEVEL, EMBEDDED_LOG_LEVEL, type Logger, type LogLevel, type ComponentLoggerOptions } from "./log.ts";
export { LIVENESS_PATH, READINESS_PATH, isProbePath, answerProbe, type Readiness } from "./probes.ts";
export {
  AUTHORIZATION_HEADER,
  MAX_TOKEN_CHARS,
  CERT_RELOAD_INTERVAL_MS,
  clientSecurity,
  checkTokenShape,
  callMetadata,
  grpcClient,
  makeClient,
  grpcServerCredentials,
  bearerToken,
  httpServer,
  socketServer,
  connectSocket,
  httpToken,
  httpClientOptions,
  isLoopbackHost,
  diagnoseTransport,
  type ClientSecurity,
  type ClientTls,
  type ServerTls,
  type SecurityFlags,
} from "./credentials.ts";
export { CHANNEL_OPTIONS, SERVER_OPTIONS, parseAddress } from "./grpc-options.ts";
export { NamedTimers } from "./named-timers.ts";
export { LongTimer, MAX_TIMER_MS } from "./long-timer.ts";
export {
  TicketSigner,
  ticketKey,
  checkTicket,
  expiredFor,
  readClaims,
  warmTickets,
  TICKET_KEY_BYTES,
  TICKET_SOURCE,
  type TicketClaims,
  type TicketExpectation,
} from "./session-tickets.ts";
export { traceGrant } from "./grant-trace.ts";
