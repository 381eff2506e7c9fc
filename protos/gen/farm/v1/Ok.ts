// Original file: protos/farm/v1/session.proto


export interface Ok {
}

export interface Ok__Output {
}
