/**
 * HostService's token administration messages (host.proto) with their enums
 * by name ("create", "operator"): what `TrackerClient.tokens()` takes and
 * gives, and what the tracker's Tokens handler reads and answers.
 * toWireMessage and fromWireMessage (protos/enums.ts) convert them at the
 * call.
 */
import type { TokenInfo as TokenInfoMessage, TokenInfo__Output as TokenInfoMessage__Output } from "./gen/farm/v1/TokenInfo.ts";
import type { TokensReply as TokensReplyMessage, TokensReply__Output as TokensReplyMessage__Output } from "./gen/farm/v1/TokensReply.ts";
import type { TokensRequest as TokensRequestMessage, TokensRequest__Output as TokensRequestMessage__Output } from "./gen/farm/v1/TokensRequest.ts";
import type { TOKEN_ACTION, TOKEN_KIND } from "./enums.ts";

/** "" where unset (a list or revoke request's kind). */
type Action = ReturnType<typeof TOKEN_ACTION.fromWire>;
type Kind = ReturnType<typeof TOKEN_KIND.fromWire>;

export type TokensRequest = Omit<TokensRequestMessage, "action" | "kind"> & { action?: Action; kind?: Kind };
export type TokensRequest__Output = Omit<TokensRequestMessage__Output, "action" | "kind"> & { action: Action; kind: Kind };
export type TokenInfo = Omit<TokenInfoMessage, "kind"> & { kind?: Kind };
export type TokenInfo__Output = Omit<TokenInfoMessage__Output, "kind"> & { kind: Kind };
export type TokensReply = Omit<TokensReplyMessage, "tokens"> & { tokens?: TokenInfo[] };
export type TokensReply__Output = Omit<TokensReplyMessage__Output, "tokens"> & { tokens: TokenInfo__Output[] };
