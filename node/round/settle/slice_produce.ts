/**
 * A peer's part in a round led by slices (protocol/round/slice_plan.ts):
 * for a plan its round's leader announces, it computes the slices it is
 * drawn to produce (or backs, when the plan asks) from that slice of
 * every listed delta: first each slice's screen sums, then, once the plan
 * names every slice's agreed sums and their groups' totals, its update
 * slices from the screen of those totals, each stored here (its producers
 * serve it) and announced. The leader computes the slices it produces,
 * and any it takes over, through the same methods.
 *
 * @module
 */
import type { CID } from "../../../protocol/content/cid.ts";
import { cidToString } from "../../../protocol/content/cid.ts";
import {
  addScreenSums,
  decodeSliceScreenSums,
  encodeSliceScreenSums,
  type SliceScreenSums,
  sliceScreenSums,
  sumGroupBounds,
} from "../../../protocol/aggregation/slice_screen.ts";
import { encodeQuantized } from "../../../protocol/aggregation/quantized_container.ts";
import type { QuantizedDelta } from "../../../protocol/aggregation/quantize.ts";
import { claimedShare } from "../../../protocol/audit/inner_steps.ts";
import type {
  SliceAnnounce,
  SlicePlanAnnounce,
} from "../../../protocol/messages/messages.ts";
import {
  groupsOf,
  MAX_PLAN_MESSAGES,
  plannedSlices,
  producedBy,
  producersToAsk,
  servingSplits,
  sliceBackups,
  sliceProducers,
  sumGroupMembers,
} from "../../../protocol/round/slice_plan.ts";
import {
  screenOfGroups,
  screenOfSums,
  type ShardedScreen,
  updateSlice,
} from "../../../protocol/round/slice_update.ts";
import type { JobSpec } from "../../../protocol/spec/job_spec.ts";
import type { DeltaRef } from "../services/delta_reader.ts";
import type { RoundPublisher } from "../services/publisher.ts";
import { mapAtMost } from "../services/at_most.ts";

/** What a plan names: its round, its leader and pass, its deltas. */
export type Plan = Pick<
  SlicePlanAnnounce,
  "job" | "round" | "parent" | "peer" | "pass" | "deltas"
>;

/** A plan's key: its round, parent, leader and pass. */
export function planKey(
  p: Pick<Plan, "round" | "parent" | "pass"> & { leader: string },
): string {
  return `${p.round} ${p.parent} ${p.leader} ${p.pass}`;
}

/** A plan's deltas as one string, to tell two plans' apart. */
function deltasKey(deltas: readonly { peer: string; delta: string }[]): string {
  return deltas.map((d) => `${d.peer}:${d.delta}`).join(",");
}

/**
 * A plan's key with its deltas: a leader sending two plans of one pass
 * (a liar) gets each worked on as itself, not from the other's cache.
 */
function contentKey(plan: Plan): string {
  return `${planKey({ ...plan, leader: plan.peer })} ${deltasKey(plan.deltas)}`;
}

/** Plans whose slices' values are kept (a round's passes, and the last's). */
const KEEP_PLANS = 4;

/** Slices of deltas whose reads are remembered: a few rounds' worth. */
const KEEP_READS = 65_536;

function readKey(
  round: number,
  parent: string,
  leader: string,
  k: number,
  j: number,
  peer: string,
): string {
  return `${round} ${parent} ${leader} ${k} ${j} ${peer}`;
}

/** Deltas whose slice was read at once. */
const READS_AT_ONCE = 4;

/** One or more of a plan's deltas whose slice could not be read. */
export class SliceReadError extends Error {
  constructor(
    /** The deltas, with what went wrong reading each. */
    readonly failed: readonly { peer: string; err: unknown }[],
    /** The plan's slices, k. */
    readonly slices: number,
    /** The slice not read. */
    readonly slice: number,
  ) {
    super(
      `Cannot read the slice of ${failed.map((f) => f.peer).join(", ")}: ${
        (failed[0].err as Error).message
      }`,
    );
    this.name = "SliceReadError";
  }
}

/** What a {@linkcode SliceProducer} uses. */
export interface SliceProducerOptions {
  spec: JobSpec;
  /** This peer's id. */
  self: string;
  /** The model's parameters. */
  parameterCount: number;
  /**
   * Slice `j` of `k` of a delta (its root and that slice's pieces), from
   * `providers`.
   */
  readSlice(
    d: DeltaRef,
    k: number,
    j: number,
    providers: string[],
  ): Promise<Float32Array>;
  /** A block of at most `maxBytes`, fetched from `providers` if need be. */
  block(
    cid: string,
    maxBytes: number,
    providers: string[],
  ): Promise<Uint8Array>;
  /** Stores a block. */
  store(bytes: Uint8Array): Promise<CID>;
  publisher: Pick<RoundPublisher, "header" | "publish">;
  /** Counts a slice step computed here (a slice's sums or update). */
  computed(): void;
  /**
   * Whether a plan is one to work on: for the round under way, from a
   * peer that may lead it.
   */
  current(plan: SlicePlanAnnounce): boolean;
  log(line: string): void;
}

/** Computes and announces the slices of plans this peer produces. */
export class SliceProducer {
  readonly #o: SliceProducerOptions;
  /** Plan messages taken per round, parent and leader. */
  readonly #planned = new Map<string, number>();
  /** Per plan and slice count, the producers of each slice. */
  readonly #producers = new Map<string, string[][]>();
  /** Per plan, per slice: that slice of every listed delta, in order. */
  readonly #values = new Map<string, Map<number, Promise<Float32Array[]>>>();
  /**
   * The slices announced with an update, per round, parent and leader:
   * for the latest plan's deltas, each slice's sums' and update's CIDs.
   */
  readonly #made = new Map<
    string,
    { deltas: string; slices: Map<number, { sums: string; update: string }> }
  >();

  /** The slices of deltas read here, by plan (readKey), the latest kept. */
  readonly #readHere = new Set<string>();

  constructor(o: SliceProducerOptions) {
    this.#o = o;
  }

  /**
   * Works on a plan its leader announced: announces the sums of each
   * slice this peer produces, or, when the plan names every slice's sums,
   * their update slices. Nothing when it produces none, or cannot read
   * a slice (its leader then computes it).
   */
  async onPlan(plan: SlicePlanAnnounce): Promise<void> {
    const { self, parameterCount, publisher } = this.#o;
    if (!this.#o.current(plan) || !this.#count(plan)) return;
    const k = plannedSlices(plan.deltas.length, parameterCount);
    if (k === 0 || (plan.sums.length !== 0 && plan.sums.length !== k)) return;
    const peers = plan.deltas.map((d) => d.peer);
    const producers = this.#producersOf(plan, k);
    // A plan naming `extra` slices asks their backups, for this step:
    // their producers have already answered it.
    if (plan.extra.some((j) => j >= k)) return;
    const backups = sliceBackups(
      plan.parent,
      plan.peer,
      plan.extra,
      peers,
      producers,
    );
    const mine = plan.extra.length === 0
      ? producedBy(producers, self)
      : plan.extra.filter((_, i) => backups[i] === self);
    if (mine.length === 0) return;
    const screen = plan.sums.length === 0
      ? null
      : await this.#groupScreen(plan, k, producers);
    if (screen === null && plan.sums.length !== 0) return;
    const made = this.#madeFor(plan);
    for (const j of mine) {
      const announce: SliceAnnounce = {
        ...publisher.header("slice", plan.round, plan.parent),
        leader: plan.peer,
        pass: plan.pass,
        slice: j,
        sums: screen === null
          ? (await this.sums(plan, k, j)).cid
          : plan.sums[j],
        update: screen === null ? "" : (await this.update(plan, screen, j)).cid,
      };
      if (announce.update !== "") {
        made.set(j, { sums: announce.sums, update: announce.update });
      }
      await publisher.publish(announce);
    }
  }

  /**
   * The slices this peer announced with an update for the latest plan of
   * `leader`'s in round `round` after `parent`, by slice; none unless that
   * plan listed exactly `deltas` (by peer and CID, in order).
   */
  produced(
    round: number,
    parent: string,
    leader: string,
    deltas: readonly { peer: string; delta: string }[],
  ): ReadonlyMap<number, { sums: string; update: string }> {
    const made = this.#made.get(`${round} ${parent} ${leader}`);
    return made?.deltas === deltasKey(deltas) ? made.slices : new Map();
  }

  /**
   * The producers of `plan`'s `k` slices (sliceProducers), drawn once a
   * plan: k rankings of every peer, a million hashes at a thousand.
   */
  #producersOf(plan: Plan, k: number): string[][] {
    const key = `${contentKey(plan)} ${k}`;
    let producers = this.#producers.get(key);
    if (!producers) {
      producers = sliceProducers(
        plan.parent,
        plan.peer,
        k,
        plan.deltas.map((d) => d.peer),
      );
      this.#producers.set(key, producers);
      if (this.#producers.size > KEEP_PLANS) {
        this.#producers.delete(this.#producers.keys().next().value!);
      }
    }
    return producers;
  }

  /** Where the slices announced for `plan` are kept (a new plan's afresh). */
  #madeFor(plan: Plan): Map<number, { sums: string; update: string }> {
    const key = `${plan.round} ${plan.parent} ${plan.peer}`;
    const deltas = deltasKey(plan.deltas);
    let made = this.#made.get(key);
    if (made?.deltas !== deltas) {
      this.#made.delete(key);
      this.#made.set(key, made = { deltas, slices: new Map() });
      if (this.#made.size > KEEP_PLANS) {
        this.#made.delete(this.#made.keys().next().value!);
      }
    }
    return made.slices;
  }

  /**
   * Counts a plan message of its leader's in its round; false past
   * `MAX_PLAN_MESSAGES` of them (kept for the last few rounds).
   */
  #count(plan: SlicePlanAnnounce): boolean {
    const key = `${plan.round} ${plan.parent} ${plan.peer}`;
    const n = (this.#planned.get(key) ?? 0) + 1;
    this.#planned.delete(key);
    this.#planned.set(key, n);
    if (this.#planned.size > KEEP_PLANS * 4) {
      this.#planned.delete(this.#planned.keys().next().value!);
    }
    return n <= MAX_PLAN_MESSAGES;
  }

  /** Slice `j`'s screen sums over the plan's deltas, stored. */
  async sums(
    plan: Plan,
    k: number,
    j: number,
  ): Promise<{ cid: string; sums: SliceScreenSums }> {
    const values = await this.#read(plan, k, j);
    const sums = sliceScreenSums(plan.deltas.map((d, i) => ({
      peer: d.peer,
      share: claimedShare(this.#o.spec, d.tokens),
      delta: values[i],
    })));
    this.#o.computed();
    return { cid: await this.storeSums(sums), sums };
  }

  /** Stores screen sums (a slice's or a group's); their CID. */
  async storeSums(sums: SliceScreenSums): Promise<string> {
    return cidToString(await this.#o.store(encodeSliceScreenSums(sums)));
  }

  /**
   * The screen of a plan naming its sums and their groups' totals: the
   * totals of the groups this peer is a member of added here from their
   * slices' sums (from each slice's producers, who hold them, then the
   * leader) and stored, so that it serves them, then the others' fetched
   * from their members and the leader. Null, with nothing produced, when
   * a total added here is not the plan's: its leader lied, and this
   * peer's verdict on the manifest will say so.
   */
  async #groupScreen(
    plan: SlicePlanAnnounce,
    k: number,
    producers: readonly (readonly string[])[],
  ): Promise<ShardedScreen | null> {
    const { self } = this.#o;
    const n = plan.deltas.length;
    const bounds = sumGroupBounds(k);
    if (plan.groups.length !== bounds.length - 1) return null;
    const members = sumGroupMembers(producers);
    const own = groupsOf(producers, self);
    const splits = servingSplits(producers, n);
    const places = new Map(plan.deltas.map((d, i) => [d.peer, i]));
    const totals = new Map<number, SliceScreenSums>();
    for (const i of own) {
      const parts = await mapAtMost(
        plan.sums.slice(bounds[i], bounds[i + 1]),
        READS_AT_ONCE,
        async (cid, at) => {
          const j = bounds[i] + at;
          const bytes = await this.#o.block(cid, 16 + 16 * n, [
            ...producersToAsk(self, j, producers[j], splits[j], places)
              .filter((p) => p !== self),
            plan.peer,
          ]);
          return decodeSliceScreenSums(bytes, n);
        },
      );
      const total = addScreenSums(parts);
      if (await this.storeSums(total) !== plan.groups[i]) {
        this.#o.log(
          `round ${plan.round}: group ${i} of the sums in ${plan.peer}'s plan is not their total; no update slices for it`,
        );
        return null;
      }
      totals.set(i, total);
    }
    const groups = await mapAtMost(
      plan.groups,
      READS_AT_ONCE,
      async (cid, i) =>
        totals.get(i) ?? decodeSliceScreenSums(
          await this.#o.block(cid, 16 + 16 * n, [
            ...producersToAsk(self, k + i, members[i]),
            plan.peer,
          ]),
          n,
        ),
    );
    return screenOfGroups(this.#shares(plan), this.#o.parameterCount, groups);
  }

  /** The plan's deltas with the shares their tokens claim. */
  #shares(plan: Plan): { peer: string; share: number }[] {
    return plan.deltas.map((d) => ({
      peer: d.peer,
      share: claimedShare(this.#o.spec, d.tokens),
    }));
  }

  /** The plan's screen from every slice's sums, decoded, in slice order. */
  screenOf(plan: Plan, sums: readonly SliceScreenSums[]): ShardedScreen {
    return screenOfSums(this.#shares(plan), this.#o.parameterCount, sums);
  }

  /** Slice `j` of the update under `screen`, stored. */
  async update(
    plan: Plan,
    screen: ShardedScreen,
    j: number,
  ): Promise<{ cid: string; slice: QuantizedDelta }> {
    const values = await this.#read(plan, screen.slices, j);
    const out = new Set(screen.excluded.map((e) => e.peer));
    const slice = updateSlice(
      this.#o.spec,
      plan.deltas.flatMap((d, i) =>
        out.has(d.peer) ? [] : [{
          peer: d.peer,
          tokens: d.tokens,
          delta: values[i],
          norm: screen.norms.get(d.peer)!,
        }]
      ),
    );
    this.#o.computed();
    const cid = cidToString(await this.#o.store(encodeQuantized(slice)));
    return { cid, slice };
  }

  /**
   * Slice `j` of `k` of every delta of `plan`, read once per plan; a
   * {@linkcode SliceReadError} naming those that could not be read.
   */
  #read(plan: Plan, k: number, j: number): Promise<Float32Array[]> {
    const key = contentKey(plan);
    let slices = this.#values.get(key);
    if (!slices) {
      this.#values.set(key, slices = new Map());
      if (this.#values.size > KEEP_PLANS) {
        this.#values.delete(this.#values.keys().next().value!);
      }
    }
    let values = slices.get(j);
    if (!values) {
      values = this.#readAll(plan, k, j);
      slices.set(j, values);
      // A failed read is tried afresh by whoever asks next.
      values.catch(() => slices.delete(j));
    }
    return values;
  }

  async #readAll(plan: Plan, k: number, j: number): Promise<Float32Array[]> {
    // From each delta's author, then the slice's other producers, who hold
    // the pieces once they have read them: a delta withheld from a backup
    // or the leader alone is still read where its producers read it.
    const producers = this.#producersOf(plan, k)[j]
      .filter((p) => p !== this.#o.self);
    const got = await mapAtMost(
      plan.deltas,
      READS_AT_ONCE,
      (d) =>
        this.#o.readSlice(
          { ...plan, peer: d.peer, delta: d.delta },
          k,
          j,
          [d.peer, ...producers.filter((p) => p !== d.peer)],
        )
          .then(
            (values) => ({ values, err: null }),
            (err: unknown) => ({ values: null, err }),
          ),
    );
    const failed = got.flatMap((g, i) =>
      g.values === null ? [{ peer: plan.deltas[i].peer, err: g.err }] : []
    );
    for (const [i, g] of got.entries()) {
      if (g.values !== null) this.#noteRead(plan, k, j, plan.deltas[i].peer);
    }
    if (failed.length > 0) throw new SliceReadError(failed, k, j);
    return got.map((g) => g.values!);
  }

  #noteRead(plan: Plan, k: number, j: number, peer: string): void {
    this.#readHere.add(readKey(plan.round, plan.parent, plan.peer, k, j, peer));
    if (this.#readHere.size > KEEP_READS) {
      this.#readHere.delete(this.#readHere.values().next().value!);
    }
  }

  /**
   * Whether this peer read (and holds the pieces of) slice `j` of `k` of
   * `peer`'s delta for a plan `leader` led round `round` after `parent`
   * by: an `unserved` exclusion naming that slice, its leader could have
   * read here (manifest_check.ts).
   */
  readSliceOf(
    round: number,
    parent: string,
    leader: string,
    k: number,
    j: number,
    peer: string,
  ): boolean {
    return this.#readHere.has(readKey(round, parent, leader, k, j, peer));
  }
}
