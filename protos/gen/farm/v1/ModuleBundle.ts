// Original file: protos/farm/v1/bundle.proto

import type { BundleEntry as _farm_v1_BundleEntry, BundleEntry__Output as _farm_v1_BundleEntry__Output } from '../../farm/v1/BundleEntry';
import type { BundleFunction as _farm_v1_BundleFunction, BundleFunction__Output as _farm_v1_BundleFunction__Output } from '../../farm/v1/BundleFunction';

/**
 * The module bundle: one file per compiled module, built by the host
 * compilers (TypeScript: protos/bundle.ts; Python: python/kernelfarm/bundle.py),
 * shipped with `upload` and checked by the agent before it loads it. This
 * file is its schema for both languages.
 * 
 * The sha256 of a bundle's bytes is the module's content address (its upload
 * name, the agent's content store, the CUDA compile caches), so the same
 * module must have the same bytes whichever SDK compiled it. Protobuf allows
 * many encodings of one message; a bundle is written in exactly one, the
 * canonical encoding, by each language's protobuf library (protobufjs,
 * Python's google.protobuf) under these rules:
 * 
 * 1. fields in field-number order (what both libraries do);
 * 2. a field with its default value (0, "", empty bytes, an empty list) is
 * not written (Python never writes one; protobufjs writes a field that is
 * present even when it is 0 or "", so the TypeScript encoder leaves such
 * fields out of the object it hands protobufjs);
 * 3. repeated scalars packed (proto3's default in both);
 * 4. no map<> fields: neither library promises an order for them, so
 * string maps are repeated BundleEntry sorted by the UTF-8 bytes of the
 * key, each key once;
 * 5. no unknown fields, no `optional` scalars (a set-but-zero one would be
 * written): presence is carried by sub-messages (launch, shape).
 * 
 * A decoder re-encodes what it read and refuses the bundle (BAD_BUNDLE)
 * unless that gives back the same bytes, so every accepted bundle has one
 * content address, and the two SDKs accept the same files.
 */
export interface ModuleBundle {
  /**
   * "kernelfarm.bundle": first in the file, so it reads as the format's magic
   */
  'format'?: (string);
  /**
   * BUNDLE_VERSION; 1 was the msgpack encoding of kernelfarm before this schema
   */
  'version'?: (number);
  /**
   * cpu | cuda | vta
   */
  'target'?: (string);
  /**
   * e.g. arch=x86_64, os=linux; arch=sm_90, format=cubin|fatbin
   */
  'target_details'?: (_farm_v1_BundleEntry)[];
  /**
   * the loadable binary: shared object, cubin/fatbin, VTA program
   */
  'binary'?: (Buffer | Uint8Array | string);
  /**
   * in the order the module declared them
   */
  'functions'?: (_farm_v1_BundleFunction)[];
  /**
   * free-form provenance: compiler, flags, source hash; none: no meta
   */
  'meta'?: (_farm_v1_BundleEntry)[];
}

/**
 * The module bundle: one file per compiled module, built by the host
 * compilers (TypeScript: protos/bundle.ts; Python: python/kernelfarm/bundle.py),
 * shipped with `upload` and checked by the agent before it loads it. This
 * file is its schema for both languages.
 * 
 * The sha256 of a bundle's bytes is the module's content address (its upload
 * name, the agent's content store, the CUDA compile caches), so the same
 * module must have the same bytes whichever SDK compiled it. Protobuf allows
 * many encodings of one message; a bundle is written in exactly one, the
 * canonical encoding, by each language's protobuf library (protobufjs,
 * Python's google.protobuf) under these rules:
 * 
 * 1. fields in field-number order (what both libraries do);
 * 2. a field with its default value (0, "", empty bytes, an empty list) is
 * not written (Python never writes one; protobufjs writes a field that is
 * present even when it is 0 or "", so the TypeScript encoder leaves such
 * fields out of the object it hands protobufjs);
 * 3. repeated scalars packed (proto3's default in both);
 * 4. no map<> fields: neither library promises an order for them, so
 * string maps are repeated BundleEntry sorted by the UTF-8 bytes of the
 * key, each key once;
 * 5. no unknown fields, no `optional` scalars (a set-but-zero one would be
 * written): presence is carried by sub-messages (launch, shape).
 * 
 * A decoder re-encodes what it read and refuses the bundle (BAD_BUNDLE)
 * unless that gives back the same bytes, so every accepted bundle has one
 * content address, and the two SDKs accept the same files.
 */
export interface ModuleBundle__Output {
  /**
   * "kernelfarm.bundle": first in the file, so it reads as the format's magic
   */
  'format': (string);
  /**
   * BUNDLE_VERSION; 1 was the msgpack encoding of kernelfarm before this schema
   */
  'version': (number);
  /**
   * cpu | cuda | vta
   */
  'target': (string);
  /**
   * e.g. arch=x86_64, os=linux; arch=sm_90, format=cubin|fatbin
   */
  'target_details': (_farm_v1_BundleEntry__Output)[];
  /**
   * the loadable binary: shared object, cubin/fatbin, VTA program
   */
  'binary': (Buffer);
  /**
   * in the order the module declared them
   */
  'functions': (_farm_v1_BundleFunction__Output)[];
  /**
   * free-form provenance: compiler, flags, source hash; none: no meta
   */
  'meta': (_farm_v1_BundleEntry__Output)[];
}
