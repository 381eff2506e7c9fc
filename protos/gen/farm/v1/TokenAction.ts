// Original file: protos/farm/v1/host.proto

export const TokenAction = {
  TOKEN_ACTION_UNSPECIFIED: 'TOKEN_ACTION_UNSPECIFIED',
  TOKEN_ACTION_CREATE: 'TOKEN_ACTION_CREATE',
  TOKEN_ACTION_LIST: 'TOKEN_ACTION_LIST',
  TOKEN_ACTION_REVOKE: 'TOKEN_ACTION_REVOKE',
} as const;

export type TokenAction =
  | 'TOKEN_ACTION_UNSPECIFIED'
  | 0
  | 'TOKEN_ACTION_CREATE'
  | 1
  | 'TOKEN_ACTION_LIST'
  | 2
  | 'TOKEN_ACTION_REVOKE'
  | 3

export type TokenAction__Output = typeof TokenAction[keyof typeof TokenAction]
