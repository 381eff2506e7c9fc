// Original file: protos/farm/v1/host.proto

/**
 * Who a token speaks for (tracker/tokens.ts).
 */
export const TokenKind = {
  TOKEN_KIND_UNSPECIFIED: 'TOKEN_KIND_UNSPECIFIED',
  TOKEN_KIND_AGENT: 'TOKEN_KIND_AGENT',
  TOKEN_KIND_CLIENT: 'TOKEN_KIND_CLIENT',
  TOKEN_KIND_OPERATOR: 'TOKEN_KIND_OPERATOR',
} as const;

/**
 * Who a token speaks for (tracker/tokens.ts).
 */
export type TokenKind =
  | 'TOKEN_KIND_UNSPECIFIED'
  | 0
  | 'TOKEN_KIND_AGENT'
  | 1
  | 'TOKEN_KIND_CLIENT'
  | 2
  | 'TOKEN_KIND_OPERATOR'
  | 3

/**
 * Who a token speaks for (tracker/tokens.ts).
 */
export type TokenKind__Output = typeof TokenKind[keyof typeof TokenKind]
