/**
 * The flags every `kfarm` command that dials a farm port takes, with
 * environment defaults so scripts and services need not repeat them:
 * `--tracker` ($KFARM_TRACKER, else 127.0.0.1:9190), `--token`
 * ($KFARM_TOKEN), `--tls-ca` ($KFARM_TLS_CA), `--tls-cert`
 * ($KFARM_TLS_CERT), `--tls-key` ($KFARM_TLS_KEY), `--tls-server-name`.
 */
import { Option, type Command } from "commander";
import { DEFAULT_TRACKER_ADDRESS } from "../host-sdk/index.ts";
import { clientSecurity, type ClientTls } from "../runtime/index.ts";

/** Where a command dials when --tracker is left out: connectTracker() dials KFARM_TRACKER, else DEFAULT_TRACKER_ADDRESS, and says so when nothing answers. */
export const TRACKER_DEFAULT_HELP = `$KFARM_TRACKER, else ${DEFAULT_TRACKER_ADDRESS}, where \`kfarm tracker\` listens by default`;
export const TRACKER_FLAG_HELP = `the tracker's address, its gRPC port (default: ${TRACKER_DEFAULT_HELP})`;

export function addTrackerFlag(cmd: Command): Command {
  return cmd.option("--tracker <host:port>", TRACKER_FLAG_HELP);
}

export interface ClientSecurityFlags {
  token?: string;
  tlsCa?: string;
  tlsCert?: string;
  tlsKey?: string;
  tlsServerName?: string;
}

export function addClientSecurityFlags(cmd: Command, tokenKind: string): Command {
  return cmd
    .addOption(new Option("--token <token>", `${tokenKind} token (kfarm token create)`).env("KFARM_TOKEN"))
    .addOption(new Option("--tls-ca <file>", "the farm's CA certificate (PEM): connect with TLS").env("KFARM_TLS_CA"))
    .addOption(new Option("--tls-cert <file>", "this side's certificate, for mutual TLS").env("KFARM_TLS_CERT"))
    .addOption(new Option("--tls-key <file>", "the key of --tls-cert").env("KFARM_TLS_KEY"))
    .option("--tls-server-name <name>", "the name in the tracker's certificate, when the address is not it");
}

/** connectTracker's options from the flags, checked (files readable, pairs complete). */
export function connectOptionsOf(o: ClientSecurityFlags, what: string): { token?: string; tls?: ClientTls } {
  const s = clientSecurity(o, what);
  return { ...(s.token ? { token: s.token } : {}), ...(s.tls ? { tls: s.tls } : {}) };
}
