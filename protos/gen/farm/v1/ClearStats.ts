// Original file: protos/farm/v1/session.proto


export interface ClearStats {
}

export interface ClearStats__Output {
}
