/**
 * What a delta announcement is credited with: its tokens capped at the
 * most a peer can honestly train on in a round. The one place the cap is
 * applied; the leader's manifest, a verifier's check of it and the round's
 * update all go through here, so a peer claiming 10^9 tokens weighs and
 * earns no more than an honest full round.
 *
 * Pure: no I/O.
 *
 * @module
 */
import { type JobSpec, maxTokensPerRound } from "../spec/job_spec.ts";
import type { DeltaAnnounce } from "../messages/messages.ts";
import type { ManifestContribution } from "./round_manifest.ts";

/**
 * Tokens credited for a claim of `claimed`: at most `maxTokensPerRound`.
 * Invalid counts (0, negative, fractional, NaN) stay invalid, for the
 * aggregation to name.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { creditedTokens } from "./contribution.ts";
 * import { defaultJobSpec } from "../spec/job_spec.ts";
 *
 * const spec = defaultJobSpec({ dataset: { cid: "bafkreigh2akiscaildcqabsyg3dfr6chu3fgpregiymsck7e7aqa4s52zy" } });
 * const cap = spec.innerSteps * spec.batchSize * spec.contextLength;
 * assert(creditedTokens(spec, 1e9) === cap);
 * ```
 */
export function creditedTokens(spec: JobSpec, claimed: number): number {
  return Math.min(claimed, maxTokensPerRound(spec));
}

/** The manifest entry for an announced delta that is aggregated. */
export function manifestContribution(
  spec: JobSpec,
  d: DeltaAnnounce,
): ManifestContribution {
  return {
    peer: d.peer,
    account: d.account,
    delta: d.delta,
    tokens: creditedTokens(spec, d.tokens),
    loss: d.loss,
  };
}
