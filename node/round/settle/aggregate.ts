/**
 * The leader's phase of a round: fetch and read the announced deltas,
 * screen them, combine the rest into C(r+1) and write the manifest that
 * lists every delta, aggregated or excluded with its reason (`unserved`
 * for one it could not fetch in its collect window). The manifest waits
 * until its latest delta is `settleMs` old and takes in deltas that arrive
 * meanwhile, up to the moment it is handed back for publishing, so
 * verifiers find it neither hasty nor short of a delta they saw well
 * before it (protocol/round/censorship.ts).
 *
 * Once published, the leader holds its commit (`commitHoldMs`) and amends
 * the manifest with what comes in that time: a delta announced too late
 * for it, which a verifier may have got just before the manifest, and an
 * `unserved` delta it can now fetch from a verifier that held it. Its
 * verifiers wait for that amendment rather than refuse.
 *
 * @module
 */
import { NothingToAggregateError } from "../services/failures.ts";
import { type CID, cidToString } from "../../../protocol/content/cid.ts";
import { MAX_AMENDMENTS } from "../../../protocol/round/censorship.ts";
import {
  censorGraceMs,
  commitHoldMs,
} from "../../../protocol/round/round_timing.ts";
import {
  amendStep,
  nextPass,
  settleWaitMs,
} from "../../../protocol/round/leader_rules.ts";
import { partitionDeltas } from "../../../protocol/aggregation/delta_screen.ts";
import { claimedShare } from "../../../protocol/audit/inner_steps.ts";
import { manifestContribution } from "../../../protocol/round/contribution.ts";
import { isSharded, type JobSpec } from "../../../protocol/spec/job_spec.ts";
import type {
  DeltaAnnounce,
  ManifestAnnounce,
} from "../../../protocol/messages/messages.ts";
import { comparePeerIds } from "../../../protocol/peers/peer_table.ts";
import {
  CHECKPOINT_CODEC,
  encodeRoundCheckpoint,
  type RoundCheckpoint,
} from "../../../protocol/round/round_checkpoint.ts";
import type {
  RoundAction,
  RoundEvent,
  RoundState,
} from "../../../protocol/round/round_state.ts";
import { encodeManifest } from "../../../protocol/codec/manifest_codec.ts";
import {
  type ExclusionReason,
  MANIFEST_VERSION,
  type ManifestShards,
  type RoundManifest,
  unservedEvidence,
  unservedSlice,
} from "../../../protocol/round/round_manifest.ts";
import {
  checkpointOfUpdate,
  nextCheckpoint,
} from "../../../protocol/round/round_update.ts";
import {
  screenSharded,
  type ShardedScreen,
  updateOfSlices,
  updateSlices,
} from "../../../protocol/round/slice_update.ts";
import { encodeSliceScreenSums } from "../../../protocol/aggregation/slice_screen.ts";
import { encodeQuantized } from "../../../protocol/aggregation/quantized_container.ts";
import type { Attester } from "./attest.ts";
import type { Gathered } from "./slice_gather.ts";
import { type Plan, SliceReadError } from "./slice_produce.ts";
import { plannedSlices } from "../../../protocol/round/slice_plan.ts";
import { MAX_PLAN_PASSES } from "../../../protocol/messages/messages.ts";
import { HONEST, type RoundBehaviour } from "../services/behaviour.ts";
import type { Held } from "./sync.ts";
import type { RoundPublisher } from "../services/publisher.ts";

/** How often a leader looks for what to amend its manifest with, ms. */
const LOOK_MS = 100;

/** What a leader's aggregation uses. */
export interface LeaderAggregationOptions {
  jobId: string;
  spec: JobSpec;
  /** This peer's id, the manifest's leader. */
  self: string;
  /** The machine's current state (deltas as they arrive, when). */
  state(): RoundState;
  behaviour: RoundBehaviour;
  /** The values of an announced delta (fetched from its author). */
  delta(d: DeltaAnnounce): Promise<Float32Array>;
  /** CID of a manifest `peer` announced for `round` that this peer refused. */
  evidenceAgainst(round: number, peer: string): string | undefined;
  /** Stores a block. */
  store(bytes: Uint8Array, codec?: number): Promise<CID>;
  /**
   * Records a delta left out: unreadable, unserved, screened out, or its
   * leader's.
   */
  refuse(d: DeltaAnnounce, reason: string, err?: unknown): void;
  /** The refusal reason for an error fetching or reading a delta. */
  reasonOf(err: unknown): string;
  /** Resolves after `ms`, or rejects when the round work stops. */
  sleep(ms: number): Promise<void>;
  /**
   * In a job sharded by slices: gathers the `k` slices of a plan this
   * peer leads as rank `rank` from their producers (slice_gather.ts).
   * Absent, or for a round no plan fits, the leader reads every delta.
   */
  slices?: (plan: Plan, rank: number, k: number) => Promise<Gathered>;
  /**
   * In a job sharded by slices: slice `j` of `k` of an announced delta,
   * from any of the round's peers (the slice an `unserved` exclusion
   * names, which its producers may serve).
   */
  sliceOf?(d: DeltaAnnounce, k: number, j: number): Promise<Float32Array>;
}

/** What the leader's whole phase uses: the aggregation's, and more. */
export interface LeadOptions extends LeaderAggregationOptions {
  publisher: Pick<RoundPublisher, "header" | "publish">;
  attester: Pick<Attester, "attestation">;
  /** Hands an event back to the machine. */
  feed(event: RoundEvent): void;
  /** Keeps a manifest for attesting and committing. */
  remember(cid: string, manifest: RoundManifest): void;
}

/**
 * The leader's phase: aggregates round `a.round` from C(r) = `held`,
 * announces the manifest (sent again until the round ends) and vouches
 * for it like any verifier; then, through its commit hold, amends it with
 * what came (see the module doc), at most {@linkcode MAX_AMENDMENTS}
 * times. Throws when no delta can be aggregated.
 */
export async function lead(
  o: LeadOptions,
  a: Extract<RoundAction, { type: "aggregate" }>,
  held: Held,
): Promise<void> {
  const plans = { made: 0 };
  let built = await aggregateRound(o, a, held, plans);
  for (let amendments = 0;; amendments++) {
    const unserved = built.manifest.excluded.some((e) =>
      e.reason === "unserved"
    );
    const holdMs = commitHoldMs(o.state().config, unserved);
    await publish(o, a, built, holdMs);
    if (amendments === MAX_AMENDMENTS) return;
    const late = await toAmendWith(o, a, built, holdMs);
    if (late === null) return;
    o.feed({ type: "amending" });
    // Committing already: the manifest stands.
    if (!o.state().aggregating) return;
    built = await aggregateRound(
      o,
      { ...a, contributions: [...built.considered, ...late] },
      held,
      plans,
    );
  }
}

/** Announces `built` (its commit held `holdMs`) and vouches for it. */
async function publish(
  o: LeadOptions,
  a: Extract<RoundAction, { type: "aggregate" }>,
  { manifest, manifestCid, checkpoint }: BuiltManifest,
  holdMs: number,
): Promise<void> {
  o.remember(manifestCid, manifest);
  const announce: ManifestAnnounce = {
    ...o.publisher.header("manifest", a.round, a.parent),
    manifest: manifestCid,
    checkpoint,
    rank: a.rank,
  };
  o.feed({
    type: "aggregated",
    manifest: manifestCid,
    checkpoint,
    rank: a.rank,
    holdMs,
  });
  await o.publisher.publish(announce, { repeat: true });
  o.feed({
    type: "attestation",
    msg: await o.attester.attestation(manifestCid, manifest),
  });
}

/**
 * What the leader of `built` amends it with, found within `holdMs` of its
 * publishing: the round's deltas it did not consider (none of them may be
 * left out while a verifier may hold it), or, with none, an empty list
 * when one of its `unserved` deltas could be fetched since (asked again
 * of every peer of the round: one that held it when the manifest came
 * serves it). Null when nothing came in time, or the round moved on.
 */
async function toAmendWith(
  o: LeaderAggregationOptions,
  a: Extract<RoundAction, { type: "aggregate" }>,
  built: BuiltManifest,
  holdMs: number,
): Promise<DeltaAnnounce[] | null> {
  const until = Date.now() + holdMs;
  let served = false;
  for (const e of built.manifest.excluded) {
    if (e.reason !== "unserved") continue;
    const d = built.considered.find((x) => x.peer === e.peer)!;
    // In a round led by slices, the slice it could not read: a producer
    // that read it serves it, and the round is planned again.
    const named = unservedSlice(e.evidence);
    const probe = named !== null && o.sliceOf
      ? o.sliceOf(d, named.slices, named.slice)
      : o.delta(d);
    probe.then(() => served = true, () => {});
  }
  const considered = new Set(built.considered.map((d) => d.peer));
  for (;;) {
    const next = amendStep(
      o.state(),
      a,
      considered,
      served,
      until,
      Date.now(),
      LOOK_MS,
    );
    if (next.kind === "stop") return null;
    if (next.kind === "amend") return [...next.late];
    await o.sleep(next.ms);
  }
}

/** A manifest built and stored, with C(r+1), ready to publish. */
export interface BuiltManifest {
  manifest: RoundManifest;
  manifestCid: string;
  checkpoint: string;
  /** The round's deltas it accounts for: listed, or left out unreadable. */
  considered: readonly DeltaAnnounce[];
}

/** A round's deltas as the leader screened them, sorted by peer. */
interface Screened {
  accepted: { peer: string; d: DeltaAnnounce; delta: Float32Array }[];
  excluded: { d: DeltaAnnounce; reason: ExclusionReason; evidence: string }[];
  /** In a sharded job: the screen, slice by slice, of the deltas read. */
  sharded: ShardedScreen | null;
}

/** A round led by slices, as its producers and leader computed it. */
interface SlicedRound {
  accepted: { peer: string; d: DeltaAnnounce }[];
  excluded: Screened["excluded"];
  gathered: Gathered;
}

/**
 * C(r+1) and the manifest of round `a.round` from C(r) = `held`, both
 * stored (see the module doc). Throws when no delta can be aggregated.
 */
export async function aggregateRound(
  o: LeaderAggregationOptions,
  a: Extract<RoundAction, { type: "aggregate" }>,
  held: Held,
  plans = { made: 0 },
): Promise<BuiltManifest> {
  const fetched = new Map<string, Promise<Float32Array>>();
  const sliced = isSharded(o.spec) && o.slices !== undefined;
  let announced = a.contributions;
  for (let pass = 1;; pass++) {
    // Deltas are read while the leader settles; a plan is made after.
    const read = sliced ? null : await screen(o, announced, fetched);
    const { deltaSeenAt, config } = o.state();
    const wait = settleWaitMs(
      announced.map((d) => d.peer),
      deltaSeenAt,
      config,
      Date.now(),
    );
    if (wait > 0) await o.sleep(o.behaviour.leaderWait(wait));
    const round = read ??
      await screenSliced(o, a, held, announced, fetched, plans);
    const built = await build(o, a, held, round);
    // Building holds the event loop; gossip that came meanwhile is
    // handled now, before the last look for late deltas.
    await o.sleep(o.behaviour.leaderWait(censorGraceMs(o.state().config)));
    const late = nextPass(
      o.state(),
      a.round,
      new Set(announced.map((d) => d.peer)),
      pass,
    );
    if (late === null) {
      for (const e of round.excluded) o.refuse(e.d, e.reason);
      return { ...built, considered: announced };
    }
    announced = [...announced, ...late];
  }
}

/** C(r+1) and its manifest from a screened round, both stored. */
async function build(
  o: LeaderAggregationOptions,
  a: Extract<RoundAction, { type: "aggregate" }>,
  held: Held,
  round: Screened | SlicedRound,
): Promise<Omit<BuiltManifest, "considered">> {
  const { accepted, excluded } = round;
  if (accepted.length === 0) {
    throw new NothingToAggregateError(a.round);
  }
  const { next, shards } = "gathered" in round
    ? await publishGathered(o, held, round.gathered)
    : round.sharded !== null
    ? await publishSlices(o, held, round.sharded, round.accepted)
    : {
      next: o.behaviour.checkpoint(combine(o.spec, held, round.accepted)),
      shards: null,
    };
  const checkpoint = cidToString(
    await o.store(encodeRoundCheckpoint(next), CHECKPOINT_CODEC),
  );
  const manifest: RoundManifest = {
    v: MANIFEST_VERSION,
    job: o.jobId,
    round: a.round,
    parent: a.parent,
    leader: o.self,
    rule: o.spec.aggregation,
    contributions: accepted.map(({ d }) => manifestContribution(o.spec, d)),
    excluded: excluded.map(({ d, reason, evidence }) => ({
      peer: d.peer,
      delta: d.delta,
      reason,
      evidence,
    })),
    checkpoint,
    ...(shards === null ? {} : { shards }),
  };
  const manifestCid = cidToString(await o.store(encodeManifest(manifest)));
  return { manifest, manifestCid, checkpoint };
}

/**
 * A sharded round's slices as its leader publishes them: each slice's
 * screen sums and update slice stored, and C(r+1) from the update.
 */
async function publishSlices(
  o: Pick<LeaderAggregationOptions, "spec" | "store" | "behaviour">,
  held: Held,
  screen: ShardedScreen,
  accepted: Screened["accepted"],
): Promise<{ shards: ManifestShards; next: RoundCheckpoint }> {
  const slices = o.behaviour.update(updateSlices(
    o.spec,
    screen,
    accepted.map(({ d, delta }) => ({ peer: d.peer, tokens: d.tokens, delta })),
  ));
  const cids = async (blocks: Uint8Array[]) => {
    const out: string[] = [];
    for (const block of blocks) out.push(cidToString(await o.store(block)));
    return out;
  };
  return {
    shards: {
      slices: screen.slices,
      sums: await cids(screen.sums.map(encodeSliceScreenSums)),
      groups: await cids(screen.groups.map(encodeSliceScreenSums)),
      update: await cids(slices.map(encodeQuantized)),
      backups: [],
    },
    next: checkpointOfUpdate(
      o.spec,
      held.ckpt,
      held.cid,
      updateOfSlices(screen.bounds, slices),
    ),
  };
}

/**
 * A round led by slices as its leader publishes it: the sums and update
 * slices its producers agreed on (or it computed), and C(r+1) from them.
 */
async function publishGathered(
  o: Pick<LeaderAggregationOptions, "spec" | "store" | "behaviour">,
  held: Held,
  gathered: Gathered,
): Promise<{ shards: ManifestShards; next: RoundCheckpoint }> {
  const slices = o.behaviour.update(gathered.update);
  const update: string[] = [];
  for (const [j, slice] of slices.entries()) {
    // Held here already, as fetched; stored again only if changed.
    update.push(
      slice === gathered.update[j]
        ? gathered.updateCids[j]
        : cidToString(await o.store(encodeQuantized(slice))),
    );
  }
  return {
    shards: {
      slices: gathered.screen.slices,
      sums: gathered.sums,
      groups: gathered.groups,
      update,
      backups: gathered.backups,
    },
    next: checkpointOfUpdate(
      o.spec,
      held.ckpt,
      held.cid,
      updateOfSlices(gathered.screen.bounds, slices),
    ),
  };
}

/**
 * C(r+1) from C(r) = `held` and the accepted deltas, cut into `slices`
 * in a sharded job.
 */
function combine(
  spec: JobSpec,
  held: Held,
  accepted: Screened["accepted"],
  slices?: number,
): RoundCheckpoint {
  return nextCheckpoint({
    spec,
    parent: held.ckpt,
    parentCid: held.cid,
    deltas: accepted.map(({ d, delta }) => ({
      peer: d.peer,
      tokens: d.tokens,
      delta,
    })),
    slices,
  });
}

/** A round's next checkpoint as its leader will build it, stored. */
export interface PreviewedCheckpoint {
  cid: string;
  params: Float32Array;
}

/**
 * C(r+1) of round `a.round` from C(r) = `held`, built as an honest leader
 * builds it from `a.deltas` (the same screen, no waits) and stored: the
 * peer starts the next round from it before the chain commits (see the
 * round machine's `preview`). Throws when no delta can be aggregated.
 */
export async function previewRound(
  o: Pick<
    LeaderAggregationOptions,
    "spec" | "delta" | "evidenceAgainst" | "store"
  >,
  a: Extract<RoundAction, { type: "preview" }>,
  held: Held,
): Promise<PreviewedCheckpoint> {
  const { accepted, sharded } = await screen(
    { ...o, behaviour: HONEST, refuse: () => {}, reasonOf: () => "" },
    a.deltas,
    new Map(),
  );
  if (accepted.length === 0) throw new NothingToAggregateError(a.round);
  const next = combine(o.spec, held, accepted, sharded?.slices);
  const cid = cidToString(
    await o.store(encodeRoundCheckpoint(next), CHECKPOINT_CODEC),
  );
  return { cid, params: next.params };
}

/**
 * The eager estimate of C(r+1) from C(r) = `held`: the outer step with
 * this peer's own announced delta `own` as the round's only one (the same
 * rule and outer optimizer as the leader's, so the outer momentum, the
 * bulk of the step, is exact). A peer trains ahead from it until C(r+1)
 * is known (the round machine's `trainAhead`).
 */
export async function eagerCheckpoint(
  o: Pick<LeaderAggregationOptions, "spec" | "delta">,
  own: DeltaAnnounce,
  held: Held,
): Promise<Float32Array> {
  return nextCheckpoint({
    spec: o.spec,
    parent: held.ckpt,
    parentCid: held.cid,
    deltas: [{ peer: own.peer, tokens: own.tokens, delta: await o.delta(own) }],
  }).params;
}

/**
 * Fetches and reads the `all` deltas (through `fetched`, so a pass reuses
 * the last one's work) and screens them. A delta that could not be
 * fetched in time is excluded as `unserved`; one that cannot be read is
 * refused here and not listed (no verifier can read it either).
 */
async function screen(
  o: Pick<
    LeaderAggregationOptions,
    | "spec"
    | "delta"
    | "evidenceAgainst"
    | "behaviour"
    | "refuse"
    | "reasonOf"
  >,
  all: readonly DeltaAnnounce[],
  fetched: Map<string, Promise<Float32Array>>,
): Promise<Screened> {
  const { refused, rest } = splitRefused(o, all);
  const unserved: Screened["excluded"] = [];
  const read = await Promise.all(rest.map(async (d) => {
    if (!fetched.has(d.delta)) fetched.set(d.delta, o.delta(d));
    try {
      return {
        peer: d.peer,
        d,
        delta: await fetched.get(d.delta)!,
        share: claimedShare(o.spec, d.tokens),
      };
    } catch (err) {
      const reason = o.reasonOf(err);
      if (reason === "unavailable") {
        unserved.push({ d, reason: "unserved", evidence: "" });
      } else o.refuse(d, reason, err);
      return null;
    }
  }));
  // In arrival order, as announced: what a dishonest leader would pick
  // from.
  const ok = o.behaviour.contributions(read.filter((f) => f !== null))
    .sort((x, y) => comparePeerIds(x.peer, y.peer));
  const sharded = isSharded(o.spec) ? screenSharded(ok) : null;
  const { accepted, excluded } = sharded === null
    ? partitionDeltas(ok)
    : { accepted: without(ok, sharded.excluded), excluded: sharded.excluded };
  return {
    sharded,
    accepted,
    excluded: [
      ...excluded.map((e) => ({
        d: ok.find((f) => f.peer === e.peer)!.d,
        reason: e.reason,
        evidence: "",
      })),
      ...refused,
      ...unserved,
    ].sort((x, y) => comparePeerIds(x.d.peer, y.d.peer)),
  };
}

/**
 * A round of a job sharded by slices screened and combined by its slices'
 * producers (slice_gather.ts) under plans this peer leads, one pass each
 * (counted in `plans`): a delta whose slice this peer cannot read is left
 * out (`unserved`, or refused when it cannot be read at all) and the round
 * planned again. A round no plan fits (one slice, too many deltas, or its
 * passes spent) is read whole, as an unsharded leader reads it.
 */
async function screenSliced(
  o: LeaderAggregationOptions,
  a: Extract<RoundAction, { type: "aggregate" }>,
  held: Held,
  all: readonly DeltaAnnounce[],
  fetched: Map<string, Promise<Float32Array>>,
  plans: { made: number },
): Promise<Screened | SlicedRound> {
  const { refused, rest } = splitRefused(o, all);
  const unserved: Screened["excluded"] = [];
  let listed = o.behaviour.contributions(rest)
    .sort((x, y) => comparePeerIds(x.peer, y.peer));
  for (;;) {
    const k = plannedSlices(listed.length, held.ckpt.params.length);
    if (k === 0 || plans.made === MAX_PLAN_PASSES) {
      return await screen(o, all, fetched);
    }
    plans.made++;
    const plan: Plan = {
      job: o.jobId,
      round: a.round,
      parent: a.parent,
      peer: o.self,
      pass: plans.made,
      deltas: listed.map((d) => ({
        peer: d.peer,
        delta: d.delta,
        tokens: d.tokens,
      })),
    };
    let gathered: Gathered;
    try {
      gathered = await o.slices!(plan, a.rank, k);
    } catch (err) {
      if (!(err instanceof SliceReadError)) throw err;
      const failed = new Set(err.failed.map((f) => f.peer));
      for (const { peer, err: why } of err.failed) {
        const d = listed.find((x) => x.peer === peer)!;
        const reason = o.reasonOf(why);
        // The slice not read is named: its producers, who read it where
        // they could, would have served it (manifest_check.ts).
        if (reason === "unavailable") {
          unserved.push({
            d,
            reason: "unserved",
            evidence: unservedEvidence(err.slices, err.slice),
          });
        } else o.refuse(d, reason, why);
      }
      listed = listed.filter((d) => !failed.has(d.peer));
      continue;
    }
    const out = new Map(gathered.screen.excluded.map((e) => [e.peer, e]));
    return {
      gathered,
      accepted: listed.filter((d) => !out.has(d.peer)).map((d) => ({
        peer: d.peer,
        d,
      })),
      excluded: [
        ...listed.flatMap((d) => {
          const e = out.get(d.peer);
          return e ? [{ d, reason: e.reason, evidence: "" }] : [];
        }),
        ...refused,
        ...unserved,
      ].sort((x, y) => comparePeerIds(x.d.peer, y.d.peer)),
    };
  }
}

/**
 * `all` split: a peer whose manifest for this round this peer refused earns
 * nothing in it, its delta listed with that manifest as the reason.
 */
function splitRefused(
  o: Pick<LeaderAggregationOptions, "evidenceAgainst">,
  all: readonly DeltaAnnounce[],
): { refused: Screened["excluded"]; rest: DeltaAnnounce[] } {
  const refused: Screened["excluded"] = [];
  const rest: DeltaAnnounce[] = [];
  for (const d of all) {
    const evidence = o.evidenceAgainst(d.round, d.peer);
    if (evidence === undefined) rest.push(d);
    else refused.push({ d, reason: "refused-manifest", evidence });
  }
  return { refused, rest };
}

/** `all` but those `excluded`, in their order. */
function without<T extends { peer: string }>(
  all: readonly T[],
  excluded: readonly { peer: string }[],
): T[] {
  const out = new Set(excluded.map((e) => e.peer));
  return all.filter((x) => !out.has(x.peer));
}
