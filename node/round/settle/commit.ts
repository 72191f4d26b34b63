/**
 * The committer's phase: the manifest with a quorum of attestations goes
 * on chain, and the peers hear of the transaction on gossip.
 *
 * @module
 */
import {
  attestationForManifest,
  orderSignatures,
} from "../../../chain/attestation.ts";
import type { RoundAction } from "../../../protocol/round/round_state.ts";
import type { RoundManifest } from "../../../protocol/round/round_manifest.ts";
import type { RoundLedger } from "../records/ledger.ts";
import type { RoundPublisher } from "../services/publisher.ts";
import type { RoundChain } from "../services/services.ts";
import { inGoodStanding } from "../services/good_standing.ts";

/** What committing a round uses. */
export interface CommitOptions {
  chain: Pick<RoundChain, "commit" | "inGoodStanding">;
  publisher: Pick<RoundPublisher, "header" | "publish">;
  ledger: Pick<RoundLedger, "commitLatency" | "noteCommit">;
  /** This peer's id, the committer of record. */
  peerId: string;
  log(line: string): void;
}

/**
 * Commits round `a.round`'s `manifest` with the attestations `a` names, of
 * signers in good standing now: one slashed since it attested (a second
 * silence lands at any round's close) would make the registry revert the
 * whole commit as a stranger's, and one leaving is not counted anyway.
 */
export async function commitManifest(
  o: CommitOptions,
  a: Extract<RoundAction, { type: "commit" }>,
  manifest: RoundManifest,
): Promise<void> {
  const standing = new Set(
    await inGoodStanding(o.chain, a.attestations.map((x) => x.account)),
  );
  const attestations = a.attestations.filter((x) => standing.has(x.account));
  const sentAt = performance.now();
  const tx = await o.chain.commit(
    attestationForManifest(a.manifest, manifest),
    orderSignatures(attestations.map((x) => ({
      signer: x.account as `0x${string}`,
      signature: x.signature as `0x${string}`,
    }))),
  );
  o.log(
    `round ${a.round}: committed ${a.checkpoint} with ${attestations.length} attestations (tx ${tx.hash}, ${tx.gasUsed} gas)`,
  );
  o.ledger.commitLatency.observe((performance.now() - sentAt) / 1000);
  o.ledger.noteCommit(a.round, tx.hash, o.peerId, true);
  await o.publisher.publish({
    ...o.publisher.header("committed", a.round, manifest.parent),
    checkpoint: a.checkpoint,
    tx: tx.hash,
  });
}
