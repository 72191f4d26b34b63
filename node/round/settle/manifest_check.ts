/**
 * A verifier's check of a round manifest: that it is what its leader
 * announced, lists only announced deltas, leaves out none this peer got
 * before it (no silent censorship: one got well before it is refused at
 * once, one got shortly before it waits for its leader's amendment),
 * screens out exactly what this peer screens out, excludes a peer for a
 * refused manifest only where this peer refused that manifest itself and
 * as `unserved` only a delta this peer did not hold either when the
 * manifest came (else it waits for the amendment that takes it in), and
 * recomputes to the announced checkpoint. The rules are
 * protocol/round/censorship.ts's.
 *
 * A refusal is this peer's own verdict, not evidence it can hand on: the
 * timing rules depend on what reached this peer when, and manifests are
 * not signed beyond their gossip announcement. So a backup's exclusion of
 * a refused leader is accepted only by verifiers that refused that
 * leader's announced manifest themselves.
 *
 * @module
 */
import { NodeError } from "../../errors.ts";
import { cidToString } from "../../../protocol/content/cid.ts";
import { DeltaContextError } from "../../../protocol/round/delta_blob.ts";
import { partitionDeltas } from "../../../protocol/aggregation/delta_screen.ts";
import { claimedShare } from "../../../protocol/audit/inner_steps.ts";
import {
  censoredRefusal,
  fitRefusal,
  isAmended,
  type ManifestRefusal,
  missingVerdict,
  NO_BLAME,
  type Owed,
  screenRefusal,
  supersededRefusal,
  unamendedRefusal,
} from "../../../protocol/round/manifest_rules.ts";
import { isSharded, type JobSpec } from "../../../protocol/spec/job_spec.ts";
import {
  shardCount,
  sliceBounds,
} from "../../../protocol/aggregation/shards.ts";
import {
  addScreenSums,
  decodeSliceScreenSums,
  encodeSliceScreenSums,
  screenSlices,
  sliceScreenSums,
  sumGroupBounds,
} from "../../../protocol/aggregation/slice_screen.ts";
import { BITS_FOR_COMPRESSION } from "../../../protocol/aggregation/quantize.ts";
import {
  encodedByteLength,
  encodeQuantized,
} from "../../../protocol/aggregation/quantized_container.ts";
import {
  decodeUpdateSlice,
  screenedPeers,
  updateOfSlices,
  updateSlice,
} from "../../../protocol/round/slice_update.ts";
import type {
  DeltaAnnounce,
  ManifestAnnounce,
} from "../../../protocol/messages/messages.ts";
import {
  CHECKPOINT_CODEC,
  encodeRoundCheckpoint,
  roundCheckpointCid,
} from "../../../protocol/round/round_checkpoint.ts";
import {
  type ManifestExclusion,
  type RoundManifest,
  unservedSlice,
} from "../../../protocol/round/round_manifest.ts";
import {
  checkpointOfUpdate,
  nextCheckpoint,
} from "../../../protocol/round/round_update.ts";
import type { Held } from "./sync.ts";
import type { SliceProducer } from "./slice_produce.ts";
import {
  groupsOf,
  partProducers,
  plannedSlices,
  producersToAsk,
  servingSplits,
  sliceHolders,
  sliceProducers,
  slicesToRecompute,
} from "../../../protocol/round/slice_plan.ts";
import { heardFaults } from "../../../protocol/round/fault_notices.ts";
import { mapAtMost } from "../services/at_most.ts";

/**
 * Why a manifest is not attested; `code` is the refusal's reason. Most
 * refusals mean its leader cheated; a delta that could not be fetched, or
 * an exclusion this peer could not judge, may be no one's fault.
 */
export class ManifestRefused extends NodeError {
  constructor(readonly code: string, message: string) {
    super(message);
    this.name = "ManifestRefused";
  }

  /** The error for a refusal of `manifest_rules.ts`. */
  static of(refusal: ManifestRefusal): ManifestRefused {
    return new ManifestRefused(refusal.code, refusal.message);
  }

  /** Whether the refusal blames the leader (and so costs it the round). */
  get blames(): boolean {
    return !NO_BLAME.includes(this.code);
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

/** Blocks a sharded round's leader published fetched at once. */
const BLOCKS_AT_ONCE = 4;

/**
 * `read()`, or a refusal blaming no one that names the delta of `peer`
 * that could not be used.
 */
async function usable<T>(peer: string, read: () => Promise<T>): Promise<T> {
  try {
    return await read();
  } catch (err) {
    throw new ManifestRefused(
      "invalid-delta",
      `the delta of ${peer} cannot be used: ${(err as Error).message}`,
    );
  }
}

function equalBytes(a: Uint8Array, b: Uint8Array): boolean {
  return a.length === b.length && a.every((x, i) => x === b[i]);
}

/** What a {@linkcode ManifestVerifier} uses. */
export interface ManifestVerifierOptions {
  jobId: string;
  spec: JobSpec;
  /** This peer's id: which of a slice's producers it asks first. */
  self: string;
  /**
   * The values of an announced delta, fetched from `providers` if need be;
   * with no providers, only one held here (else it throws).
   */
  delta(d: DeltaAnnounce, providers: string[]): Promise<Float32Array>;
  /** The pieces' CIDs of an announced delta of a sharded job (its root). */
  root(d: DeltaAnnounce, providers: string[]): Promise<unknown>;
  /** Slice `j` of `k` of an announced delta of a sharded job. */
  slice(
    d: DeltaAnnounce,
    providers: string[],
    k: number,
    j: number,
  ): Promise<Float32Array>;
  /**
   * The slices this peer computed as a producer of the plan `leader` led
   * round `round` after `parent` by over the deltas `seen` (by slice: its
   * sums' and update's CIDs); none for another plan, or when it produced
   * none (slice_produce.ts).
   */
  produced?(
    round: number,
    parent: string,
    leader: string,
    seen: readonly Pick<DeltaAnnounce, "peer" | "delta">[],
  ): ReadonlyMap<number, { sums: string; update: string }>;
  /**
   * The fault notices members sent about the manifest `cid` so far, by
   * slice (slice_faults.ts).
   */
  faults?(cid: string): ReadonlyMap<number, readonly string[]>;
  /** Announces that slice `j` of `m` is not the one this peer produced. */
  fault?(m: ManifestAnnounce, j: number): Promise<void>;
  /** Notes a fault notice `peer` sent about slice `j` of `m`, found false. */
  falseFault?(m: ManifestAnnounce, j: number, peer: string): void;
  /**
   * Whether this peer read slice `j` of `k` of `peer`'s delta for a plan
   * `leader` led round `round` after `parent` by (slice_produce.ts).
   */
  readSliceOf?: SliceProducer["readSliceOf"];
  /** The bytes of block `cid` (at most `maxBytes`), from `providers`. */
  block(
    cid: string,
    maxBytes: number,
    providers: string[],
  ): Promise<Uint8Array>;
  /**
   * A manifest by its announcement, fetched if need be from `providers`
   * (when not given, down its tree: protocol/round/manifest_spread.ts).
   */
  manifest(m: ManifestAnnounce, providers?: string[]): Promise<RoundManifest>;
  /** The checkpoint held under `cid`; throws if it is not the one held. */
  held(cid: string): Held;
  /** Stores a recomputed checkpoint that matched. */
  store(bytes: Uint8Array, codec?: number): Promise<void>;
  /** Records a delta this peer refused while verifying. */
  noteDelta(d: DeltaAnnounce, reason: string): void;
}

/** What this peer saw of the round when a manifest arrived. */
export interface Witness {
  /** The round's delta announcements it held. */
  readonly announced: readonly DeltaAnnounce[];
  /** Those the manifest must list, or be refused at once (censorship.ts). */
  readonly expected: readonly DeltaAnnounce[];
  /**
   * Those that came before it, however shortly: the manifest or an
   * amendment of it must list them (censorship.ts, rule 3).
   */
  readonly preceding: readonly DeltaAnnounce[];
  /** When (Date.now() ms) an amendment it waits for is due. */
  readonly amendBy: number;
  /**
   * When (Date.now() ms) the fault notices of a sharded manifest's
   * producers are in (`faultWaitMs` after it came).
   */
  readonly faultsBy: number;
  /**
   * Whether this peer's event loop kept time since the manifest came: an
   * amendment sent meanwhile would have been heard.
   */
  steadySince(): boolean;
  /** Whether a manifest listing these peers came sooner than allowed. */
  hasty(listed: readonly string[]): boolean;
  /** The round's delta announcements held now (more may have come). */
  current(): readonly DeltaAnnounce[];
}

/** Verdicts kept, for the rounds still in play. */
const KEEP_VERDICTS = 64;
/** Leaders' rounds whose fetched manifests are kept, to find amendments. */
const KEEP_LEADS = 64;
/**
 * How long a listed delta's announcement, or this peer's own verdict on a
 * manifest an exclusion cites, may be waited for: two re-announcements.
 */
const ANNOUNCE_WAIT_MS = 4_000;
const POLL_MS = 100;

/** Checks manifests for one peer, remembering those it refused. */
export class ManifestVerifier {
  readonly #o: ManifestVerifierOptions;
  /**
   * This peer's verdicts on announced manifests, by "CID peer": whether it
   * refused the manifest, blaming its leader.
   */
  readonly #verdicts = new Map<string, { round: number; blamed: boolean }>();
  /** Checks under way, by "CID peer". */
  readonly #pending = new Map<string, Promise<unknown>>();
  /** Manifests fetched, by "round parent peer": a leader's amendments. */
  readonly #leads = new Map<string, RoundManifest[]>();
  /** Peers a fault notice of which was found false: no longer heard. */
  readonly #discredited = new Set<string>();

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
    const key = `${m.manifest} ${m.peer}`;
    // What this peer holds as the manifest comes: an `unserved` exclusion
    // of one of these the leader could have had from it. In a sharded job
    // a peer holds a delta whole only when it read every piece (a root, or
    // a slice, shows it served, not that the leader could have had it).
    const held = new Map(
      witness.announced.map((d) => [
        d.peer,
        this.#o.delta(d, []).catch(() => null),
      ]),
    );
    const task = (async () => {
      const manifest = await this.#o.manifest(m);
      this.#lead(m, manifest);
      try {
        await this.#verify(m, manifest, witness, held);
      } catch (err) {
        if (err instanceof ManifestRefused) {
          this.#note(key, m.round, err.blames);
        }
        throw err;
      }
      this.#note(key, m.round, false);
      return manifest;
    })();
    this.#pending.set(key, task);
    return task.finally(() => this.#pending.delete(key));
  }

  /** Keeps `manifest` among those its leader announced for its round. */
  #lead(m: ManifestAnnounce, manifest: RoundManifest): void {
    const key = `${m.round} ${m.parent} ${m.peer}`;
    const leads = this.#leads.get(key) ?? [];
    if (!leads.includes(manifest)) leads.push(manifest);
    this.#leads.delete(key);
    this.#leads.set(key, leads);
    if (this.#leads.size > KEEP_LEADS) {
      this.#leads.delete(this.#leads.keys().next().value!);
    }
  }

  #note(key: string, round: number, blamed: boolean): void {
    // The first verdict stands: one check per announced manifest.
    if (this.#verdicts.has(key)) return;
    this.#verdicts.set(key, { round, blamed });
    if (this.#verdicts.size > KEEP_VERDICTS) {
      this.#verdicts.delete(this.#verdicts.keys().next().value!);
    }
  }

  /**
   * CID of a manifest `peer` announced for `round` that this peer refused,
   * blaming it.
   */
  evidenceAgainst(round: number, peer: string): string | undefined {
    for (const [key, v] of this.#verdicts) {
      const [cid, by] = key.split(" ");
      if (v.blamed && v.round === round && by === peer) return cid;
    }
    return undefined;
  }

  /**
   * Checks `manifest` against what this peer saw and recomputes it; throws
   * a {@linkcode ManifestRefused} naming what is wrong, and stores C(r+1)
   * when it matches.
   */
  async #verify(
    m: ManifestAnnounce,
    manifest: RoundManifest,
    witness: Witness,
    heldHere: ReadonlyMap<string, Promise<Float32Array | null>>,
  ): Promise<void> {
    const announced = await this.#announcing(manifest, witness);
    const { expected, preceding } = witness;
    const misfit = fitRefusal(
      this.#o.jobId,
      this.#o.spec,
      m,
      manifest,
      announced,
    );
    if (misfit) throw ManifestRefused.of(misfit);
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
      e.reason !== "refused-manifest" && e.reason !== "unserved"
    );
    for (const e of manifest.excluded) {
      if (e.reason !== "refused-manifest") continue;
      if (!await this.#refutes(e, m)) {
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
    // Held here already, or fetched: the author first, as the leader would
    // otherwise serve every delta to every verifier.
    const fetch = async (d: DeltaAnnounce) =>
      await heldHere.get(d.peer) ?? await this.#o.delta(d, [d.peer, m.peer]);
    const sharded = isSharded(this.#o.spec);
    const missing = announced.filter((d) => !left.has(d.peer));
    const expectedPeers = new Set(expected.map((d) => d.peer));
    const precedingPeers = new Set(preceding.map((d) => d.peer));
    // Owed: deltas its leader must list in an amendment, or be refused.
    const owed = new Map<string, "late" | "unserved">();
    for (const e of manifest.excluded) {
      if (e.reason !== "unserved") continue;
      // One this peer held when the manifest came, it would have served.
      if (await heldHere.get(e.peer)) owed.set(e.peer, "unserved");
      // In a round led by slices, the slice its leader says it could not
      // read: this peer read it, as a producer, before the manifest, and
      // would have served it. Only its own reading counts: a notice from
      // another, and the slice fetched from it after the manifest, would
      // let one withholder serving all but the leader (a producer of its
      // own delta's slice, say) have every verifier refuse an honest one.
      const named = unservedSlice(e.evidence);
      if (
        named !== null && manifest.shards !== undefined &&
        this.#o.readSliceOf?.(
          m.round,
          m.parent,
          m.peer,
          named.slices,
          named.slice,
          e.peer,
        )
      ) {
        owed.set(e.peer, "unserved");
      }
    }
    if (sharded !== (manifest.shards !== undefined)) {
      throw new ManifestRefused(
        "shards-mismatch",
        sharded
          ? "manifest of a job sharded by slices names no slices"
          : "manifest names slices in a job that is not sharded",
      );
    }
    // Which of the deltas left out this peer can read (one it cannot read
    // either was rightly left out); in a sharded job, whose root it can.
    const readable = (d: DeltaAnnounce) =>
      sharded ? this.#o.root(d, [d.peer, m.peer]) : fetch(d);
    const [values, leftOut] = await Promise.all([
      sharded ? [] : Promise.all(listed.map(async (peer) => {
        const d = byPeer.get(peer)!;
        return {
          peer,
          delta: await usable(peer, () => fetch(d)),
          share: claimedShare(this.#o.spec, d.tokens),
        };
      })),
      Promise.all(
        missing.map((d) =>
          readable(d).then(
            () => d.peer,
            (err) => {
              const reason = deltaRefusalReason(err);
              if (reason !== "unavailable") this.#o.noteDelta(d, reason);
              return null;
            },
          )
        ),
      ),
    ]);
    const { censored, late } = missingVerdict(
      leftOut.filter((p) => p !== null),
      expectedPeers,
      precedingPeers,
    );
    if (censored.length > 0) {
      throw ManifestRefused.of(censoredRefusal(censored));
    }
    for (const peer of late) owed.set(peer, "late");
    const bytes = sharded
      ? await this.#slices(m, manifest, screened, byPeer, witness)
      : this.#recompute(m, manifest, screened, values, byPeer);
    // A match is C(r+1), stored here for free; a mismatch is not kept,
    // or a leader announcing bogus manifests would fill the disk.
    const cid = cidToString(await roundCheckpointCid(bytes));
    if (cid !== manifest.checkpoint) {
      throw new ManifestRefused(
        "checkpoint-mismatch",
        `recomputed checkpoint ${cid} differs`,
      );
    }
    if (owed.size > 0) await this.#amendment(m, owed, witness);
    await this.#o.store(bytes, CHECKPOINT_CODEC);
  }

  /**
   * C(r+1) recomputed from every listed delta's values, after checking
   * that the manifest screens out what this peer screens out.
   */
  #recompute(
    m: ManifestAnnounce,
    manifest: RoundManifest,
    screened: readonly ManifestExclusion[],
    values: readonly { peer: string; delta: Float32Array; share: number }[],
    byPeer: ReadonlyMap<string, DeltaAnnounce>,
  ): Uint8Array {
    const { accepted, excluded } = partitionDeltas(values);
    const misscreened = screenRefusal(screened, excluded);
    if (misscreened) throw ManifestRefused.of(misscreened);
    for (const e of excluded) this.#o.noteDelta(byPeer.get(e.peer)!, e.reason);
    const tokens = new Map(
      manifest.contributions.map((c) => [c.peer, c.tokens]),
    );
    const held = this.#o.held(m.parent);
    return encodeRoundCheckpoint(
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
  }

  /**
   * A sharded round's C(r+1): the parent's outer step with the update its
   * leader published, after checking the screen from the published sums
   * and recomputing, from the listed deltas' pieces, the sums and the
   * update of a few slices drawn here, where the leader cannot know
   * which (shards.ts).
   */
  async #slices(
    m: ManifestAnnounce,
    manifest: RoundManifest,
    screened: readonly ManifestExclusion[],
    byPeer: ReadonlyMap<string, DeltaAnnounce>,
    witness: Witness,
  ): Promise<Uint8Array> {
    const { spec } = this.#o;
    const shards = manifest.shards!;
    const held = this.#o.held(m.parent);
    const params = held.ckpt.params.length;
    // Every delta the screen saw, in the order of the published sums.
    const seen = screenedPeers(manifest).map((peer) => byPeer.get(peer)!);
    const k = shardCount(seen.length, params);
    if (shards.slices !== k) {
      throw new ManifestRefused(
        "shards-mismatch",
        `manifest cuts ${seen.length} deltas into ${shards.slices} slices, not ${k}`,
      );
    }
    const bounds = sliceBounds(params, k);
    // A round led by slices: slice j's blocks from its producers first,
    // which hold them, so that its leader does not serve every peer.
    const producers = plannedSlices(seen.length, params) === 0
      ? null
      : sliceProducers(m.parent, m.peer, k, seen.map((d) => d.peer));
    // Slices this peer produced for the plan are checked first, without a
    // fetch: it holds what they must be. A tampered one is announced at
    // once, for every verifier to recompute it (see #faulted).
    const own = this.#o.produced?.(m.round, m.parent, m.peer, seen) ??
      new Map();
    for (const [j, cids] of own) {
      if (shards.sums[j] !== cids.sums || shards.update[j] !== cids.update) {
        await this.#o.fault?.(m, j).catch(() => {});
        throw new ManifestRefused(
          "slice-mismatch",
          `slice ${j} differs from the one this peer computed as its producer`,
        );
      }
    }
    // Part j of the manifest (slice j, or group j - k of the sums) from
    // those who hold it.
    const parts = producers === null ? null : partProducers(producers);
    // A slice's blocks from its holders (a backup in place of a producer
    // whose answer was not taken), its fetchers split between them so
    // that each serves about as much however many slices it holds; a
    // group's from its members.
    const holders = producers === null
      ? []
      : sliceHolders(producers, shards.backups);
    const splits = servingSplits(holders, seen.length);
    const places = new Map(seen.map((d, i) => [d.peer, i]));
    const published = async (cid: string, maxBytes: number, j: number) => {
      try {
        // The leader last, unless it holds the slice in a producer's place.
        return await this.#o.block(cid, maxBytes, [
          ...new Set([
            ...producersToAsk(
              this.#o.self,
              j,
              (j < k ? holders[j] : parts?.[j]) ?? [],
              splits[j],
              places,
            ),
            m.peer,
          ]),
        ]);
      } catch (err) {
        throw new ManifestRefused(
          "unserved-slice",
          `its block ${cid} cannot be had: ${(err as Error).message}`,
        );
      }
    };
    const malformed = (what: string, err: unknown): never => {
      throw new ManifestRefused(
        "malformed-slice",
        `its ${what} cannot be read: ${(err as Error).message}`,
      );
    };
    const sumsBytes = 16 + 16 * seen.length;
    const sumsOf = async (cid: string, part: number, what: string) => {
      const bytes = await published(cid, sumsBytes, part);
      try {
        return { bytes, sums: decodeSliceScreenSums(bytes, seen.length) };
      } catch (err) {
        return malformed(what, err);
      }
    };
    // A group's total is checked by adding its slices' sums: by its members
    // (this peer's own groups) at once, by any verifier a notice reaches.
    const groupBounds = sumGroupBounds(k);
    const checkGroup = async (i: number) => {
      const slices = await mapAtMost(
        shards.sums.slice(groupBounds[i], groupBounds[i + 1]),
        BLOCKS_AT_ONCE,
        (cid, at) =>
          sumsOf(
            cid,
            groupBounds[i] + at,
            `slice ${groupBounds[i] + at}'s sums`,
          ),
      );
      const total = encodeSliceScreenSums(
        addScreenSums(slices.map((s) => s.sums)),
      );
      const named = await published(shards.groups[i], sumsBytes, k + i);
      if (!equalBytes(total, named)) {
        throw new ManifestRefused(
          "slice-mismatch",
          `group ${i}'s sums are not the total of its slices' sums`,
        );
      }
    };
    const checked = new Set(own.keys());
    for (
      const i of producers === null ? [] : groupsOf(producers, this.#o.self)
    ) {
      checked.add(k + i);
      try {
        await checkGroup(i);
      } catch (err) {
        if (err instanceof ManifestRefused && err.code === "slice-mismatch") {
          await this.#o.fault?.(m, k + i).catch(() => {});
        }
        throw err;
      }
    }
    // A few at a time: a peer's connection takes a few streams of a
    // protocol at once.
    const groups = await mapAtMost(
      shards.groups,
      BLOCKS_AT_ONCE,
      async (cid, i) => (await sumsOf(cid, k + i, `group ${i}'s sums`)).sums,
    );
    const updateBytes = await mapAtMost(
      shards.update,
      BLOCKS_AT_ONCE,
      (cid, j) =>
        published(
          cid,
          encodedByteLength(bounds[j + 1] - bounds[j], {
            bits: BITS_FOR_COMPRESSION[spec.compression.format],
            blockSize: spec.compression.blockSize,
          }),
          j,
        ),
    );
    const update = updateBytes.map((bytes, j) => {
      try {
        return decodeUpdateSlice(spec, bytes, bounds[j + 1] - bounds[j]);
      } catch (err) {
        return malformed(`update slice ${j}`, err);
      }
    });
    const shares = seen.map((d) => claimedShare(spec, d.tokens));
    const { excluded, norms } = screenSlices(
      seen.map((d, i) => ({
        peer: d.peer,
        share: shares[i],
        sums: groups.map((g) => g.sums[i]),
      })),
      groups.map((g) => g.centerNorm2),
    );
    const misscreened = screenRefusal(screened, excluded);
    if (misscreened) throw ManifestRefused.of(misscreened);
    const out = new Set(excluded.map((e) => e.peer));
    // Its own slices count among those it checks, the rest drawn where the
    // leader cannot know.
    const recompute = async (j: number) => {
      const values = await Promise.all(seen.map((d) =>
        usable(
          d.peer,
          () => this.#o.slice(d, [d.peer, m.peer], k, j),
        )
      ));
      const mine = encodeSliceScreenSums(
        sliceScreenSums(seen.map((d, i) => ({
          peer: d.peer,
          share: shares[i],
          delta: values[i],
        }))),
      );
      const named = await sumsOf(shards.sums[j], j, `slice ${j}'s sums`);
      if (!equalBytes(mine, named.bytes)) {
        throw new ManifestRefused(
          "slice-mismatch",
          `slice ${j}'s screen sums differ from those recomputed`,
        );
      }
      const slice = encodeQuantized(updateSlice(
        spec,
        seen.flatMap((d, i) =>
          out.has(d.peer) ? [] : [{
            peer: d.peer,
            tokens: d.tokens,
            delta: values[i],
            norm: norms.get(d.peer)!,
          }]
        ),
      ));
      if (!equalBytes(slice, updateBytes[j])) {
        throw new ManifestRefused(
          "slice-mismatch",
          `update slice ${j} differs from the one recomputed`,
        );
      }
    };
    const draw = crypto.getRandomValues(new Uint8Array(16)).join(".");
    for (const j of slicesToRecompute(draw, m.peer, k, new Set(own.keys()))) {
      checked.add(j);
      try {
        await recompute(j);
      } catch (err) {
        // Both its producers may have lied with the leader: this peer's
        // draw is then the only check, and the notice makes it everyone's.
        if (err instanceof ManifestRefused && err.code === "slice-mismatch") {
          await this.#o.fault?.(m, j).catch(() => {});
        }
        throw err;
      }
    }
    if (parts !== null) {
      await this.#faulted(
        m,
        parts,
        checked,
        (j) => j < k ? recompute(j) : checkGroup(j - k),
        witness.faultsBy,
      );
    }
    return encodeRoundCheckpoint(
      checkpointOfUpdate(
        spec,
        held.ckpt,
        held.cid,
        updateOfSlices(bounds, update),
      ),
    );
  }

  /**
   * Recomputes the parts of `m` (slices, groups of sums: `SliceFaultNotice`)
   * a fault notice heard says differ (protocol/round/fault_notices.ts, with
   * `parts` who is heard on each), besides those `checked`, until the
   * notices are in (`faultsBy`): one honest producer, or one verifier that
   * drew the slice, so has every verifier refuse a tampered part, not only
   * the few that checked it. A notice about a part found as `m` names it,
   * recomputed or checked already, counts against its sender, who is not
   * heard again.
   */
  async #faulted(
    m: ManifestAnnounce,
    parts: readonly (readonly string[])[],
    checked: Set<number>,
    recompute: (j: number) => Promise<void>,
    faultsBy: number,
  ): Promise<void> {
    const falseOf = (j: number, by: readonly string[]) => {
      for (const p of by) {
        this.#discredited.add(p);
        this.#o.falseFault?.(m, j, p);
      }
    };
    for (;;) {
      const heard = heardFaults(
        this.#o.faults?.(m.manifest) ?? new Map(),
        parts,
        this.#discredited,
      );
      for (const { slice: j, by } of heard) {
        if (checked.has(j)) {
          falseOf(j, by);
          continue;
        }
        checked.add(j);
        try {
          await recompute(j);
        } catch (err) {
          if (err instanceof ManifestRefused && err.code === "slice-mismatch") {
            throw new ManifestRefused(
              "slice-mismatch",
              `${err.message}, as ${by.join(", ")} said in a fault notice`,
            );
          }
          throw err;
        }
        falseOf(j, by);
      }
      if (heard.length === 0) {
        if (Date.now() >= faultsBy) return;
        await new Promise((r) => setTimeout(r, POLL_MS));
      }
    }
  }

  /**
   * Waits until `m`'s leader amends it with the `owed` deltas (a later
   * manifest of its for the round that lists each, the `unserved` ones
   * otherwise than as unserved), then throws a refusal that blames no one
   * (the amendment is checked on its own); without one by the witness's
   * `amendBy`, a refusal that blames it (censorship.ts, rules 3 and 4).
   */
  async #amendment(
    m: ManifestAnnounce,
    owed: Owed,
    witness: Witness,
  ): Promise<never> {
    // `m` itself never lists what it owes: any manifest of its leader's
    // for the round that does is an amendment.
    const leads = () => this.#leads.get(`${m.round} ${m.parent} ${m.peer}`);
    for (;;) {
      if (isAmended(leads() ?? [], owed)) {
        throw ManifestRefused.of(supersededRefusal(owed));
      }
      if (Date.now() >= witness.amendBy) break;
      await new Promise((r) => setTimeout(r, POLL_MS));
    }
    throw ManifestRefused.of(unamendedRefusal(owed, witness.steadySince()));
  }

  /**
   * The round's announcements, waiting a little for any that `manifest`
   * lists and this peer has not seen yet: gossip reaches peers at
   * different times and a missed one comes again within 2 s.
   */
  async #announcing(
    manifest: RoundManifest,
    witness: Witness,
  ): Promise<readonly DeltaAnnounce[]> {
    const listed = [
      ...manifest.contributions.map((c) => c.peer),
      ...manifest.excluded.map((e) => e.peer),
    ];
    const deadline = Date.now() + ANNOUNCE_WAIT_MS;
    let announced = witness.announced;
    while (
      listed.some((p) => !announced.some((d) => d.peer === p)) &&
      Date.now() < deadline
    ) {
      await new Promise((r) => setTimeout(r, POLL_MS));
      announced = witness.current();
    }
    return announced;
  }

  /**
   * Whether the manifest that exclusion `e` cites was announced by its
   * author for this round and refused by this peer, blaming it; waits for
   * this peer's own check of it (the announcement may still be on its way).
   * Throws a refusal that blames no one when there is no verdict to go by.
   */
  async #refutes(
    e: RoundManifest["excluded"][number],
    m: ManifestAnnounce,
  ): Promise<boolean> {
    const key = `${e.evidence} ${e.peer}`;
    const deadline = Date.now() + ANNOUNCE_WAIT_MS;
    for (;;) {
      await this.#pending.get(key)?.catch(() => {});
      const verdict = this.#verdicts.get(key);
      if (verdict) return verdict.blamed && verdict.round === m.round;
      if (Date.now() >= deadline) {
        throw new ManifestRefused(
          "cannot-check",
          `manifest excludes ${e.peer} for manifest ${e.evidence}, which this peer has not checked`,
        );
      }
      await new Promise((r) => setTimeout(r, POLL_MS));
    }
  }
}
