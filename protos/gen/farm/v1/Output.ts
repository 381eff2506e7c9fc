// Original file: protos/farm/v1/session.proto


/**
 * What the session's worker printed (its kernels' stdout and stderr, as the
 * agent read them from its pipes): the last 1 MiB of it
 * (device-agent/agent/session-output.ts), as Data replies, chunked like a download.
 */
export interface Output {
}

/**
 * What the session's worker printed (its kernels' stdout and stderr, as the
 * agent read them from its pipes): the last 1 MiB of it
 * (device-agent/agent/session-output.ts), as Data replies, chunked like a download.
 */
export interface Output__Output {
}
