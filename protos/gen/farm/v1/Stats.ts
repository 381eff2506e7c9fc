// Original file: protos/farm/v1/session.proto


export interface Stats {
}

export interface Stats__Output {
}
