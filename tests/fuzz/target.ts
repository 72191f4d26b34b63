/**
 * What a fuzz target is: a decoder that takes bytes from outside, the
 * valid inputs its mutants start from, and the errors it may throw for
 * bad input. Anything else it throws, or an invariant it breaks, is a
 * crash.
 *
 * @module
 */
import type { Rng } from "../../kernels/data/rng.ts";
import { KernelError } from "../../kernels/errors.ts";
import { NodeError } from "../../node/errors.ts";
import { ProtocolError } from "../../protocol/errors.ts";
import { mutateBytes } from "./mutate.ts";

/** One decoder under fuzzing. */
export interface FuzzTarget {
  name: string;
  /** What it decodes, for the report. */
  about: string;
  /** Valid inputs (each is also fed as is). */
  seeds(): Promise<Uint8Array[]>;
  /** A mutant of `seed`; byte edits when not given. */
  mutate?(rng: Rng, seed: Uint8Array, seeds: readonly Uint8Array[]): Uint8Array;
  /**
   * Decodes `input` as the node does: whether it was accepted (false when
   * refused without a throw, as gossip verdicts are); throws a
   * {@linkcode BrokenInvariant} when what it accepted is wrong.
   */
  run(input: Uint8Array, rng: Rng): boolean | Promise<boolean>;
  /** Whether `err` is what the decoder throws for bad input. */
  expected?(err: unknown): boolean;
}

/** What a decoder accepted is inconsistent: a crash, not bad input. */
export class BrokenInvariant extends Error {
  constructor(message: string) {
    super(message);
    this.name = "BrokenInvariant";
  }
}

/** The errors this codebase throws for bad input. */
export function knownError(err: unknown): boolean {
  return err instanceof ProtocolError || err instanceof KernelError ||
    err instanceof NodeError;
}

/** The mutant of `seed` that `target` makes from `rng`. */
export function mutantOf(
  target: FuzzTarget,
  rng: Rng,
  seed: Uint8Array,
  seeds: readonly Uint8Array[],
): Uint8Array {
  return target.mutate
    ? target.mutate(rng, seed, seeds)
    : mutateBytes(rng, seed, seeds);
}
