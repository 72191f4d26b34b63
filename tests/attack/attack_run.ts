/**
 * One run of the attack suite: a devnet of real `--join --job` peers on a
 * real anvil, some of them attackers (attacker_main.ts), the rest honest;
 * or, with no attack, the clean run to compare with. Runs given the same
 * `keys` directory use the same peer keys, so a clean run and an attacked
 * one share peer ids, data shards and round-0 leader.
 *
 * What it reads back: the final held-out loss an honest peer measured; the
 * refusals honest peers recorded (who was refused, when, why); the tokens
 * the chain credited per round and account; who committed each round; who
 * was slashed and what contribution the attackers kept; and from the
 * attackers' logs, the rounds they announced a delta in.
 *
 * @module
 */
import { zooRegistryAbi } from "../../chain/artifact.ts";
import { cidToBytes32 } from "../../chain/attestation.ts";
import {
  contributionOf,
  listRounds,
  roundCredits,
  slashedAccounts,
} from "../../chain/registry.ts";
import type { LocalPeer } from "../../node/devnet/local_peer.ts";
import { watchRounds } from "../../node/devnet/rounds.ts";
import { callRpc } from "../../node/http/rpc_client.ts";
import { readRpcToken } from "../../node/http/rpc_token.ts";
import type { Refusal } from "../../node/round/records/ledger.ts";
import { rankLeaders } from "../../protocol/peers/assignment.ts";
import type { JobSpec } from "../../protocol/spec/job_spec.ts";
import {
  type JobCluster,
  trainingOf,
  withJobCluster,
} from "../_job_cluster.ts";
import { ATTACK_FILE } from "./attacker_main.ts";
import {
  type AttackName,
  FROM_ROUND_1,
  LEADER_ATTACKS,
  LIED_LINE,
  SERVING_ATTACKS,
  SLASHED_ATTACKS,
  WITHHELD_LINE,
} from "./behaviours.ts";

const ATTACKER_MAIN = new URL("./attacker_main.ts", import.meta.url).pathname;

/** What one run is. */
export interface AttackRunOptions {
  /** The attack, or null for the clean run. */
  attack: AttackName | null;
  peers: number;
  spec: JobSpec;
  /** Where the peers' keys live across runs. */
  keys: string;
  log?: (line: string) => void;
}

/** What one run showed. */
export interface AttackRunResult {
  attack: AttackName | null;
  peers: number;
  /** Peer ids of the attackers (none in the clean run). */
  attackers: string[];
  /** Held-out loss of the final checkpoint, as an honest peer measured it. */
  heldoutLoss: number;
  /** Rounds the attackers attacked. */
  attackedRounds: number[];
  /** Attacked rounds in which an honest peer refused an attacker. */
  detectedRounds: number[];
  /** Attacked rounds whose work an honest peer failed in audit. */
  failedAuditRounds: number[];
  /**
   * Tokens the chain credited to attackers in attacked rounds; for a
   * slashed attack ({@linkcode SLASHED_ATTACKS}), `contributionLeft`: its
   * round credits are recorded at commit, since the evidence goes on chain
   * only once the round has closed, and the slash then zeroes them, so what
   * the attackers kept is what counts.
   */
  creditedToAttackers: number;
  /** Tokens the chain credited to attackers in all rounds. */
  creditedToAttackersAllRounds: number;
  /** Rounds the chain credited to honest peers, of rounds × honest peers. */
  honestCredit: { credited: number; of: number };
  /** Every attacker was slashed in the job (a NodeSlashed event each). */
  slashed: boolean;
  /**
   * For `exiting-signer`: the signer's exit began on chain before the
   * attacker's slash landed (null in other runs).
   */
  signerExitedFirst: boolean | null;
  /**
   * The phase each attacker's own status showed at the end, given a few
   * seconds to read its standing ("slashed" once the chain slashed it).
   */
  attackerPhases: (string | null)[];
  /** The attackers' contribution on chain at the end (`contributionOf`). */
  contributionLeft: number;
  /**
   * Honest peers wronged: (round, peer) pairs where an honest peer was
   * refused by another, or left without credit on chain.
   */
  falsePositives: { round: number; peer: string; why: string }[];
  /** Every refusal honest peers recorded. */
  refusals: Refusal[];
  /** Segment audits honest peers ran, of anyone, by verdict. */
  audits: { passed: number; failed: number };
  /**
   * Extra compute of auditing: steps honest peers re-ran in audits over
   * the steps they trained in committed rounds.
   */
  auditOverhead: number;
}

/**
 * The attackers of a run: a round-0 leader attack takes the peer ranked
 * first for round 0 (so the attack surely happens); ALIE takes ~30% of
 * the peers, the rest one peer, all ranked last for round 0 (so an honest
 * peer aggregates it).
 */
export function chooseAttackers(
  attack: AttackName | null,
  ranked: readonly string[],
): string[] {
  if (attack === null) return [];
  if (LEADER_ATTACKS.includes(attack)) return [ranked[0]];
  const count = attack === "alie"
    ? Math.max(1, Math.round(0.3 * ranked.length))
    : attack === "colluding-verdicts"
    ? 2
    : 1;
  return ranked.slice(ranked.length - count);
}

/**
 * How many of `peers` stop being members during a run of `attack`: its
 * attackers, once slashed, and an exiting signer.
 */
export function leavingPeers(attack: AttackName, peers: number): number {
  const ids = Array.from({ length: peers }, (_, i) => String(i));
  return chooseAttackers(attack, ids).length +
    (exitingSigner(attack, ids) === null ? 0 : 1);
}

/**
 * The honest peers a run slows down: for `late-censor`, its victim, the
 * honest peer ranked last for round 0, trains at a quarter of its speed
 * (`--duty-cycle 0.25`), so its delta reaches the censor last.
 */
export function slowPeers(
  attack: AttackName | null,
  ranked: readonly string[],
): string[] {
  return attack === "late-censor" ? [ranked[ranked.length - 1]] : [];
}

/**
 * The honest member that exits after signing, for `exiting-signer`: the
 * one ranked second for round 0, neither its leader nor the attacker.
 */
export function exitingSigner(
  attack: AttackName | null,
  ranked: readonly string[],
): string | null {
  return attack === "exiting-signer" ? ranked[1] : null;
}

/**
 * Has `peer` leave its job with `zoo_leave {exit: true}` once it has
 * failed an audit of one of `accused` (and had a second to gossip its
 * verdict), then stops it: the evidence it signed goes on chain after
 * its signer's stake began unbonding. Resolves with the round of the
 * failed work, or null when `signal` aborts first.
 */
async function leaveAfterVerdict(
  peer: LocalPeer,
  accused: readonly string[],
  signal: AbortSignal,
): Promise<number | null> {
  const failed = new RegExp(
    `^round (\\d+): audit of (${accused.join("|")}) segment \\d+ FAILED`,
    "m",
  );
  let round: number | null = null;
  while (round === null) {
    if (signal.aborted) return null;
    const m = (await Deno.readTextFile(peer.log)).match(failed);
    if (m) round = Number(m[1]);
    else await new Promise((r) => setTimeout(r, 200));
  }
  await new Promise((r) => setTimeout(r, 1_000));
  const token = await readRpcToken(peer.dataDir);
  await callRpc(peer.info.http!, "zoo_leave", { exit: true }, {
    token: token ?? undefined,
  });
  peer.child.kill("SIGTERM");
  return round;
}

/**
 * The rounds of the work on which one of `accounts` signed a failure
 * verdict that went on chain as false (evidence of kind 3).
 */
async function falseVerdictRounds(
  c: JobCluster,
  job: `0x${string}`,
  accounts: readonly string[],
): Promise<Set<number>> {
  const logs = await c.chain.owner.client.public.getContractEvents({
    address: c.chain.owner.address,
    abi: zooRegistryAbi,
    eventName: "FalseVerdict",
    args: { job },
    fromBlock: 0n,
  });
  return new Set(
    logs.filter((l) => accounts.includes(l.args.account!.toLowerCase()))
      .map((l) => Number(l.args.round)),
  );
}

/**
 * `peer`'s phase once it shows "slashed", or as it stands after 10 s (its
 * standing is read from the chain in the background); null if it cannot
 * answer.
 */
async function finalPhase(peer: LocalPeer): Promise<string | null> {
  const deadline = performance.now() + 10_000;
  let phase: string | null = null;
  while (performance.now() < deadline) {
    phase = await trainingOf(peer).then((t) => t.phase, () => null);
    if (phase === "slashed") break;
    await new Promise((r) => setTimeout(r, 500));
  }
  return phase;
}

/** Whether `signer`'s exit began in an earlier block than every slash of `accused`. */
async function exitedBeforeSlash(
  c: JobCluster,
  job: `0x${string}`,
  signer: string,
  accused: readonly string[],
): Promise<boolean> {
  const { client, address } = c.chain.owner;
  const [exits, slashes] = await Promise.all([
    client.public.getContractEvents({
      address,
      abi: zooRegistryAbi,
      eventName: "ExitStarted",
      args: { account: signer as `0x${string}` },
      fromBlock: 0n,
    }),
    client.public.getContractEvents({
      address,
      abi: zooRegistryAbi,
      eventName: "NodeSlashed",
      args: { job },
      fromBlock: 0n,
    }),
  ]);
  const slashed = slashes.filter((l) =>
    accused.includes(l.args.account!.toLowerCase())
  );
  return exits.length > 0 && slashed.length > 0 &&
    slashed.every((l) => l.blockNumber > exits[0].blockNumber);
}

/** How much of the time a slowed peer trains (`--duty-cycle`). */
const SLOW_DUTY_CYCLE = 0.25;

/** Runs one devnet to its last round and reads back what happened. */
export async function runAttack(o: AttackRunOptions): Promise<AttackRunResult> {
  const log = o.log ?? (() => {});
  let result: AttackRunResult | null = null;
  await withJobCluster(
    { nodes: o.peers, spec: o.spec, keys: o.keys },
    async (c) => {
      result = await attackCluster(c, o, log);
    },
  );
  return result!;
}

async function attackCluster(
  c: JobCluster,
  o: AttackRunOptions,
  log: (line: string) => void,
): Promise<AttackRunResult> {
  const ids = c.slots.map((s) => s.registration.peerId);
  const genesis = (await c.chainHead()).head;
  const ranked = rankLeaders(genesis, ids);
  const attackers = chooseAttackers(o.attack, ranked);
  const slow = slowPeers(o.attack, ranked);
  const exiter = exitingSigner(o.attack, ranked);
  const isAttacker = (i: number) => attackers.includes(ids[i]);
  // The exiting signer is honest until it leaves: credited or wronged,
  // it is counted apart (never slashed, checked below).
  const honest = ids.map((_, i) => i).filter((i) =>
    !isAttacker(i) && ids[i] !== exiter
  );
  const spawned = ids.map((_, i) => i).filter((i) => !isAttacker(i));
  const bad = ids.map((_, i) => i).filter(isAttacker);
  for (const i of bad) {
    await Deno.writeTextFile(
      `${c.slots[i].dataDir}/${ATTACK_FILE}`,
      JSON.stringify({
        name: o.attack,
        colluders: attackers,
        roundDeadlineMs: o.spec.roundDeadlineMs,
      }),
    );
  }
  log(
    `${o.attack ?? "clean"}: ${o.peers} peers${
      bad.length ? `, attackers ${bad.map((i) => c.slots[i].name)}` : ""
    }`,
  );
  const isSlow = (i: number) => slow.includes(ids[i]);
  const good = await c.spawn(spawned.filter((i) => !isSlow(i)));
  const slowed = spawned.filter(isSlow);
  if (slowed.length > 0) {
    good.push(
      ...await c.spawn(slowed, {
        from: good[0],
        args: ["--duty-cycle", String(SLOW_DUTY_CYCLE)],
      }),
    );
  }
  const evil = bad.length
    ? await c.spawn(bad, { from: good[0], entry: ATTACKER_MAIN })
    : [];
  const watching = new AbortController();
  const leaver = exiter === null
    ? undefined
    : good.find((p) => p.name === c.slots[ids.indexOf(exiter)].name);
  const left = leaver
    ? leaveAfterVerdict(leaver, attackers, watching.signal)
    : Promise.resolve(null);
  const rounds = await watchRounds({
    peers: good,
    rounds: o.spec.rounds,
    stallMs: Math.max(120_000, 6 * o.spec.roundDeadlineMs),
    onRound: (r) =>
      log(`${o.attack ?? "clean"}: round ${r.round + 1}/${o.spec.rounds}`),
  }).finally(() => watching.abort());
  const exitedAfter = await left;
  if (leaver && exitedAfter === null) {
    throw new Error(`${leaver.name} never failed the attacker's audit`);
  }
  if (o.attack !== null && SLASHED_ATTACKS.includes(o.attack)) {
    // Evidence formed as the job ends (refutations replayed behind the
    // honest peers' own steps, on a loaded machine) still lands while the
    // peers run: an auditor exposes a refuted accuser as soon as the
    // refutations are in, round or no round.
    await slashedWithin(c, attackers, SLASH_GRACE_MS);
  }
  const staying = good.filter((p) => p !== leaver);
  const trainings = await Promise.all(staying.map((p) => trainingOf(p)));
  const refusals = trainings.flatMap((t) => t.refusals);
  const audits = trainings.flatMap((t) => t.audits);
  const attackerPhases = await Promise.all(evil.map((p) => finalPhase(p)));
  // The exiting signer was stopped when it left.
  for (const p of [...staying, ...evil]) p.child.kill("SIGTERM");
  if (Deno.env.get("ATTACK_DEBUG")) {
    for (const p of [...good, ...evil]) {
      console.error(`--- ${p.name}\n${await Deno.readTextFile(p.log)}`);
    }
  }
  const job = cidToBytes32(c.job.id);
  const credits = await roundCredits(c.chain.owner, job);
  const committers = (await listRounds(c.chain.owner, job))
    .map((r) => r.committer.toLowerCase());
  const accountOf = new Map(
    c.slots.map((s) => [s.registration.peerId, s.registration.address]),
  );
  const attackerAccounts = attackers.map((p) =>
    accountOf.get(p)!.toLowerCase()
  );
  const slashed = await slashedAccounts(c.chain.owner, job);
  const contributionLeft = (await Promise.all(
    attackers.map((p) => contributionOf(c.chain.owner, job, accountOf.get(p)!)),
  )).reduce((sum, x) => sum + Number(x), 0);
  const exposed = await falseVerdictRounds(c, job, attackerAccounts);
  const blames = (round: number, peers: readonly string[]) =>
    exposed.has(round) ||
    refusals.some((r) => r.round === round && peers.includes(r.peer)) ||
    audits.some((a) =>
      a.round === round && !a.passed && peers.includes(a.peer)
    );

  const all = Array.from({ length: o.spec.rounds }, (_, r) => r);
  // A delta attack happens in the rounds an attacker announced a delta in
  // (one that fell behind may sit a round out), a serving attack in those
  // it withheld its delta in; a leader attack in those it led: refused, or
  // committed by it.
  const announced = new Set<number>();
  const line = o.attack === "lying-auditor"
    ? /^round (\d+): audit of \S+ segment \d+ FAILED/gm
    : o.attack !== null && SERVING_ATTACKS.includes(o.attack)
    ? new RegExp(`^${WITHHELD_LINE}(\\d+)`, "gm")
    : o.attack === "lying-producer"
    ? new RegExp(`^${LIED_LINE}(\\d+)`, "gm")
    : /^round (\d+): trained /gm;
  for (const p of evil) {
    const log = await Deno.readTextFile(p.log);
    for (const m of log.matchAll(line)) announced.add(Number(m[1]));
  }
  const attackedRounds = o.attack === null
    ? []
    : LEADER_ATTACKS.includes(o.attack)
    ? all.filter((r) =>
      refusals.some((x) =>
        x.round === r && x.what === "manifest" && attackers.includes(x.peer)
      ) || attackerAccounts.includes(committers[r])
    )
    : all.filter((r) =>
      announced.has(r) && r >= (FROM_ROUND_1.includes(o.attack!) ? 1 : 0)
    );
  const credited = (rs: number[]) =>
    rs.reduce(
      (sum, r) =>
        sum +
        attackerAccounts.reduce(
          (s, a) => s + Number(credits.get(r)?.get(a) ?? 0n),
          0,
        ),
      0,
    );
  const creditedTo = (r: number, peer: string) =>
    credits.get(r)?.has(accountOf.get(peer)!.toLowerCase()) ?? false;
  const falsePositives: AttackRunResult["falsePositives"] = [];
  for (const r of all) {
    for (const i of honest) {
      const peer = ids[i];
      const refused = refusals.find((x) => x.round === r && x.peer === peer);
      const failed = audits.find((a) =>
        a.round === r && a.peer === peer && !a.passed
      );
      if (failed) {
        falsePositives.push({ round: r, peer, why: `audit:${failed.check}` });
      } else if (refused) {
        falsePositives.push({
          round: r,
          peer,
          why: `${refused.what}:${refused.reason}`,
        });
      } else if (!creditedTo(r, peer)) {
        falsePositives.push({ round: r, peer, why: "not credited" });
      }
    }
  }
  for (const i of honest) {
    if (slashed.has(accountOf.get(ids[i])!.toLowerCase())) {
      falsePositives.push({ round: -1, peer: ids[i], why: "slashed" });
    }
  }
  if (
    exiter !== null && slashed.has(accountOf.get(exiter)!.toLowerCase())
  ) {
    falsePositives.push({ round: -1, peer: exiter, why: "slashed" });
  }
  const signerExitedFirst = exiter === null
    ? null
    : await exitedBeforeSlash(c, job, accountOf.get(exiter)!, attackerAccounts);
  const last = rounds.at(-1)!;
  return {
    attack: o.attack,
    peers: o.peers,
    attackers,
    heldoutLoss: [...last.records.values()][0].valLoss,
    attackedRounds,
    detectedRounds: attackedRounds.filter((r) => blames(r, attackers)),
    failedAuditRounds: attackedRounds.filter((r) =>
      audits.some((a) =>
        a.round === r && !a.passed && attackers.includes(a.peer)
      )
    ),
    creditedToAttackers: o.attack !== null && SLASHED_ATTACKS.includes(o.attack)
      ? contributionLeft
      : credited(attackedRounds),
    creditedToAttackersAllRounds: credited(all),
    honestCredit: {
      credited: all.reduce(
        (n, r) => n + honest.filter((i) => creditedTo(r, ids[i])).length,
        0,
      ),
      of: all.length * honest.length,
    },
    slashed: attackers.length > 0 &&
      attackerAccounts.every((a) => slashed.has(a)),
    contributionLeft,
    attackerPhases,
    signerExitedFirst,
    falsePositives,
    refusals,
    audits: {
      passed: audits.filter((a) => a.passed).length,
      failed: audits.filter((a) => !a.passed).length,
    },
    auditOverhead: audits.reduce((s, a) => s + a.steps, 0) /
      (o.spec.innerSteps *
        rounds.reduce(
          (s, r) =>
            s + [...r.records.values()].filter((x) => x.contributed).length,
          0,
        )),
  };
}

/**
 * How long a finished run waits for a slash still on its way, ms: it polls
 * the chain and stops at the slash, so only a run that would fail waits it
 * all. Under a full suite on 2 cores a refuted accuser's slash was seen to
 * land more than 60 s after the last round.
 */
const SLASH_GRACE_MS = 150_000;

/** Resolves once every one of `peers` is slashed in the job, or after `ms`. */
async function slashedWithin(
  c: JobCluster,
  peers: readonly string[],
  ms: number,
): Promise<void> {
  const job = cidToBytes32(c.job.id);
  const accounts = peers.map((p) =>
    c.slots.find((s) => s.registration.peerId === p)!.registration.address
      .toLowerCase()
  );
  const end = Date.now() + ms;
  while (Date.now() < end) {
    const slashed = await slashedAccounts(c.chain.owner, job);
    if (accounts.every((a) => slashed.has(a))) return;
    await new Promise((r) => setTimeout(r, 500));
  }
}
