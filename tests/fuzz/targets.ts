/**
 * Every fuzz target: each decoder that takes bytes from outside.
 *
 * @module
 */
import type { FuzzTarget } from "./target.ts";
import { BLOB_TARGETS } from "./targets_blobs.ts";
import { WIRE_TARGETS } from "./targets_wire.ts";

/** The targets, by name, in the order a run takes them. */
export const TARGETS: readonly FuzzTarget[] = [
  ...WIRE_TARGETS,
  ...BLOB_TARGETS,
];
