/**
 * Which signers the registry counts now: members of the job in good
 * standing, read afresh before evidence or a commit goes on chain.
 *
 * @module
 */
import type { Address } from "../../../chain/attestation.ts";
import type { RoundChain } from "./services.ts";

/**
 * Those of `signers` in good standing in the job now, read afresh: the
 * registry counts no other verdict.
 */
export async function inGoodStanding(
  chain: Pick<RoundChain, "inGoodStanding">,
  signers: readonly string[],
): Promise<string[]> {
  const standing = await Promise.all(
    signers.map((s) => chain.inGoodStanding(s as Address).catch(() => false)),
  );
  return signers.filter((_, i) => standing[i]);
}
