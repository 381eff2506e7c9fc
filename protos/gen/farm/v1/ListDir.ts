// Original file: protos/farm/v1/session.proto


export interface ListDir {
}

export interface ListDir__Output {
}
