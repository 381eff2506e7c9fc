// Original file: protos/farm/v1/agent.proto


/**
 * Are you there? Answered with a Heartbeat at once. The tracker asks an
 * attached agent when another agent registers with its name: an answer means
 * the name is taken (the newcomer is refused NAME_IN_USE); silence means the
 * link is dead and the newcomer replaces it.
 */
export interface Ping {
}

/**
 * Are you there? Answered with a Heartbeat at once. The tracker asks an
 * attached agent when another agent registers with its name: an answer means
 * the name is taken (the newcomer is refused NAME_IN_USE); silence means the
 * link is dead and the newcomer replaces it.
 */
export interface Ping__Output {
}
