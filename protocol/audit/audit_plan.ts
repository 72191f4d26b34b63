/**
 * The audit plan of a round: which contributors' work is re-executed,
 * which segment of their trajectory, and by which members. Every peer
 * computes the same plan alone from public inputs and a seed that no peer
 * controls in advance: the CID of the round's new checkpoint C(r + 1),
 * fixed only once every delta is in (a contributor cannot choose its delta
 * to dodge an audit without changing the seed it cannot predict).
 *
 * A contributor is audited with probability `rate`, on one of its
 * `segments` segments (steps [k·s, (k+1)·s) of its H inner steps), by
 * `auditors` other members ranked by hash. A peer that skipped a fraction
 * q of its segments is caught in a round with probability rate·q, and
 * within n rounds with 1 − (1 − rate·q)^n.
 *
 * A suspect (see {@linkcode suspectsOf}) is audited for certain, on every
 * segment, each by its own `auditors` ranked by hash with the segment in
 * the input, so the extra replays spread over the members: a peer that
 * skipped any segment is caught in a round it is suspected in. Where one
 * replay checks the whole round (`wholeRound`), a suspect's one audit is
 * of its last segment.
 *
 * Hash inputs follow assignment.ts: UTF-8 fields joined by 0x00, SHA-256,
 * compared as big-endian numbers.
 *
 * Pure: no I/O.
 *
 * @module
 */
import { createHash } from "node:crypto";
import { ProtocolError } from "../errors.ts";
import { comparePeerIds } from "../peers/peer_table.ts";

/** Inputs of {@linkcode planAudits}. */
export interface AuditPlanParams {
  /** The unpredictable seed: the CID of C(round + 1). */
  readonly seed: string;
  /** The peers whose deltas went into the round. */
  readonly contributors: readonly string[];
  /** The members that may audit (live ones); contributors among them too. */
  readonly members: readonly string[];
  /** Segments in a contributor's trajectory (H / s), at least 1. */
  readonly segments: number;
  /** Chance that a contributor is audited, in [0, 1]. */
  readonly rate: number;
  /** Auditors per audited contributor, at least 1. */
  readonly auditors: number;
  /** Contributors audited on every segment (none by default). */
  readonly suspects?: readonly string[];
  /**
   * One replay checks every segment (a job that resets moments replays
   * from the round's public start, and from its last segment to the
   * final state): a suspect gets one audit, of its last segment, instead
   * of one per segment.
   */
  readonly wholeRound?: boolean;
}

/** One audited segment of a contributor's work in a round. */
export interface Audit {
  /** The contributor audited. */
  readonly peer: string;
  /** The segment re-executed: steps [segment·s, (segment+1)·s). */
  readonly segment: number;
  /**
   * Who re-executes it, best-ranked first; fewer than asked for (or none)
   * when too few other members are live.
   */
  readonly auditors: readonly string[];
}

const utf8 = new TextEncoder();
const TWO_53 = 2 ** 53;

/**
 * The audits of a round in peer-id order: one per audited contributor, and
 * one per segment for a suspect, in segment order.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { planAudits } from "./audit_plan.ts";
 *
 * const plan = planAudits({
 *   seed: "bafkreigh2akiscaildcqabsyg3dfr6chu3fgpregiymsck7e7aqa4s52zy",
 *   contributors: ["12D3KooWA", "12D3KooWB", "12D3KooWC"],
 *   members: ["12D3KooWA", "12D3KooWB", "12D3KooWC"],
 *   segments: 16,
 *   rate: 1,
 *   auditors: 1,
 * });
 * assert(plan.length === 3);
 * assert(plan.every((a) => !a.auditors.includes(a.peer)));
 * ```
 */
export function planAudits(p: AuditPlanParams): Audit[] {
  checkParams(p);
  const members = [...new Set(p.members)];
  const suspects = new Set(p.suspects ?? []);
  const ranked = (peer: string, ...by: string[]) =>
    members
      .filter((m) => m !== peer)
      .map((m) => ({ m, s: score(p.seed, "auditor", peer, ...by, m) }))
      .sort((a, b) => compareBytes(b.s, a.s) || comparePeerIds(a.m, b.m))
      .slice(0, p.auditors)
      .map((x) => x.m);
  return [...new Set(p.contributors)]
    .sort(comparePeerIds)
    .flatMap((peer): Audit[] => {
      if (suspects.has(peer)) {
        const from = p.wholeRound ? p.segments - 1 : 0;
        return Array.from({ length: p.segments - from }, (_, i) => ({
          peer,
          segment: from + i,
          auditors: ranked(peer, `segment ${from + i}`),
        }));
      }
      if (uniform(score(p.seed, "audit", peer)) >= p.rate) return [];
      return [{
        peer,
        segment: Number(
          toBigInt(score(p.seed, "segment", peer)) % BigInt(p.segments),
        ),
        auditors: ranked(peer),
      }];
    });
}

/**
 * Rounds for which a peer stays a suspect after the round whose manifest
 * left its delta out, that round included.
 */
export const SUSPICION_ROUNDS = 4;

/**
 * The suspects of `round`'s plan: the peers whose delta a committed
 * manifest of the last {@linkcode SUSPICION_ROUNDS} rounds, `round`'s own
 * included, left out (screened out as no work, or refused for a manifest
 * that failed verification; not one left out `unserved`, see
 * {@linkcode auditedDeltas}). Every peer reads the same committed
 * manifests, so every peer draws the same plan. A peer left out once is
 * then audited on every segment: a partial cheater or a lying start that
 * the screen noticed is convicted on its next listed delta, not at the
 * sampling rate.
 *
 * @param manifests committed manifests held, any rounds, any order
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { suspectsOf } from "./audit_plan.ts";
 *
 * const left = (round: number, peer: string) => ({
 *   round,
 *   excluded: [{ peer, reason: "misaligned" }],
 * });
 * assert.deepEqual(suspectsOf([left(3, "12D3KooWA")], 5), ["12D3KooWA"]);
 * assert.deepEqual(suspectsOf([left(3, "12D3KooWA")], 7), []);
 * ```
 */
export function suspectsOf(
  manifests: Iterable<
    {
      readonly round: number;
      readonly excluded: readonly { peer: string; reason: string }[];
    }
  >,
  round: number,
): string[] {
  const suspects = new Set<string>();
  for (const m of manifests) {
    if (m.round > round || m.round + SUSPICION_ROUNDS <= round) continue;
    for (const e of m.excluded) {
      if (e.reason !== UNSERVED) suspects.add(e.peer);
    }
  }
  return [...suspects].sort(comparePeerIds);
}

const UNSERVED = "unserved";

/**
 * The deltas a committed manifest puts to audit: every one it lists,
 * aggregated or left out, but those left out `unserved`. Those no peer
 * fetched in time: nothing of them was aggregated, credited or judged by
 * the screen, so there is no claim to check, and their author may be an
 * honest peer that crashed with them (and lost them with its disk) while
 * the leader waited. Their author earns nothing for them either way.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { auditedDeltas } from "./audit_plan.ts";
 *
 * const delta = (peer: string) => ({ peer, delta: `cid-${peer}` });
 * const audited = auditedDeltas({
 *   contributions: [delta("A")],
 *   excluded: [
 *     { ...delta("B"), reason: "misaligned" },
 *     { ...delta("C"), reason: "unserved" },
 *   ],
 * });
 * assert.deepEqual(audited.map((d) => d.peer), ["A", "B"]);
 * ```
 */
export function auditedDeltas(
  m: {
    readonly contributions: readonly { peer: string; delta: string }[];
    readonly excluded: readonly {
      peer: string;
      delta: string;
      reason: string;
    }[];
  },
): { peer: string; delta: string }[] {
  return [
    ...m.contributions,
    ...m.excluded.filter((e) => e.reason !== UNSERVED),
  ];
}

function score(...fields: string[]): Uint8Array {
  return new Uint8Array(
    createHash("sha256").update(utf8.encode(fields.join("\0"))).digest(),
  );
}

/** The hash's first 53 bits as a number in [0, 1). */
function uniform(h: Uint8Array): number {
  let x = 0;
  for (let i = 0; i < 7; i++) x = x * 256 + h[i];
  return Math.floor(x / 8) / TWO_53;
}

function toBigInt(h: Uint8Array): bigint {
  let x = 0n;
  for (const b of h) x = (x << 8n) | BigInt(b);
  return x;
}

function compareBytes(a: Uint8Array, b: Uint8Array): number {
  for (let i = 0; i < a.length; i++) {
    if (a[i] !== b[i]) return a[i] - b[i];
  }
  return 0;
}

function checkParams(p: AuditPlanParams): void {
  const bad = (field: string, problem: string, value: unknown) =>
    new ProtocolError(
      `Cannot plan audits as ${field} ${problem}: current value is ${value}`,
      field,
    );
  if (!Number.isSafeInteger(p.segments) || p.segments < 1) {
    throw bad("segments", "must be an integer >= 1", p.segments);
  }
  if (!(p.rate >= 0 && p.rate <= 1)) {
    throw bad("rate", "must be a number in [0, 1]", p.rate);
  }
  if (!Number.isSafeInteger(p.auditors) || p.auditors < 1) {
    throw bad("auditors", "must be an integer >= 1", p.auditors);
  }
  for (
    const id of [p.seed, ...p.contributors, ...p.members, ...p.suspects ?? []]
  ) {
    if (id.length === 0 || id.includes("\0")) {
      throw bad("ids", "must be non-empty without 0x00", JSON.stringify(id));
    }
  }
}
