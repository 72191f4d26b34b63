/**
 * The leader's side of a round led by slices (protocol/round/slice_plan.ts):
 * it announces its plan, computes the slices it produces, and takes each
 * other slice's sums when its producers agree on them; once every slice's
 * sums are settled, it announces them with each group's total of them
 * (slice_screen.ts `sumGroupBounds`), and takes each slice of the update
 * the same way. A slice its producers disagree on, or leave unannounced
 * for `sliceWaitMs`, goes to its backup as well, and one still unsettled
 * after as long the leader computes itself: a silent or lying producer
 * costs time and a slice's fetch, never the round. A delta withheld from
 * the leader alone counts when the slices' producers read it; one whose
 * slice the leader cannot read when it must compute it ends the plan: the
 * caller leaves it out and plans again.
 *
 * @module
 */
import type { QuantizedDelta } from "../../../protocol/aggregation/quantize.ts";
import { encodedByteLength } from "../../../protocol/aggregation/quantized_container.ts";
import { BITS_FOR_COMPRESSION } from "../../../protocol/aggregation/quantize.ts";
import type { SliceAnnounce } from "../../../protocol/messages/messages.ts";
import type { SliceBackup } from "../../../protocol/round/round_manifest.ts";
import {
  agreedSlices,
  producedBy,
  sliceBackups,
  sliceProducers,
} from "../../../protocol/round/slice_plan.ts";
import { decodeSliceScreenSums } from "../../../protocol/aggregation/slice_screen.ts";
import {
  decodeUpdateSlice,
  type ShardedScreen,
} from "../../../protocol/round/slice_update.ts";
import type { JobSpec } from "../../../protocol/spec/job_spec.ts";
import type { RoundPublisher } from "../services/publisher.ts";
import { mapAtMost } from "../services/at_most.ts";
import { type Plan, planKey, type SliceProducer } from "./slice_produce.ts";

/** Plans whose announced slices are kept. */
const KEEP_PLANS = 16;

/** How often the leader looks for the slices announced, ms. */
const LOOK_MS = 100;

/** Blocks fetched at once. */
const BLOCKS_AT_ONCE = 4;

/** The CIDs producers announced for one plan, by slice, then producer. */
interface PlanReports {
  sums: Map<number, Map<string, string>>;
  update: Map<number, Map<string, string>>;
}

/** Slices producers announced, by plan, until a leader gathers them. */
export class SliceReports {
  readonly #plans = new Map<string, PlanReports>();

  /** Keeps a producer's slice announcement (a member's; checked on use). */
  take(msg: SliceAnnounce): void {
    const reports = this.of(planKey(msg));
    note(reports.sums, msg.slice, msg.peer, msg.sums);
    if (msg.update !== "") {
      note(reports.update, msg.slice, msg.peer, msg.update);
    }
  }

  /** What was announced for the plan `key`, kept as more comes. */
  of(key: string): PlanReports {
    let reports = this.#plans.get(key);
    if (!reports) {
      this.#plans.set(key, reports = { sums: new Map(), update: new Map() });
      if (this.#plans.size > KEEP_PLANS) {
        this.#plans.delete(this.#plans.keys().next().value!);
      }
    }
    return reports;
  }
}

function note(
  by: Map<number, Map<string, string>>,
  slice: number,
  producer: string,
  cid: string,
): void {
  let m = by.get(slice);
  if (!m) by.set(slice, m = new Map());
  m.set(producer, cid);
}

/** What {@linkcode gatherSlices} uses. */
export interface GatherOptions {
  spec: JobSpec;
  /** This peer's id: the plan's leader. */
  self: string;
  producer: Pick<
    SliceProducer,
    "sums" | "storeSums" | "screenOf" | "update"
  >;
  reports: SliceReports;
  publisher: Pick<RoundPublisher, "header" | "publish">;
  /** A block of at most `maxBytes`, fetched from `providers` if need be. */
  block(
    cid: string,
    maxBytes: number,
    providers: string[],
  ): Promise<Uint8Array>;
  /** How long to wait for producers at each step, ms (`sliceWaitMs`). */
  waitMs: number;
  /** Resolves after `ms`, or rejects when the round work stops. */
  sleep(ms: number): Promise<void>;
  log(line: string): void;
}

/** A plan gathered: the screen and the update, slice by slice, stored. */
export interface Gathered {
  screen: ShardedScreen;
  /** CIDs of every slice's sums. */
  sums: string[];
  /** CIDs of each group's total of them. */
  groups: string[];
  /** Every slice of the update, and their CIDs. */
  update: QuantizedDelta[];
  updateCids: string[];
  /** The slices a backup computed, ascending, with their backups. */
  backups: SliceBackup[];
}

/**
 * Gathers the `k` slices of `plan` (led by this peer, as rank `rank`):
 * see the module doc. Throws a `SliceReadError` (slice_produce.ts) naming
 * the deltas whose slice this peer could not read.
 */
export async function gatherSlices(
  o: GatherOptions,
  plan: Plan,
  rank: number,
  k: number,
): Promise<Gathered> {
  const { publisher } = o;
  const peers = plan.deltas.map((d) => d.peer);
  const producers = sliceProducers(plan.parent, o.self, k, peers);
  const reports = o.reports.of(planKey({ ...plan, leader: o.self }));
  const announce = (
    sums: string[],
    groups: string[],
    extra: number[] = [],
  ) =>
    publisher.publish({
      ...publisher.header("plan", plan.round, plan.parent),
      rank,
      pass: plan.pass,
      deltas: plan.deltas,
      sums,
      groups,
      extra,
    });
  const own = producedBy(producers, o.self);
  const backups = (disputed: readonly number[]) =>
    sliceBackups(plan.parent, o.self, disputed, peers, producers);
  await announce([], []);
  const step = { round: plan.round, producers, backups, own };
  const n = plan.deltas.length;
  const sums = await settle(
    o,
    step,
    reports.sums,
    "sums",
    (j) => o.producer.sums(plan, k, j).then((s) => s.cid),
    (extra) => announce([], [], extra),
    (_j, cid, from) =>
      o.block(cid, 16 + 16 * n, from).then((b) => decodeSliceScreenSums(b, n)),
  );
  // Every slice's sums are held here once read; the producers screen from
  // their groups' totals, stored here for those who fetch them early.
  const screen = o.producer.screenOf(plan, sums.values);
  const groups: string[] = [];
  for (const total of screen.groups) {
    groups.push(await o.producer.storeSums(total));
  }
  await announce(sums.cids, groups);
  const bounds = screen.bounds;
  const updateSlice = async (j: number, cid: string, from: string[]) => {
    const span = bounds[j + 1] - bounds[j];
    const bytes = await o.block(
      cid,
      encodedByteLength(span, {
        bits: BITS_FOR_COMPRESSION[o.spec.compression.format],
        blockSize: o.spec.compression.blockSize,
      }),
      from,
    );
    return decodeUpdateSlice(o.spec, bytes, span);
  };
  const update = await settle(
    o,
    step,
    reports.update,
    "update",
    (j) => o.producer.update(plan, screen, j).then((u) => u.cid),
    (extra) => announce(sums.cids, groups, extra),
    updateSlice,
  );
  // A backup that settled a slice's update holds its blocks, one that
  // settled its sums those.
  const backedBy = new Map([...sums.backups, ...update.backups]);
  return {
    screen,
    sums: sums.cids,
    groups,
    update: update.values,
    updateCids: update.cids,
    backups: [...backedBy.values()].sort((a, b) => a.slice - b.slice),
  };
}

/**
 * Each slice's result of one step: the CID two of those asked agree on
 * (its producers, this peer's own slices computed meanwhile); for a slice
 * still unsettled after `o.waitMs`, its backup is asked too (`escalate`,
 * or computed here when this peer is the backup) and given as long; what
 * is still unsettled then, this peer computes (`compute`), which throws a
 * `SliceReadError` for a delta no one served. A peer whose CID differs
 * from the one taken is logged: its slice is not taken.
 */
async function settle<T>(
  o: GatherOptions,
  { round, producers, backups, own }: {
    round: number;
    producers: readonly (readonly string[])[];
    /** The backups of the disputed slices, in order (`sliceBackups`). */
    backups: (disputed: readonly number[]) => (string | null)[];
    own: readonly number[];
  },
  reported: Map<number, Map<string, string>>,
  step: "sums" | "update",
  compute: (j: number) => Promise<string>,
  escalate: (slices: number[]) => Promise<void>,
  /** Fetches and decodes slice `j`'s block `cid` from `from`, or throws. */
  read: (j: number, cid: string, from: string[]) => Promise<T>,
): Promise<{ cids: string[]; values: T[]; backups: Map<number, SliceBackup> }> {
  // This peer's own slices count as one producer's answer: one it cannot
  // read (a delta withheld from it alone) is left to the others.
  const answer = (j: number) =>
    compute(j).then((cid) => note(reported, j, o.self, cid), () => {});
  for (const j of own) answer(j);
  const asked = producers.map((ps) => [...ps]);
  const wait = async () => {
    const until = Date.now() + o.waitMs;
    let agreed = agreedSlices(asked, reported);
    while (agreed.includes(null) && Date.now() < until) {
      await o.sleep(LOOK_MS);
      agreed = agreedSlices(asked, reported);
    }
    return agreed;
  };
  let agreed = await wait();
  const unsettled = agreed.flatMap((cid, j) => cid === null ? [j] : []);
  const drawn = backups(unsettled);
  const disputed = unsettled.filter((_, i) => drawn[i] !== null);
  if (disputed.length > 0) {
    // Every disputed slice is named, this peer's own to back among them:
    // producers draw the backups from the whole list, as here.
    const backup = (j: number) => drawn[unsettled.indexOf(j)]!;
    for (const j of disputed) asked[j].push(backup(j));
    if (disputed.some((j) => backup(j) !== o.self)) await escalate(disputed);
    for (const j of disputed) if (backup(j) === o.self) answer(j);
    o.log(
      `round ${round}: asked the backups of ${disputed.length} of ${producers.length} slices' ${step}, their producers unsettled`,
    );
    agreed = await wait();
  }
  // A block its producers agree on but no one serves, or that does not
  // decode, settles nothing: computed here, or it would fail the round.
  const values = new Map<number, T>();
  const unread = await mapAtMost(
    agreed,
    BLOCKS_AT_ONCE,
    (cid, j) =>
      cid === null ? Promise.resolve(null) : read(
        j,
        cid,
        asked[j].filter((p) => reported.get(j)?.get(p) === cid),
      ).then((value) => {
        values.set(j, value);
        return null;
      }, (err: unknown) => err as Error),
  );
  for (const [j, err] of unread.entries()) {
    if (err === null) continue;
    o.log(
      `round ${round}: slice ${j}'s ${step} ${
        agreed[j]
      }, agreed on, cannot be used: ${err.message}`,
    );
    agreed[j] = null;
  }
  const missing = agreed.flatMap((cid, j) => cid === null ? [j] : []);
  const computed = await mapAtMost(
    missing,
    2,
    async (j) => {
      const cid = await compute(j);
      values.set(j, await read(j, cid, [o.self]));
      return cid;
    },
  );
  for (const [i, j] of missing.entries()) agreed[j] = computed[i];
  for (const [j, cid] of agreed.entries()) {
    for (const [peer, theirs] of reported.get(j) ?? []) {
      if (theirs !== cid && asked[j].includes(peer)) {
        o.log(
          `round ${round}: slice ${j}'s ${step} from ${peer} is not the one taken`,
        );
      }
    }
  }
  if (missing.length > 0) {
    o.log(
      `round ${round}: computed ${missing.length} of ${producers.length} slices' ${step} that their producers left unsettled`,
    );
  }
  // Who holds each slice a producer's answer was not taken for: its backup
  // when that answered as taken, else this peer, which computed it; in
  // place of that producer.
  const backedBy = new Map<number, SliceBackup>();
  for (const [j, cid] of agreed.entries()) {
    const replaces = producers[j].find((p) => reported.get(j)?.get(p) !== cid);
    if (replaces === undefined) continue;
    const backup = asked[j].length > producers[j].length
      ? asked[j][asked[j].length - 1]
      : null;
    const peer = backup !== null && reported.get(j)?.get(backup) === cid
      ? backup
      : o.self;
    backedBy.set(j, { slice: j, peer, replaces });
  }
  return {
    cids: agreed as string[],
    values: agreed.map((_, j) => values.get(j)!),
    backups: backedBy,
  };
}
