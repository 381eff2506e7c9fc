// Original file: protos/farm/v1/host.proto


export interface SummaryRequest {
}

export interface SummaryRequest__Output {
}
