// Original file: protos/farm/v1/host.proto


export interface ReleaseReply {
}

export interface ReleaseReply__Output {
}
