/**
 * A verifier's check of a round manifest: that it is what its leader
 * announced, lists only announced deltas, leaves out none this peer got
 * well before it (no silent censorship), screens out exactly what this
 * peer screens out, excludes a peer for a refused manifest only on
 * evidence that checks, and recomputes to the announced checkpoint.
 *
 * @module
 */
import { canonicalJson } from "../protocol/canonical_json.ts";
import { cidForBytes, cidToString } from "../protocol/cid.ts";
import { DeltaContextError } from "../protocol/delta_blob.ts";
import { partitionDeltas } from "../protocol/delta_screen.ts";
import { type JobSpec, maxTokensPerRound } from "../protocol/job_spec.ts";
import type { DeltaAnnounce, ManifestAnnounce } from "../protocol/messages.ts";
import {
  encodeRoundCheckpoint,
  type RoundCheckpoint,
} from "../protocol/round_checkpoint.ts";
import type { RoundManifest } from "../protocol/round_manifest.ts";
import { nextCheckpoint } from "../protocol/round_update.ts";

/**
 * Why a manifest is not attested; `code` is the refusal's reason. Most
 * refusals are evidence that its leader cheated; a delta that could not be
 * fetched may be the network's fault and is not.
 */
export class ManifestRefused extends Error {
  constructor(readonly code: string, message: string) {
    super(message);
    this.name = "ManifestRefused";
  }

  get evidence(): boolean {
    return this.code !== "invalid-delta" && this.code !== "too-deep";
  }
}

/** The refusal reason for a delta that could not be fetched or read. */
export function deltaRefusalReason(err: unknown): string {
  if (err instanceof DeltaContextError) {
    return err.field === "" ? "malformed" : `wrong-${err.field}`;
  }
  return err instanceof RangeError ||
      (err as Error)?.name === "QuantizeFormatError"
    ? "malformed"
    : "unavailable";
}

/** What a {@linkcode ManifestVerifier} uses. */
export interface ManifestVerifierOptions {
  jobId: string;
  spec: JobSpec;
  /** The values of an announced delta, fetched from `providers` if need be. */
  delta(d: DeltaAnnounce, providers: string[]): Promise<Float32Array>;
  /**
   * A manifest by its announcement, fetched if need be from `providers`
   * (its author when not given).
   */
  manifest(m: ManifestAnnounce, providers?: string[]): Promise<RoundManifest>;
  /** The checkpoint held under `cid`; throws if it is not the one held. */
  held(cid: string): { cid: string; ckpt: RoundCheckpoint };
  /** Stores a recomputed checkpoint that matched. */
  store(bytes: Uint8Array): Promise<void>;
  /** Records a delta this peer refused while verifying. */
  noteDelta(d: DeltaAnnounce, reason: string): void;
}

/** What this peer saw of the round when a manifest arrived. */
export interface Witness {
  /** The round's delta announcements it held. */
  readonly announced: readonly DeltaAnnounce[];
  /** Those the manifest must list (censorship.ts). */
  readonly expected: readonly DeltaAnnounce[];
  /** Whether a manifest listing these peers came sooner than allowed. */
  hasty(listed: readonly string[]): boolean;
}

/** A witness of a manifest that did not reach this peer itself: no timing. */
function untimed(w: Witness): Witness {
  return { announced: w.announced, expected: [], hasty: () => false };
}

/** Manifests refused as evidence, kept for the rounds still in play. */
const KEEP_REFUSED = 16;

/** Checks manifests for one peer, remembering those it refused. */
export class ManifestVerifier {
  readonly #o: ManifestVerifierOptions;
  /** Manifests refused as evidence of a dishonest leader, by CID. */
  readonly #refused = new Map<string, { round: number; peer: string }>();
  /** Checks under way, by manifest CID. */
  readonly #pending = new Map<string, Promise<unknown>>();

  constructor(o: ManifestVerifierOptions) {
    this.#o = o;
  }

  /**
   * Fetches and verifies the manifest `m` announced, as `witness` saw the
   * round. Resolves with it when it checks out; throws a
   * {@linkcode ManifestRefused} when it does not (remembered as evidence
   * against its leader) or another error when it cannot be fetched.
   */
  check(m: ManifestAnnounce, witness: Witness): Promise<RoundManifest> {
    const task = (async () => {
      const manifest = await this.#o.manifest(m);
      try {
        await this.verify(m, manifest, witness);
      } catch (err) {
        if (err instanceof ManifestRefused) this.#remember(m, err);
        throw err;
      }
      return manifest;
    })();
    this.#pending.set(m.manifest, task);
    return task.finally(() => this.#pending.delete(m.manifest));
  }

  #remember(m: ManifestAnnounce, err: ManifestRefused): void {
    if (!err.evidence) return;
    this.#refused.set(m.manifest, { round: m.round, peer: m.peer });
    if (this.#refused.size > KEEP_REFUSED) {
      this.#refused.delete(this.#refused.keys().next().value!);
    }
  }

  /** CID of a manifest `peer` published for `round` that was refused. */
  evidenceAgainst(round: number, peer: string): string | undefined {
    for (const [cid, r] of this.#refused) {
      if (r.round === round && r.peer === peer) return cid;
    }
    return undefined;
  }

  /**
   * Checks `manifest` against what this peer saw and recomputes it; throws
   * a {@linkcode ManifestRefused} naming what is wrong, and stores C(r+1)
   * when it matches.
   */
  async verify(
    m: ManifestAnnounce,
    manifest: RoundManifest,
    witness: Witness,
    depth = 0,
  ): Promise<void> {
    const { announced, expected } = witness;
    this.#fits(m, manifest, announced);
    if (
      witness.hasty([
        ...manifest.contributions.map((c) => c.peer),
        ...manifest.excluded.map((e) => e.peer),
      ])
    ) {
      throw new ManifestRefused(
        "hasty",
        "manifest came sooner after its latest delta than a leader may publish",
      );
    }
    const byPeer = new Map(announced.map((d) => [d.peer, d]));
    const screened = manifest.excluded.filter((e) =>
      e.reason !== "refused-manifest"
    );
    for (const e of manifest.excluded) {
      if (e.reason !== "refused-manifest") continue;
      if (!await this.#refutes(e, m, witness, depth)) {
        throw new ManifestRefused(
          "unjustified-exclusion",
          `manifest excludes ${e.peer} for manifest ${e.evidence}, which checks out`,
        );
      }
    }
    const listed = [
      ...manifest.contributions.map((c) => c.peer),
      ...screened.map((e) => e.peer),
    ];
    const left = new Set([...listed, ...manifest.excluded.map((e) => e.peer)]);
    // The author first: the leader would otherwise serve every delta to
    // every verifier.
    const fetch = (d: DeltaAnnounce) => this.#o.delta(d, [d.peer, m.peer]);
    const missing = announced.filter((d) => !left.has(d.peer));
    const isExpected = (d: DeltaAnnounce) => expected.some((e) => e === d);
    const [values, leftOut] = await Promise.all([
      Promise.all(listed.map(async (peer) => {
        try {
          return { peer, delta: await fetch(byPeer.get(peer)!) };
        } catch (err) {
          throw new ManifestRefused(
            "invalid-delta",
            `the delta of ${peer} cannot be used: ${(err as Error).message}`,
          );
        }
      })),
      // A delta this peer got well before the manifest and can read is one
      // the leader had: leaving it out is censorship. One this peer cannot
      // read either was rightly left out.
      Promise.all(
        missing.map((d) =>
          fetch(d).then(() => isExpected(d) ? d.peer : null, (err) => {
            const reason = deltaRefusalReason(err);
            if (reason !== "unavailable") this.#o.noteDelta(d, reason);
            return null;
          })
        ),
      ),
    ]);
    const censored = leftOut.filter((p) => p !== null);
    if (censored.length > 0) {
      throw new ManifestRefused(
        "censored",
        `manifest leaves out the delta of ${
          censored.join(", ")
        }, announced well before the manifest and readable`,
      );
    }
    const { accepted, excluded } = partitionDeltas(values);
    if (
      canonicalJson(excluded) !== canonicalJson(
        screened.map((e) => ({ peer: e.peer, reason: e.reason })),
      )
    ) {
      throw new ManifestRefused(
        "screen-mismatch",
        `manifest screens out ${
          canonicalJson(screened.map((e) => [e.peer, e.reason]))
        }, this peer ${canonicalJson(excluded.map((e) => [e.peer, e.reason]))}`,
      );
    }
    for (const e of excluded) this.#o.noteDelta(byPeer.get(e.peer)!, e.reason);
    const tokens = new Map(
      manifest.contributions.map((c) => [c.peer, c.tokens]),
    );
    const held = this.#o.held(m.parent);
    const bytes = encodeRoundCheckpoint(
      nextCheckpoint({
        spec: this.#o.spec,
        parent: held.ckpt,
        parentCid: held.cid,
        deltas: accepted.map(({ peer, delta }) => ({
          peer,
          tokens: tokens.get(peer)!,
          delta,
        })),
      }),
    );
    // A match is C(r+1), stored here for free; a mismatch is not kept,
    // or a leader announcing bogus manifests would fill the disk.
    const cid = cidToString(await cidForBytes(bytes));
    if (cid !== manifest.checkpoint) {
      throw new ManifestRefused(
        "checkpoint-mismatch",
        `recomputed checkpoint ${cid} differs`,
      );
    }
    await this.#o.store(bytes);
  }

  /**
   * Whether the manifest that exclusion `e` cites is one its author
   * published for this round and that fails verification: this peer
   * refused it already (waiting for a check under way), or rechecks it
   * now, one level deep and without the timing rules, which only hold for
   * manifests this peer saw arrive.
   */
  async #refutes(
    e: RoundManifest["excluded"][number],
    m: ManifestAnnounce,
    witness: Witness,
    depth: number,
  ): Promise<boolean> {
    await this.#pending.get(e.evidence)?.catch(() => {});
    const known = this.#refused.get(e.evidence);
    if (known) return known.round === m.round && known.peer === e.peer;
    if (depth >= 1) {
      throw new ManifestRefused(
        "too-deep",
        `exclusion of ${e.peer} cites evidence that cites evidence`,
      );
    }
    const cited: ManifestAnnounce = {
      ...m,
      peer: e.peer,
      manifest: e.evidence,
      checkpoint: "",
      rank: 0,
    };
    let manifest: RoundManifest;
    try {
      // Its author may withhold it from all but the leader that cites it.
      manifest = await this.#o.manifest(cited, [e.peer, m.peer]);
    } catch {
      return false;
    }
    try {
      await this.verify(
        { ...cited, checkpoint: manifest.checkpoint },
        manifest,
        untimed(witness),
        depth + 1,
      );
    } catch (err) {
      return err instanceof ManifestRefused && err.evidence;
    }
    return false;
  }

  /** Throws a {@linkcode ManifestRefused} unless `manifest` fits `m`. */
  #fits(
    m: ManifestAnnounce,
    manifest: RoundManifest,
    announced: readonly DeltaAnnounce[],
  ): void {
    if (
      manifest.job !== this.#o.jobId || manifest.round !== m.round ||
      manifest.parent !== m.parent || manifest.leader !== m.peer ||
      manifest.checkpoint !== m.checkpoint
    ) {
      throw new ManifestRefused(
        "mismatch",
        "manifest does not match its announcement",
      );
    }
    if (
      canonicalJson(manifest.rule) !== canonicalJson(this.#o.spec.aggregation)
    ) {
      throw new ManifestRefused(
        "rule",
        "manifest uses another aggregation rule",
      );
    }
    const cap = maxTokensPerRound(this.#o.spec);
    const byPeer = new Map(announced.map((d) => [d.peer, d]));
    for (const c of manifest.contributions) {
      const d = byPeer.get(c.peer);
      // Every contribution must be one its author announced (signed on
      // gossip): a leader cannot invent or alter deltas.
      if (
        !d || d.delta !== c.delta || d.loss !== c.loss ||
        d.account.toLowerCase() !== c.account.toLowerCase() ||
        Math.min(d.tokens, cap) !== c.tokens
      ) {
        throw new ManifestRefused(
          "not-announced",
          `contribution of ${c.peer} was not announced as listed`,
        );
      }
    }
    for (const e of manifest.excluded) {
      if (byPeer.get(e.peer)?.delta !== e.delta) {
        throw new ManifestRefused(
          "not-announced",
          `exclusion of ${e.peer} names a delta it did not announce`,
        );
      }
    }
  }
}
