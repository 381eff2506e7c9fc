/** What a host compiler returns: the encoded bundle plus what it holds. */
import type { FunctionSpec, ModuleBundle } from "../protos/index.ts";

export interface CompiledModule {
  /** The encoded bundle, ready for `session.upload(module)`. */
  readonly bytes: Uint8Array;
  /** Upload name: content-addressed, `<sha256 prefix>.kfm`. */
  readonly name: string;
  /** sha256 of `bytes`. */
  readonly digest: string;
  readonly target: ModuleBundle["target"];
  readonly functions: readonly FunctionSpec[];
}
