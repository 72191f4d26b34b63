/**
 * The manifest behind a committed checkpoint, as the chain recorded it:
 * read from the registry, fetched from peers and checked to be the one
 * that made the checkpoint.
 *
 * @module
 */
import { RAW_CODEC } from "../../../protocol/content/cid.ts";
import { bytes32ToCid } from "../../../chain/attestation.ts";
import type { RoundManifest } from "../../../protocol/round/round_manifest.ts";
import type { BlobGetter } from "./blob_getter.ts";
import type { RoundChain } from "./services.ts";

/** How long a committed manifest is looked for, ms. */
const MANIFEST_FETCH_MS = 2_000;

/**
 * The manifest the chain recorded for `round`, which made `checkpoint`,
 * fetched from peers, with its CID; null when the chain has none, or it
 * cannot be had within `timeoutMs`, or it is not the one that made
 * `checkpoint`.
 */
export async function committedManifest(
  o: {
    chain: Pick<RoundChain, "committedManifest">;
    blobs: Pick<BlobGetter, "manifest">;
  },
  round: number,
  checkpoint: string,
  timeoutMs = MANIFEST_FETCH_MS,
): Promise<{ cid: string; manifest: RoundManifest } | null> {
  try {
    const word = await o.chain.committedManifest(round);
    if (!word) return null;
    const cid = bytes32ToCid(word, RAW_CODEC);
    const manifest = await o.blobs.manifest(cid, { timeoutMs });
    return manifest.round === round && manifest.checkpoint === checkpoint
      ? { cid, manifest }
      : null;
  } catch {
    return null;
  }
}
