// Original file: protos/farm/v1/session.proto


export interface Close {
}

export interface Close__Output {
}
