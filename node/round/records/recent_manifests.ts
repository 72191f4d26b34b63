/**
 * The round manifests a peer built as leader or verified, by CID, for
 * attesting, committing, syncing and auditing the rounds they describe.
 * Only the newest are kept: a peer never works on rounds far behind.
 *
 * @module
 */
import type { RoundManifest } from "../../../protocol/round/round_manifest.ts";

/** Manifests by CID, the oldest forgotten past `keep`. */
export class RecentManifests {
  readonly #byCid = new Map<string, RoundManifest>();

  constructor(readonly keep: number) {}

  /** Holds `manifest` under `cid`, forgetting the oldest past `keep`. */
  remember(cid: string, manifest: RoundManifest): void {
    this.#byCid.set(cid, manifest);
    if (this.#byCid.size > this.keep) {
      this.#byCid.delete(this.#byCid.keys().next().value!);
    }
  }

  /** The manifest held under `cid`, if any. */
  get(cid: string): RoundManifest | undefined {
    return this.#byCid.get(cid);
  }

  /** The manifest held for `round` whose checkpoint is `checkpoint`. */
  committing(round: number, checkpoint: string): RoundManifest | undefined {
    for (const m of this.#byCid.values()) {
      if (m.round === round && m.checkpoint === checkpoint) return m;
    }
    return undefined;
  }

  /**
   * The CID of `peer`'s delta as the manifest of `round` that made
   * `checkpoint` lists it, aggregated or excluded: null when it does not
   * list it, undefined when that manifest is not held.
   */
  listed(
    round: number,
    checkpoint: string,
    peer: string,
  ): string | null | undefined {
    const m = this.committing(round, checkpoint);
    if (!m) return undefined;
    return [...m.contributions, ...m.excluded].find((e) => e.peer === peer)
      ?.delta ?? null;
  }
}
