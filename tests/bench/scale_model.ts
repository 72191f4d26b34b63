/**
 * The network model of `bench scale`: N peers in one process, each with an
 * upload and a download rate and a one-way latency drawn from a mix of
 * real connections, rounds with churn, slow peers, message loss and a few
 * Byzantine slice leaders, and the bytes every peer moves under today's
 * round (one leader; every peer fetches every delta to recompute the
 * aggregate) or a sharded one (protocol/aggregation/shards.ts: slices,
 * their leaders and their verifiers drawn by the protocol's own rules).
 *
 * What moves is counted exactly, per peer; how long it takes is a phase
 * model: a round is training, then phases in turn, each lasting as long
 * as its busiest peer needs at its link rates (bytes over rate, inflated
 * by loss), plus the latency of its message hops. It is no packet-level
 * simulation: it says what each peer sends and fetches and which link
 * bounds each step, which is what grows, or does not, with N.
 *
 * @module
 */
import { Rng } from "../../kernels/data/rng.ts";
import {
  pieceCount,
  SHARD_MIN_PEERS,
  shardCount,
  sliceLeaders,
  takeOver,
  verifierSlices,
} from "../../protocol/aggregation/shards.ts";
import { rankLeaders } from "../../protocol/peers/assignment.ts";
import { comparePeerIds } from "../../protocol/peers/peer_table.ts";
import {
  producedBy,
  producersToAsk,
  servingSplits,
  sliceBackups,
  sliceHolders,
  sliceProducers,
  sumGroupMembers,
} from "../../protocol/round/slice_plan.ts";
import { sumGroupBounds } from "../../protocol/aggregation/slice_screen.ts";
import { manifestTree } from "../../protocol/round/manifest_spread.ts";
import type { SliceBackup } from "../../protocol/round/round_manifest.ts";

/** One kind of connection in the mix. */
interface LinkKind {
  name: string;
  share: number;
  downMbit: number;
  upMbit: number;
}

/**
 * The connections peers come with: home fiber and cable (asymmetric),
 * cloud and university machines (symmetric), slow DSL.
 */
export const LINK_MIX: readonly LinkKind[] = [
  { name: "fiber", share: 0.35, downMbit: 500, upMbit: 100 },
  { name: "cable", share: 0.25, downMbit: 300, upMbit: 20 },
  { name: "datacenter", share: 0.3, downMbit: 1000, upMbit: 1000 },
  { name: "dsl", share: 0.1, downMbit: 50, upMbit: 10 },
];

/** What a simulated job is. */
export interface ScaleSetup {
  peers: number;
  /** Bytes of one peer's delta. */
  deltaBytes: number;
  /** Bytes of a checkpoint (what a joining peer fetches). */
  checkpointBytes: number;
  /** Parameters of the model (for the slice count). */
  params: number;
  sharded: boolean;
  /**
   * Bits per parameter of a published aggregate slice (sharded), beside
   * one float32 scale per slice.
   */
  aggregateBits: number;
  /** Slices each peer verifies a round (sharded). */
  verifyPerPeer: number;
  /**
   * Peers computing each slice (sharded): 1, one slice leader taken over
   * when it leaves and corrected by its verifiers; 2, the node's rounds
   * led by slices (protocol/round/slice_plan.ts: two producers, a backup
   * for a slice they disagree on, a producer's own slices its checks).
   */
  producers: 1 | 2;
  /** Seconds of local training a round. */
  trainSeconds: number;
  /**
   * Peers that leave during a round, and as many that join, as a fraction.
   * (Slow trainers take smaller shares, as today, so a round's training
   * time does not wait on them: slow links are in the mix.)
   */
  churn: number;
  /** Messages lost and sent again, as a fraction. */
  loss: number;
  /** Slice leaders that publish a wrong aggregate, as a fraction (at least 1). */
  byzantine: number;
  rounds: number;
  seed: number;
}

/** What one round did. */
export interface RoundFigures {
  /** From the round's start to its commit. */
  seconds: number;
  /**
   * How long the slowest joiner took to fetch the checkpoint: it trains
   * from the round after, and no one waits for it.
   */
  catchUpSeconds: number;
  /** Bytes of the round's protocol each peer fetched and sent. */
  download: number[];
  upload: number[];
  /**
   * Bytes of catching up: what peers joining this round fetched (the
   * checkpoint, from many peers at once) and what each peer sent them.
   */
  catchUpDownload: number[];
  catchUpUpload: number[];
  /** Slices (1 unsharded) whose aggregate some verifier recomputed. */
  verifiedFraction: number;
  /** Wrong aggregates published, and caught by a verifier. */
  wrong: number;
  caught: number;
}

interface Peer {
  id: string;
  downBps: number;
  upBps: number;
  latency: number;
}

/** Draws a peer's link from {@linkcode LINK_MIX}. */
function drawPeer(rng: Rng, id: string): Peer {
  let x = rng.nextFloat();
  const kind = LINK_MIX.find((k) => (x -= k.share) < 0) ?? LINK_MIX[0];
  return {
    id,
    downBps: kind.downMbit * 1e6 / 8,
    upBps: kind.upMbit * 1e6 / 8,
    latency: 0.005 + 0.07 * rng.nextFloat(),
  };
}

/** Bytes one peer sends and fetches in a phase. */
class Phase {
  readonly up = new Map<string, number>();
  readonly down = new Map<string, number>();
  /** Sequential message hops the phase waits on (latency). */
  hops = 1;
  /** Seconds waited besides (a timeout). */
  wait = 0;

  move(from: string, to: string, bytes: number): void {
    this.up.set(from, (this.up.get(from) ?? 0) + bytes);
    this.down.set(to, (this.down.get(to) ?? 0) + bytes);
  }

  /** Seconds: the busiest link, inflated by loss, plus the hops. */
  seconds(peers: Map<string, Peer>, loss: number, maxLatency: number): number {
    let busiest = 0;
    for (const [id, bytes] of this.up) {
      busiest = Math.max(busiest, bytes / peers.get(id)!.upBps);
    }
    for (const [id, bytes] of this.down) {
      busiest = Math.max(busiest, bytes / peers.get(id)!.downBps);
    }
    return busiest / (1 - loss) + this.hops * 2 * maxLatency + this.wait;
  }
}

/** Seconds a verifier or a leader waits before it takes a missing peer for gone. */
const MISSING_TIMEOUT_S = 10;
/** Seconds a chain commit takes to be included. */
const COMMIT_S = 2;
/** Peers each peer forwards a published aggregate slice to (gossip fanout). */
const FANOUT = 6;
/**
 * Copies of a gossip message each peer receives, and sends: gossipsub's
 * mesh links (6 a peer) carry it once each, in one direction or the other.
 */
const GOSSIP_COPIES = 3;

/**
 * Bytes of a round's manifest (JSON; protocol/round/round_manifest.ts) over
 * `deltas` deltas cut into `k` slices (0 unsharded): about 215 bytes a
 * contribution, 62 a CID of a slice's sums, update or group.
 */
export function manifestBytes(deltas: number, k: number): number {
  const cids = k === 0 ? 0 : 2 * k + sumGroupBounds(k).length - 1;
  return 400 + 215 * deltas + 62 * cids;
}

/**
 * Bytes of a slice plan (`plan` message) over `deltas` deltas: about 150
 * bytes a delta listed, and once its sums are in, 62 a CID of a slice's
 * sums or a group's total.
 */
export function planBytes(deltas: number, k: number, sums: boolean): number {
  const cids = sums ? k + sumGroupBounds(k).length - 1 : 0;
  return 300 + 150 * deltas + 62 * cids;
}

/**
 * The slices of a round of `peers` contributors: the protocol's
 * (`shardCount`, slices of 0.7 delta, which leave two producers room to
 * back one another up) for the node's design, one a peer for one slice
 * leader a peer (a slice leader leading two would fetch two slices).
 */
export function modelSlices(
  producers: 1 | 2,
  peers: number,
  params: number,
): number {
  if (producers === 2) return shardCount(peers, params);
  return peers < SHARD_MIN_PEERS ? 1 : Math.min(peers, pieceCount(params));
}

/** `count` distinct indices below `n`, drawn from `rng`. */
function sample(rng: Rng, n: number, count: number): number[] {
  const picked = new Set<number>();
  while (picked.size < Math.min(n, count)) picked.add(rng.int(n));
  return [...picked];
}

/** `bytes` to every one of `ids` by gossip, each passing on what it holds. */
function spread(ids: readonly string[], bytes: number): Phase {
  const phase = new Phase();
  for (const [i, p] of ids.entries()) {
    phase.move(ids[(i + 1) % ids.length], p, bytes);
  }
  phase.hops = Math.ceil(Math.log(ids.length) / Math.log(FANOUT));
  return phase;
}

/** Runs `setup.rounds` rounds; one figure set per round. */
export function simulate(setup: ScaleSetup): RoundFigures[] {
  const rng = new Rng(setup.seed);
  let next = 0;
  const fresh = () => drawPeer(rng, `peer-${String(next++).padStart(5, "0")}`);
  let live = Array.from({ length: setup.peers }, fresh);
  let joiners: Peer[] = [];
  const out: RoundFigures[] = [];
  for (let r = 0; r < setup.rounds; r++) {
    const parent = `bafybeiround${r}`;
    const all = new Map([...live, ...joiners].map((p) => [p.id, p]));
    const leaving = new Set(
      sample(rng, live.length, Math.round(setup.churn * live.length))
        .map((i) => live[i].id),
    );
    const contributors = live.filter((p) => !leaving.has(p.id));
    const maxLatency = Math.max(...[...all.values()].map((p) => p.latency));
    const phases: Phase[] = [];
    const joinPhase = new Phase();
    for (const j of joiners) {
      // A joiner fetches the checkpoint from many peers at once.
      for (const p of contributors) {
        joinPhase.move(p.id, j.id, setup.checkpointBytes / contributors.length);
      }
    }
    let verified: number, wrong = 0, caught = 0;
    if (!setup.sharded) {
      const ranked = rankLeaders(parent, live.map((p) => p.id));
      const leaderGone = leaving.has(ranked[0]);
      // Every peer fetches every delta: the leader to combine them, the
      // others to recompute the aggregate.
      const deltas = new Phase();
      for (const from of contributors) {
        for (const to of contributors) {
          if (from !== to) deltas.move(from.id, to.id, setup.deltaBytes);
        }
      }
      phases.push(deltas);
      if (leaderGone) phases.push(timeout());
      verified = 1;
    } else if (setup.producers === 2) {
      ({ verified, wrong, caught } = ledBySlices(parent, contributors, phases));
    } else {
      const k = modelSlices(1, contributors.length, setup.params);
      const ids = contributors.map((p) => p.id);
      const plan = sliceLeaders(parent, k, live.map((p) => p.id));
      const sliceBytes = setup.deltaBytes / k;
      // Leaders that left are taken over (shards.ts): those taking over
      // verify nothing this round.
      const { leaders, takers } = takeOver(parent, plan, leaving, ids);
      const slices = new Phase();
      const takeOvers = new Phase();
      for (const [j, leader] of leaders.entries()) {
        const phase = leader === plan[j][0] ? slices : takeOvers;
        for (const from of ids) {
          if (from !== leader) phase.move(from, leader, sliceBytes);
        }
      }
      phases.push(slices);
      if (takers.size > 0) phases.push(timeout(), takeOvers);
      // Per-slice sums for the screens (16 bytes a delta a slice), to the
      // next slice's leader to combine, and the combined sums (16 bytes a
      // delta) out to every peer by gossip.
      const sums = new Phase();
      sums.hops = 2 + Math.ceil(Math.log(ids.length) / Math.log(FANOUT));
      for (const [j, leader] of leaders.entries()) {
        sums.move(leader, leaders[(j + 1) % k], 16 * ids.length / k);
      }
      for (const [i, p] of ids.entries()) {
        sums.move(ids[(i + 1) % ids.length], p, 16 * ids.length);
      }
      phases.push(sums);
      // The aggregate, slice by slice, spread by gossip: each peer fetches
      // every slice once and passes what it holds on.
      const aggregateBytes = Math.ceil(setup.params * setup.aggregateBits / 8) +
        4 * k;
      phases.push(spread(ids, aggregateBytes));
      // Verifiers recompute the slices they drew, from every delta's slice.
      const verify = new Phase();
      const checked = new Set<number>();
      for (const v of ids.filter((p) => !takers.has(p))) {
        for (
          const j of verifierSlices(
            `${parent}-manifest`,
            v,
            k,
            setup.verifyPerPeer,
          )
        ) {
          checked.add(j);
          for (const from of ids) {
            if (from !== v) verify.move(from, v, sliceBytes);
          }
        }
      }
      phases.push(verify);
      verified = checked.size / k;
      const liars = sample(
        rng,
        k,
        Math.max(1, Math.ceil(setup.byzantine * ids.length)),
      );
      wrong = liars.length;
      caught = liars.filter((j) => checked.has(j)).length;
      // The verifier that caught a wrong slice holds the right one, which
      // it publishes with the proof: the corrected slices spread again.
      if (caught > 0) phases.push(spread(ids, caught * aggregateBytes / k));
    }
    phases.push(manifestPhase(parent, contributors.map((p) => p.id)));
    const seconds = setup.trainSeconds +
      phases.reduce((s, ph) => s + ph.seconds(all, setup.loss, maxLatency), 0) +
      COMMIT_S;
    const ids = [...all.keys()];
    const sum = (
      of: readonly Phase[],
      m: (ph: Phase) => Map<string, number>,
      id: string,
    ) => of.reduce((s, ph) => s + (m(ph).get(id) ?? 0), 0) / (1 - setup.loss);
    out.push({
      seconds,
      catchUpSeconds: joinPhase.seconds(all, setup.loss, maxLatency),
      download: ids.map((id) => sum(phases, (ph) => ph.down, id)),
      upload: ids.map((id) => sum(phases, (ph) => ph.up, id)),
      catchUpDownload: ids.map((id) => sum([joinPhase], (ph) => ph.down, id)),
      catchUpUpload: ids.map((id) => sum([joinPhase], (ph) => ph.up, id)),
      verifiedFraction: verified,
      wrong,
      caught,
    });
    live = [...contributors, ...joiners];
    joiners = Array.from({ length: leaving.size }, fresh);
  }
  return out;

  /**
   * A round led by slices as the node runs it: two producers a slice fetch
   * it from every delta; a slice a liar produces goes to its backup after
   * the leader's wait; the leader reads every slice's sums, every peer the
   * sums of its groups' slices and the other groups' totals, and every
   * update slice, from their producers; each verifies its own slices free
   * and draws the rest.
   */
  function ledBySlices(
    parent: string,
    contributors: readonly Peer[],
    phases: Phase[],
  ): { verified: number; wrong: number; caught: number } {
    const ids = contributors.map((p) => p.id);
    const k = modelSlices(2, ids.length, setup.params);
    const leader = rankLeaders(parent, ids)[0];
    const producers = sliceProducers(parent, leader, k, ids);
    const sliceBytes = setup.deltaBytes / k;
    const liars = new Set(
      sample(
        rng,
        ids.length,
        Math.max(1, Math.ceil(setup.byzantine * ids.length)),
      )
        .map((i) => ids[i]),
    );
    // The plan, gossiped: once with its deltas, once with their sums.
    const plans = new Phase();
    for (const p of ids) {
      const bytes = GOSSIP_COPIES *
        (planBytes(ids.length, k, false) + planBytes(ids.length, k, true));
      plans.up.set(p, bytes);
      plans.down.set(p, bytes);
    }
    phases.push(plans);
    const produce = new Phase();
    for (const ps of producers) {
      for (const p of ps) {
        for (const from of ids) {
          if (from !== p) produce.move(from, p, sliceBytes);
        }
      }
    }
    phases.push(produce);
    const disputed = producers.flatMap((ps, j) =>
      ps.some((p) => liars.has(p)) ? [j] : []
    );
    // The slices a backup computed (the manifest's `backups`).
    const backed: SliceBackup[] = [];
    if (disputed.length > 0) {
      const backups = new Phase();
      backups.wait = MISSING_TIMEOUT_S;
      const drawn = sliceBackups(parent, leader, disputed, ids, producers);
      for (const [i, backup] of drawn.entries()) {
        const by = backup === null || liars.has(backup) ? leader : backup;
        const j = disputed[i];
        const replaces = producers[j].find((p) => liars.has(p))!;
        backed.push({ slice: j, peer: by, replaces });
        for (const from of ids) {
          if (from !== by) backups.move(from, by, sliceBytes);
        }
      }
      phases.push(backups);
    }
    // Sums (16 bytes a delta) in groups of slices: the leader reads every
    // slice's; a group's members (its slices' producers) add its slices'
    // and every other peer fetches the groups' totals from their members;
    // each update slice from its first honest producer. Everyone asks in
    // an order of its own.
    const sums = new Phase();
    const update = new Phase();
    sums.hops = 3;
    const sumBytes = 16 * ids.length;
    const aggregateBytes = Math.ceil(setup.params * setup.aggregateBits / 8) +
      4 * k;
    const holders = sliceHolders(producers, backed);
    const splits = servingSplits(holders, ids.length);
    const places = new Map(
      ids.toSorted(comparePeerIds).map((p, i) => [p, i]),
    );
    const honest = (to: string, j: number, ps: readonly string[]) =>
      producersToAsk(to, j, j < k ? holders[j] : ps, splits[j], places)
        .find((p) => !liars.has(p)) ?? leader;
    for (const [j, ps] of producers.entries()) {
      const from = honest(leader, j, ps);
      if (from !== leader) sums.move(from, leader, sumBytes);
    }
    const bounds = sumGroupBounds(k);
    const members = sumGroupMembers(producers);
    for (const to of ids) {
      for (const [i, ms] of members.entries()) {
        if (ms.includes(to)) {
          for (let j = bounds[i]; j < bounds[i + 1]; j++) {
            const from = honest(to, j, producers[j]);
            if (from !== to) sums.move(from, to, sumBytes);
          }
        } else if (to !== leader) {
          sums.move(honest(to, k + i, ms), to, sumBytes);
        }
      }
      for (const [j, ps] of producers.entries()) {
        const from = honest(to, j, ps);
        if (to !== from) update.move(from, to, aggregateBytes / k);
      }
    }
    phases.push(sums, update);
    const verify = new Phase();
    const checked = new Set<number>();
    // The leader attests its own manifest without checking it.
    for (const v of ids.filter((p) => p !== leader)) {
      const own = producedBy(producers, v);
      for (const j of own) checked.add(j);
      const draws = verifierSlices(
        `${parent}-manifest`,
        v,
        k,
        setup.verifyPerPeer + own.length,
      ).filter((j) => !own.includes(j))
        .slice(0, Math.max(0, setup.verifyPerPeer - own.length));
      for (const j of draws) {
        checked.add(j);
        for (const from of ids) {
          if (from !== v) verify.move(from, v, sliceBytes);
        }
      }
    }
    phases.push(verify);
    return {
      verified: checked.size / k,
      wrong: disputed.length,
      // Outvoted by the other producer and the backup, or by the leader.
      caught: disputed.length,
    };
  }

  /**
   * The manifest to every verifier down its tree (manifest_spread.ts):
   * it lists every delta, and each slice's blocks when sharded.
   */
  function manifestPhase(parent: string, ids: readonly string[]): Phase {
    const leader = rankLeaders(parent, ids)[0];
    const k = setup.sharded
      ? modelSlices(setup.producers, ids.length, setup.params)
      : 0;
    const bytes = manifestBytes(ids.length, k);
    const phase = new Phase();
    const tree = manifestTree(`${parent}/manifest`, ids, leader);
    for (const p of ids) {
      if (p === leader) continue;
      const from = tree(p);
      phase.move(from.providers[0], p, bytes);
      phase.hops = Math.max(phase.hops, from.providers.length);
    }
    return phase;
  }

  function timeout(): Phase {
    const t = new Phase();
    t.wait = MISSING_TIMEOUT_S;
    return t;
  }
}
