/**
 * The attacks of the attack suite, each a {@linkcode RoundBehaviour} with
 * one part of the honest peer swapped. They run inside real `--join`
 * peers (attacker_main.ts), never in the shipped CLI.
 *
 * - `scaled`: its delta ×100.
 * - `sign-flip`: its delta negated.
 * - `noise`: Gaussian noise with its delta's norm instead of the delta.
 * - `alie` ("A Little Is Enough", Baruch et al. 2019): the colluders wait
 *   for the honest deltas, then all send μ − z·σ·sign(μ) per coordinate,
 *   with μ, σ the honest mean and deviation and z the largest shift that
 *   still hides inside the honest spread for n peers and m colluders.
 * - `stale-replay`: from round 1, re-announces its round-0 delta.
 * - `cross-round`: from round 1, trains but binds its delta blob to the
 *   previous round and parent.
 * - `censoring-leader`: when it aggregates, leaves out the honest delta
 *   that reached it first (the one it plainly had).
 * - `lying-leader`: when it aggregates, publishes a tampered checkpoint (in
 *   a job sharded by slices, a tampered update slice and the checkpoint
 *   made from it).
 * - `late-censor`: when it aggregates, leaves out the honest delta that
 *   reached it last (a slow peer's) and publishes at once, about 100 ms
 *   after that delta came, without settling: a delta its verifiers hold
 *   too, announced shortly before the manifest (protocol/round/censorship.ts).
 * - `withholder`: trains honestly, announces its delta last, answers no
 *   request for it ahead of its announcement (delta-wait) and takes every
 *   request for its bytes without answering: the round's first leader's
 *   for good, every other peer's until that leader has given up on it and
 *   published (a collect window and a settling after it announced). Its
 *   delta is left out as `unserved` and earns nothing; no honest leader
 *   may be refused for it. In a round it leads itself it withholds
 *   nothing (its own manifest would only fail for want of its delta), and
 *   it logs the rounds it withholds in ({@linkcode WITHHELD_LINE}).
 * - `zero-delta`: announces an all-zero delta claiming 10⁹ tokens.
 * - `equivocation`: trains honestly, but beside each delta announcement
 *   signs and publishes a twin whose work commitment names another
 *   trajectory (every bit flipped): two different commitments for one
 *   round, which honest peers take to the chain as slashing evidence.
 * - `wrong-shard`: trains as hard as an honest peer, on the chunks next to
 *   its own (another peer's data), and commits that trajectory: its
 *   delta screens and aggregates like any other; only a replay on its
 *   prescribed batches shows it.
 * - `copied-delta`: trains honestly but announces, bound to itself, the
 *   first other peer's delta it can fetch (a free rider that copies
 *   instead of computing): its states do not end at what it announced.
 * - `free-rider`: announces Gaussian noise with the norm of a real delta,
 *   claiming 10⁹ tokens: a plausible-looking delta no training produced.
 * - `partial-work`: commits to having trained only its first segment and
 *   extrapolated the rest: every later state and the delta are the first
 *   segment's progress scaled up, all consistent with one another and with
 *   the delta, so only a replay of a made-up segment (15 in 16) shows it.
 *   (It still computes every step, which no audit can see; what it commits
 *   to is what a peer that skipped them would.)
 * - `partial-1of16`: as `partial-work`, but trains every segment except
 *   the last, which it extrapolates from the one before: only a replay of
 *   that 1 segment in 16 shows it, caught at rate/16 a round (`bench
 *   catch` prices it).
 * - `lying-start`: from round 1, trains its round from C(r − 1), where
 *   its round r − 1 started, but commits C(r) as state 0: the start check
 *   passes, every segment but the first replays bit for bit, and its delta
 *   carries C(r − 1) − C(r) besides its steps, which the screen calls
 *   `misaligned`. Left out once, it is a suspect (protocol/audit/audit_plan.ts)
 *   and audited on every segment, the first included.
 * - `silent`: as `partial-work`, and live (gossiping, serving its delta),
 *   but it takes every request for its work record or its states and
 *   answers none: its audits can replay nothing. A quorum of silence
 *   verdicts takes back the round's credit, and a second slashes it.
 * - `poisoned-start`: trains every step honestly on its own batches, from
 *   C(r), but from optimizer moments of its choosing: first moments of
 *   1e-3 along a fixed pattern over second moments of 1e-8, so AdamW's
 *   m / √v pushes the parameters along that pattern by far more than a
 *   round of honest steps moves them. Every segment replays bit for bit
 *   from its committed start; only the check of where the round started
 *   shows it.
 * - `lying-auditor`: trains honestly, but judges every other contributor's
 *   drawn segments, drawn its auditor or not, and fails each in replay:
 *   false verdicts whose accused the other members' replays clear. Their
 *   refutations are evidence of kind 3 against it: a strike, and a slash
 *   at the second.
 * - `colluding-verdicts`: two `wrong-shard` cheaters that each judge the
 *   other's drawn segments and sign its (true) failure, so that the
 *   evidence against the second to be slashed holds a verdict by one
 *   slashed before it.
 * - `lying-producer`: trains honestly, but in a job sharded by slices
 *   announces, for each slice it produces, another block's CID (its sums')
 *   as the slice's update: the slice's other producer and its backup (or
 *   the leader) outvote it, and the update published is the honest one.
 *   Nothing blames it yet (protocol/README.md, "What is not built yet"):
 *   it logs the rounds it lies in ({@linkcode LIED_LINE}) so the bench
 *   can show what it keeps.
 * - `exiting-signer`: a `scaled` cheater, and one honest member that signs
 *   the true failure of its audit and then exits (`zoo_leave {exit:
 *   true}`) before the evidence lands: attack_run.ts makes it leave.
 *
 * Every delta a manifest lists, aggregated or screened out, is audited in
 * the next round, so each attack above whose delta is not its committed
 * trajectory's (all but the leader attacks, `stale-replay` and
 * `cross-round`, whose deltas are refused before any manifest) also fails
 * its audit and is slashed: at once, or at the sampling rate for the
 * partial ones.
 *
 * @module
 */
import { Rng } from "../../kernels/data/rng.ts";
import {
  HONEST,
  type RoundBehaviour,
} from "../../node/round/services/behaviour.ts";
import { rankLeaders } from "../../protocol/peers/assignment.ts";
import { pseudoGradient } from "../../protocol/aggregation/pseudo_gradient.ts";
import { dequantize, quantize } from "../../protocol/aggregation/quantize.ts";
import { collectMs, settleMs } from "../../protocol/round/round_timing.ts";
import type { TrainingState } from "../../protocol/content/state_hash.ts";

/**
 * What an attack is caught for, and so what the suite and the bench
 * expect of it:
 * - `slashed`: its work is not what it committed to, so it fails its
 *   audit and is slashed: its round credits are recorded at commit and
 *   only then taken back, with its membership, once the evidence lands
 *   on chain after the round has closed;
 * - `leader`: made by a round's leader, on its manifest, not its own work;
 * - `serving`: on serving, not on work: its deltas are honest work left
 *   out unserved, so it earns nothing and is never slashed;
 * - `refused`: its deltas are refused before any manifest lists them for
 *   audit;
 * - `outvoted`: its lie about a slice it produces is outvoted before any
 *   manifest, and nothing else is held against it.
 */
export type AttackKind =
  | "slashed"
  | "leader"
  | "serving"
  | "refused"
  | "outvoted";

/**
 * Where `tests/attacks_test.ts` runs an attack:
 * - `fast`: among 3 peers;
 * - `sampled`: among 3 peers, over more rounds, as an audit catches it only
 *   when it draws a made-up segment;
 * - `verdicts`: among 4 peers, as it attacks the audit verdicts, which
 *   need a quorum besides their accused and their signer;
 * - `bench`: nowhere, too slow (`alie` waits for the honest deltas) or
 *   too rarely caught (`partial-1of16`) for the suite: only
 *   `deno task bench attacks` runs it.
 */
export type AttackSuite = "fast" | "sampled" | "verdicts" | "bench";

/** An attack's entry in {@linkcode ATTACK_TABLE}. */
export interface AttackEntry {
  readonly kind: AttackKind;
  readonly suite: AttackSuite;
  /** It needs an earlier round of its own, so starts in round 1. */
  readonly fromRound1?: boolean;
}

/**
 * Every attack, by its name in `bench attacks`: the one place an attack is
 * named; the lists below, the suite and the bench read it. Each has a
 * `case` in {@linkcode attackBehaviour}, which the compiler holds to
 * these names.
 */
export const ATTACK_TABLE = {
  "scaled": { kind: "slashed", suite: "fast" },
  "sign-flip": { kind: "slashed", suite: "fast" },
  "noise": { kind: "slashed", suite: "fast" },
  "alie": { kind: "slashed", suite: "bench" },
  "stale-replay": { kind: "refused", suite: "fast", fromRound1: true },
  "cross-round": { kind: "refused", suite: "fast", fromRound1: true },
  "censoring-leader": { kind: "leader", suite: "fast" },
  "lying-leader": { kind: "leader", suite: "fast" },
  "late-censor": { kind: "leader", suite: "fast" },
  "zero-delta": { kind: "slashed", suite: "fast" },
  "equivocation": { kind: "slashed", suite: "fast" },
  "wrong-shard": { kind: "slashed", suite: "fast" },
  "copied-delta": { kind: "slashed", suite: "fast" },
  "free-rider": { kind: "slashed", suite: "fast" },
  "partial-work": { kind: "slashed", suite: "sampled" },
  "partial-1of16": { kind: "slashed", suite: "bench" },
  "lying-start": { kind: "slashed", suite: "fast", fromRound1: true },
  "silent": { kind: "slashed", suite: "fast" },
  "poisoned-start": { kind: "slashed", suite: "fast" },
  "withholder": { kind: "serving", suite: "fast" },
  "lying-auditor": { kind: "slashed", suite: "verdicts" },
  "colluding-verdicts": { kind: "slashed", suite: "verdicts" },
  "exiting-signer": { kind: "slashed", suite: "verdicts" },
  "lying-producer": { kind: "outvoted", suite: "bench" },
} as const satisfies Readonly<Record<string, AttackEntry>>;

/** An attack's name. */
export type AttackName = keyof typeof ATTACK_TABLE;

/** Every attack, in table order. */
export const ATTACKS = Object.keys(ATTACK_TABLE) as readonly AttackName[];

/** The attacks whose entry passes `test`, in table order. */
export function attacksWhere(
  test: (entry: AttackEntry) => boolean,
): readonly AttackName[] {
  return ATTACKS.filter((name) => test(ATTACK_TABLE[name]));
}

/** Attacks made by a round's leader. */
export const LEADER_ATTACKS = attacksWhere((a) => a.kind === "leader");

/** Attacks on serving, not on work (see {@linkcode AttackKind}). */
export const SERVING_ATTACKS = attacksWhere((a) => a.kind === "serving");

/** Attacks whose deltas are refused before any manifest lists them. */
export const REFUSED_ATTACKS = attacksWhere((a) => a.kind === "refused");

/** Attacks that need an earlier round of their own, so start in round 1. */
export const FROM_ROUND_1 = attacksWhere((a) => a.fromRound1 === true);

/** Attacks punished by slashing (see {@linkcode AttackKind}). */
export const SLASHED_ATTACKS = attacksWhere((a) => a.kind === "slashed");

/** What an attacker peer knows beyond its own node. */
export interface AttackSetup {
  name: AttackName;
  /** Peer ids of every attacker of the run (ALIE's colluders). */
  colluders: string[];
  /** The job's round deadline: how long the `withholder` holds back. */
  roundDeadlineMs?: number;
}

/** How long the `late-censor` waits where a leader settles, at most, ms. */
const LATE_CENSOR_WAIT_MS = 50;

/** How long an ALIE colluder waits for the honest deltas, ms. */
const ALIE_WAIT_MS = 15_000;

/** The behaviour of an attacker running `setup`. */
export function attackBehaviour(setup: AttackSetup): RoundBehaviour {
  switch (setup.name) {
    case "scaled":
    case "exiting-signer":
      return valueAttack((d) => d.map((v) => 100 * v));
    case "colluding-verdicts":
      return {
        ...HONEST,
        chunks: wrongShard,
        audits: (peer) => setup.colluders.includes(peer),
      };
    case "lying-auditor":
      return {
        ...HONEST,
        audits: (peer) => !setup.colluders.includes(peer),
        verdict: (peer, verdict) =>
          setup.colluders.includes(peer) ? verdict : {
            passed: false,
            check: "replay",
            reason: "made up by a lying auditor",
          },
      };
    case "sign-flip":
      return valueAttack((d) => d.map((v) => -v));
    case "noise":
      return valueAttack((d, round) => sameNormNoise(d, round));
    case "zero-delta":
      return {
        ...HONEST,
        delta: (c) => Promise.resolve(new Float32Array(c.delta.length)),
        announce: (msg) => ({ ...msg, tokens: 1e9 }),
      };
    case "alie":
      return { ...HONEST, delta: (c) => alie(c, setup.colluders) };
    case "equivocation":
      return {
        ...HONEST,
        also: (msg) => [{ ...msg, trajectory: inverted(msg.trajectory) }],
      };
    case "wrong-shard":
      return { ...HONEST, chunks: wrongShard };
    case "copied-delta":
      return { ...HONEST, delta: (c) => copied(c) };
    case "partial-work":
      return partialWork();
    case "partial-1of16":
      return lastSegmentMadeUp();
    case "lying-start":
      return lyingStart();
    case "silent":
      return silent(partialWork());
    case "poisoned-start":
      return {
        ...HONEST,
        start: (start) => {
          const n = start.moments.m.length;
          return {
            ...start,
            moments: {
              m: new Float32Array(n).map((_, i) => 1e-3 * Math.sin(i)),
              v: new Float32Array(n).fill(1e-8),
            },
          };
        },
      };
    case "free-rider":
      return {
        ...HONEST,
        delta: (c) => Promise.resolve(sameNormNoise(c.delta, c.round)),
        announce: (msg) => ({ ...msg, tokens: 1e9 }),
      };
    case "stale-replay": {
      let previous: string | null = null;
      return {
        ...HONEST,
        announce: (msg) => {
          const replayed = previous === null
            ? msg
            : { ...msg, delta: previous };
          previous ??= msg.delta;
          return replayed;
        },
      };
    }
    case "cross-round": {
      let previous: string | null = null;
      return {
        ...HONEST,
        deltaContext: (c) => {
          const bound = previous === null
            ? c
            : { ...c, round: c.round - 1, parent: previous };
          previous = c.parent;
          return bound;
        },
      };
    }
    case "censoring-leader":
      return {
        ...HONEST,
        contributions: (fetched) => {
          const victim = fetched.find((f) => !setup.colluders.includes(f.peer));
          return fetched.filter((f) => f !== victim);
        },
      };
    case "late-censor":
      return {
        ...HONEST,
        contributions: (fetched) => {
          const victim = fetched.findLast((f) =>
            !setup.colluders.includes(f.peer)
          );
          return fetched.filter((f) => f !== victim);
        },
        leaderWait: (ms) => Math.min(ms, LATE_CENSOR_WAIT_MS),
      };
    case "withholder":
      return withholder(setup);
    case "lying-producer":
      return {
        ...HONEST,
        slice: (msg) => {
          if (msg.update === "") return msg;
          console.log(`${LIED_LINE}${msg.round}`);
          return { ...msg, update: msg.sums };
        },
      };
    case "lying-leader":
      return {
        ...HONEST,
        checkpoint: (next) => {
          const params = new Float32Array(next.params);
          params[0] += 1;
          return { ...next, params };
        },
        // Sharded: the checkpoint is made from the update it publishes, so
        // the lie is in a slice, found by the verifiers that draw it.
        update: ([first, ...rest]) => {
          const values = dequantize(first);
          values[0] += 1;
          return [quantize(values, first), ...rest];
        },
      };
  }
}

/** The chunks next to the assigned ones: another peer's data. */
function wrongShard(assigned: readonly number[], count: number): number[] {
  return assigned.map((i) => (i + 1) % count);
}

function valueAttack(
  change: (delta: Float32Array, round: number) => Float32Array,
): RoundBehaviour {
  return {
    ...HONEST,
    delta: (c) => Promise.resolve(change(c.delta, c.round)),
  };
}

/**
 * The `partial-work` peer: keeps the states up to the first segment's end
 * (`first`), then commits θ_0 + (step / first.step)·(θ_first − θ_0), with
 * the first segment's moments, and announces θ_0 − θ_H of that made-up end.
 */
function partialWork(): RoundBehaviour {
  let zero: TrainingState | null = null;
  let first: TrainingState | null = null;
  let end: Float32Array | null = null;
  return {
    ...HONEST,
    state: (s) => {
      if (s.step === 0) [zero, first, end] = [s, null, null];
      if (!zero || first === null) {
        if (s.step > 0) first = s;
        return s;
      }
      const t = s.step / first.step;
      const params = zero.params.map((x, i) => x + t * (first!.params[i] - x));
      end = params;
      return { step: s.step, params, m: first.m, v: first.v };
    },
    delta: (c) =>
      Promise.resolve(zero && end ? pseudoGradient(zero.params, end) : c.delta),
  };
}

/**
 * The `partial-1of16` peer: commits its states as trained up to the last
 * bound before the end, then θ_end = θ_b + (H − b)/(b − a)·(θ_b − θ_a)
 * for its last two states a < b, with b's moments, and announces θ_0 −
 * θ_end of that made-up end.
 */
function lastSegmentMadeUp(): RoundBehaviour {
  let zero: TrainingState | null = null;
  let last: TrainingState[] = [];
  let end: Float32Array | null = null;
  return {
    ...HONEST,
    state: (s, innerSteps) => {
      if (s.step === 0) [zero, last, end] = [s, [], null];
      if (s.step < innerSteps || last.length === 0) {
        last = [...last.slice(-1), s];
        return s;
      }
      const a = last.length > 1 ? last[0] : zero!, b = last.at(-1)!;
      const t = (s.step - b.step) / (b.step - a.step);
      end = b.params.map((x, i) => x + t * (x - a.params[i]));
      return { step: s.step, params: end, m: b.m, v: b.v };
    },
    delta: (c) =>
      Promise.resolve(zero && end ? pseudoGradient(zero.params, end) : c.delta),
  };
}

/**
 * `behaviour`, withholding the work record and states it publishes: its
 * blob service takes the requests for them and never answers.
 */
function silent(behaviour: RoundBehaviour): RoundBehaviour {
  const withheld = new Set<string>();
  return {
    ...behaviour,
    work: async (choice) => {
      const record = await behaviour.work(choice);
      for (const state of record.states) withheld.add(state);
      return record;
    },
    announce: (msg) => {
      const out = behaviour.announce(msg);
      withheld.add(out.work);
      return out;
    },
    withholds: (cid) => withheld.has(cid),
  };
}

/**
 * The `lying-start` peer: its steps start from the parameters its last
 * round started from, and it commits the ones it was given as state 0.
 */
function lyingStart(): RoundBehaviour {
  let previous: Float32Array | null = null;
  let given: Float32Array | null = null;
  return {
    ...HONEST,
    params: (_round, params) => {
      const from = previous ?? params;
      previous = given = params.slice();
      return from;
    },
    state: (s) => s.step === 0 && given ? { ...s, params: given } : s,
  };
}

/**
 * The `withholder` peer (see the module doc); `setup.roundDeadlineMs` sets
 * how long it holds its delta back from every peer but the first leader.
 */
function withholder(setup: AttackSetup): RoundBehaviour {
  const config = { roundDeadlineMs: setup.roundDeadlineMs ?? 30_000 };
  const holdMs = collectMs(config) + settleMs(config);
  /** Its deltas by CID: the round's first leader, and the end of the hold. */
  const held = new Map<string, { leader: string; until: number }>();
  let leader = "";
  return {
    ...HONEST,
    delta: async (c) => {
      await othersAnnounced(c);
      leader = rankLeaders(c.parent, [...c.live()])[0];
      return c.delta;
    },
    announce: (msg) => {
      if (leader !== msg.peer) {
        held.set(msg.delta, { leader, until: Date.now() + holdMs });
        console.log(`${WITHHELD_LINE}${msg.round}`);
      }
      return msg;
    },
    withholds: (cid, peer) => {
      const h = held.get(cid);
      return h !== undefined && (peer === h.leader || Date.now() < h.until);
    },
  };
}

/**
 * What the `lying-producer` logs of each round it lies about a slice in,
 * before the round's number.
 */
export const LIED_LINE = "lying producer: lies about a slice of round ";

/**
 * What the `withholder` logs of each round it withholds its delta in,
 * before the round's number.
 */
export const WITHHELD_LINE = "withholder: withholds its delta of round ";

/** How long the `withholder` waits to announce last, ms. */
const LAST_WAIT_MS = 15_000;

/** Resolves once every other live peer's delta is in (or after a while). */
async function othersAnnounced(
  c: Parameters<RoundBehaviour["delta"]>[0],
): Promise<void> {
  const deadline = Date.now() + LAST_WAIT_MS;
  while (Date.now() < deadline) {
    const wanted = c.live().length - 1;
    if ((await c.announced()).length >= wanted) return;
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** How long a copier waits for another peer's delta, ms. */
const COPY_WAIT_MS = 15_000;

/** The first other peer's delta announced this round, else its own. */
async function copied(
  c: Parameters<RoundBehaviour["delta"]>[0],
): Promise<Float32Array> {
  const deadline = Date.now() + COPY_WAIT_MS;
  while (Date.now() < deadline) {
    const [first] = await c.announced();
    if (first) return first.delta;
    await new Promise((r) => setTimeout(r, 100));
  }
  return c.delta;
}

/** A hash with every bit flipped: never the hash itself. */
function inverted(hash: `0x${string}`): `0x${string}` {
  const digits = [...hash.slice(2)].map((d) =>
    (15 - parseInt(d, 16)).toString(16)
  );
  return `0x${digits.join("")}`;
}

function sameNormNoise(delta: Float32Array, round: number): Float32Array {
  const rng = new Rng(`attack-noise-${round}`);
  const noise = Float32Array.from(delta, () => rng.normal());
  const scale = Math.sqrt(sumSquares(delta) / sumSquares(noise));
  return noise.map((v) => v * scale);
}

function sumSquares(x: Float32Array): number {
  let s = 0;
  for (const v of x) s += v * v;
  return s;
}

async function alie(
  c: Parameters<RoundBehaviour["delta"]>[0],
  colluders: readonly string[],
): Promise<Float32Array> {
  const deadline = Date.now() + ALIE_WAIT_MS;
  const isHonest = (peer: string) => !colluders.includes(peer);
  let honest: Float32Array[] = [];
  while (Date.now() < deadline) {
    const wanted = c.live().filter(isHonest).length;
    honest = (await c.announced()).filter((d) => isHonest(d.peer))
      .map((d) => d.delta);
    if (wanted > 0 && honest.length >= wanted) break;
    await new Promise((r) => setTimeout(r, 100));
  }
  // Its own honest delta is one more sample of the honest spread.
  const samples = [...honest, c.delta];
  const n = c.live().length, m = colluders.length;
  const z = alieZ(n, m);
  const out = new Float32Array(c.delta.length);
  for (let j = 0; j < out.length; j++) {
    let mean = 0;
    for (const s of samples) mean += s[j];
    mean /= samples.length;
    let variance = 0;
    for (const s of samples) variance += (s[j] - mean) ** 2;
    const sigma = Math.sqrt(variance / samples.length);
    out[j] = mean - z * sigma * Math.sign(mean);
  }
  return out;
}

/**
 * ALIE's z_max: with s = ⌊n/2 + 1⌋ − m honest peers the colluders must
 * win over, z = Φ⁻¹((n − s) / n).
 */
export function alieZ(n: number, m: number): number {
  const s = Math.floor(n / 2 + 1) - m;
  return inverseNormal(Math.min(0.999, Math.max(0.5, (n - s) / n)));
}

/** Φ⁻¹(p) by bisection on the error function; enough for a z score. */
function inverseNormal(p: number): number {
  let lo = -10, hi = 10;
  for (let i = 0; i < 80; i++) {
    const mid = (lo + hi) / 2;
    if (normalCdf(mid) < p) lo = mid;
    else hi = mid;
  }
  return (lo + hi) / 2;
}

function normalCdf(x: number): number {
  // Abramowitz and Stegun 7.1.26, |error| < 1.5e-7.
  const t = 1 / (1 + 0.3275911 * Math.abs(x) / Math.SQRT2);
  const poly = t * (0.254829592 + t * (-0.284496736 +
        t * (1.421413741 + t * (-1.453152027 + t * 1.061405429))));
  const erf = 1 - poly * Math.exp(-(x * x) / 2);
  return x >= 0 ? (1 + erf) / 2 : (1 - erf) / 2;
}
