/**
 * What one peer records about each round it saw committed: loss, leader,
 * checkpoint, transaction, and the bytes it sent, set against what
 * synchronous data-parallel training would have sent for the same steps;
 * and every delta or manifest it refused, with the peer to blame.
 *
 * @module
 */
import type { AuditCheck } from "../../../protocol/messages/messages.ts";
import type { JobSpec } from "../../../protocol/spec/job_spec.ts";
import type { RoundManifest } from "../../../protocol/round/round_manifest.ts";
import { Histogram } from "./histogram.ts";
import { StepLog } from "./step_log.ts";

/** Upper bounds of the commit latency histogram, seconds. */
export const COMMIT_LATENCY_BOUNDS = [
  0.01,
  0.025,
  0.05,
  0.1,
  0.25,
  0.5,
  1,
  2.5,
  5,
  10,
  30,
];

/** One committed round as this peer saw it. */
export interface RoundRecord {
  round: number;
  /** CID of C(round + 1). */
  checkpoint: string;
  /** Peer id that aggregated it, when known. */
  leader: string | null;
  /** The commit transaction, when known. */
  tx: string | null;
  contributors: number;
  /**
   * Slices its update was cut into and published by, in a job sharded by
   * slices (each verifier recomputed a few of them); 0 otherwise.
   */
  slices: number;
  /** Token-weighted mean training loss the contributors reported. */
  trainLoss: number | null;
  /** Held-out loss of C(round + 1), measured by this peer. */
  valLoss: number;
  /** Whether this peer's delta is in the round. */
  contributed: boolean;
  /**
   * Tokens this peer's delta went in with (fewer than a full round's when
   * it took a smaller share of the steps); 0 when it is not in the round.
   */
  tokens: number;
  /**
   * Whether this peer's steps for the round started before the chain
   * committed C(round), from its own preview of it or trained ahead (see
   * the round machine's `preview` and `trainAhead`): the commit cost it no
   * idle time.
   */
  early: boolean;
  /** Bytes this peer sent during the round (gossip and blobs). */
  bytesSent: number;
  /**
   * Slice steps (a slice's screen sums, or its update slice) this peer
   * computed during the round, as a slice's producer or as a leader
   * computing what its producers left unsettled (slice_plan.ts).
   */
  slicesComputed: number;
  /**
   * Bytes of other peers' work records and states this peer fetched to
   * audit them during the round: verification traffic, not training's
   * (what its peers served for audits, summed over peers).
   */
  auditBytes: number;
  /**
   * Bytes a peer would send in the round under synchronous data-parallel
   * training: a ring all-reduce of fp32 gradients every inner step.
   */
  dataParallelBytes: number;
  /** Time this peer spent in training steps during the round, ms. */
  trainMs: number;
  /**
   * Time its trainer computed during the round, ms: the training steps,
   * and the held-out evaluations and audit replays between them.
   */
  busyMs: number;
  /** Wall time from entering the round to its commit being seen, ms. */
  wallMs: number;
}

/**
 * A delta or manifest this peer refused: a delta left out of its aggregate
 * (unavailable, malformed, bound elsewhere, screened out as no work) or a
 * manifest it would not attest (censoring, tampered, miscounted).
 */
export interface Refusal {
  round: number;
  /** The peer that sent what was refused. */
  peer: string;
  /** A fault notice (about a slice of a manifest) found false, besides. */
  what: "delta" | "manifest" | "fault";
  /** A short code, e.g. "wrong-round", "zero", "censored". */
  reason: string;
}

/** Slashing evidence this peer submitted and saw land. */
export interface SlashRecord {
  /** The round the offence was in. */
  round: number;
  account: string;
  /** The registry's evidence kind: 1 equivocation, 2 failed audit. */
  kind: number;
  tx: string;
}

/** A round whose work this peer lost and declared lost on chain. */
export interface LostRecord {
  round: number;
  /** Credit given back. */
  tokens: number;
  tx: string;
}

/** One segment audit this peer ran (node/round/audit/audit.ts). */
export interface AuditRecord {
  /** The round audited. */
  round: number;
  /** The contributor audited. */
  peer: string;
  segment: number;
  passed: boolean;
  /** Passed bit for bit (same kernel build) rather than within tolerance. */
  exact?: boolean;
  /** For a pass: the replay's distance from the committed end over progress. */
  drift?: number;
  /**
   * For a pass: loss on one of the peer's batches at C(r) and at its final
   * state (Templar's check, recorded).
   */
  loss?: { before: number; after: number };
  /** The check that failed, for a failure. */
  check?: AuditCheck;
  /** Steps re-run (the segment's length; 0 when it failed before replay). */
  steps: number;
  /** Wall time of the audit, fetches and replay, ms. */
  ms: number;
}

/** Refusals kept for reports; the counts keep going. */
export const KEEP_REFUSALS = 512;

/** A round's own counters, cut when the next round begins. */
export interface RoundCounters {
  bytesSent: number;
  slicesComputed: number;
  auditBytes: number;
  trainMs: number;
  busyMs: number;
  wallMs: number;
}

/**
 * Bytes one of `peers` sends per inner step in a ring all-reduce of
 * `params` fp32 gradients: 2 (n − 1) / n × 4 × params.
 */
export function allReduceBytes(params: number, peers: number): number {
  return peers < 2 ? 0 : (2 * (peers - 1) / peers) * 4 * params;
}

/** Where a {@linkcode RoundLedger}'s records come from and go. */
export interface RoundLedgerOptions {
  records?: readonly RoundRecord[];
  onRecord?: (record: RoundRecord) => void;
  /** The trainer's compute time so far, ms (RoundTrainer `busyMs`). */
  busyMs?: () => number;
}

/** The rounds one peer has seen, with the counters behind them. */
export class RoundLedger {
  readonly records: RoundRecord[] = [];
  /** The loss of every inner step this peer trained (the last few thousand). */
  readonly steps: StepLog = new StepLog();
  /** Seconds from sending this peer's commit transactions to their receipts. */
  readonly commitLatency: Histogram = new Histogram(COMMIT_LATENCY_BOUNDS);
  /** The latest refusals, oldest first (at most KEEP_REFUSALS). */
  readonly refusals: Refusal[] = [];
  /** Refusals ever made, by `what:reason`. */
  readonly refused: Map<string, number> = new Map();
  /** Slashings this peer's evidence brought about. */
  readonly slashes: SlashRecord[] = [];
  /** Rounds whose work this peer declared lost. */
  readonly lost: LostRecord[] = [];
  /** The latest audits this peer ran, oldest first (at most KEEP_REFUSALS). */
  readonly audits: AuditRecord[] = [];
  /** Audits ever run: passed, failed. */
  readonly auditCounts = { passed: 0, failed: 0 };
  readonly #commits = new Map<number, { tx: string; peer: string }>();
  #sent = 0;
  #slicesComputed = 0;
  #auditBytes = 0;
  #trainMs = 0;
  #busyAt = 0;
  #enteredAt = Date.now();
  /** Rounds started early whose records are not written yet. */
  readonly #early = new Set<number>();

  readonly #onRecord: (record: RoundRecord) => void;
  readonly #busyClock: () => number;

  /**
   * A ledger that starts from the `records` kept before a restart (in
   * round order) and hands each new record to `onRecord` to keep.
   */
  constructor(
    readonly spec: JobSpec,
    readonly parameterCount: number,
    { records = [], onRecord = () => {}, busyMs = () => 0 }:
      RoundLedgerOptions = {},
  ) {
    this.records.push(...records);
    this.#onRecord = onRecord;
    this.#busyClock = busyMs;
    this.#busyAt = busyMs();
  }

  /** Counts bytes this peer fetched to audit other peers' work. */
  noteAuditFetched(bytes: number): void {
    this.#auditBytes += bytes;
  }

  /** Counts bytes this peer sent (published gossip, served blobs). */
  noteSent(bytes: number): void {
    this.#sent += bytes;
  }

  /** Counts a slice step this peer computed (see `slicesComputed`). */
  noteSliceComputed(): void {
    this.#slicesComputed++;
  }

  /** Records a refusal, once per round, peer, kind and reason. */
  noteRefusal(r: Refusal): void {
    if (
      this.refusals.some((x) =>
        x.round === r.round && x.peer === r.peer && x.what === r.what &&
        x.reason === r.reason
      )
    ) return;
    this.refusals.push(r);
    if (this.refusals.length > KEEP_REFUSALS) this.refusals.shift();
    const key = `${r.what}:${r.reason}`;
    this.refused.set(key, (this.refused.get(key) ?? 0) + 1);
  }

  /** Records a refusal of `d`, a peer's delta of a round, for `reason`. */
  refuseDelta(d: { round: number; peer: string }, reason: string): void {
    this.noteRefusal({ round: d.round, peer: d.peer, what: "delta", reason });
  }

  /** Records a slashing this peer's evidence brought about. */
  noteSlash(s: SlashRecord): void {
    this.slashes.push(s);
  }

  /** Records a round whose work this peer declared lost. */
  noteLost(l: LostRecord): void {
    this.lost.push(l);
  }

  /** Records an audit this peer ran. */
  noteAudit(a: AuditRecord): void {
    this.audits.push(a);
    if (this.audits.length > KEEP_REFUSALS) this.audits.shift();
    this.auditCounts[a.passed ? "passed" : "failed"]++;
  }

  /** Notes that `round`'s steps started before its commit. */
  noteEarlyStart(round: number): void {
    this.#early.add(round);
  }

  /** Counts time spent in training steps. */
  noteTraining(ms: number): void {
    this.#trainMs += ms;
  }

  /**
   * Who committed `round` and in which transaction: the first notice a
   * member gossiped, unless this peer `own`s the commit (its receipt is
   * certain, a notice only claimed). zoo_round reads the chain's own.
   */
  noteCommit(round: number, tx: string, peer: string, own = false): void {
    if (own || !this.#commits.has(round)) {
      this.#commits.set(round, { tx, peer });
    }
  }

  /**
   * Ends the current round's counters at `at` (Date.now() time), when the
   * next round begins, and starts the next round's. Synchronous, so what
   * the next round sends or trains while the record is being completed
   * (a manifest fetch, an evaluation) is counted in the next round.
   */
  cut(at: number): RoundCounters {
    const counters = {
      bytesSent: this.#sent,
      slicesComputed: this.#slicesComputed,
      auditBytes: this.#auditBytes,
      trainMs: this.#trainMs,
      busyMs: this.#busyClock() - this.#busyAt,
      wallMs: at - this.#enteredAt,
    };
    this.#busyAt += counters.busyMs;
    this.#sent = 0;
    this.#slicesComputed = 0;
    this.#auditBytes = 0;
    this.#trainMs = 0;
    this.#enteredAt = at;
    return counters;
  }

  /**
   * Records `round` once its checkpoint is in hand, with the counters
   * {@linkcode cut} gave when it ended; `manifest` is the one that
   * produced the checkpoint when this peer saw it. Records stay in round
   * order, one per round: a round closed again keeps its first record.
   */
  closeRound(r: {
    round: number;
    counters: RoundCounters;
    checkpoint: string;
    manifest: RoundManifest | null;
    valLoss: number;
    self: string;
    livePeers: number;
  }): RoundRecord {
    const m = r.manifest;
    const tokens = m?.contributions.reduce((s, c) => s + c.tokens, 0) ?? 0;
    const trainLoss = m && tokens > 0
      ? m.contributions.reduce((s, c) => s + c.loss * c.tokens, 0) / tokens
      : null;
    const commit = this.#commits.get(r.round);
    for (const e of this.#early) if (e < r.round) this.#early.delete(e);
    const peers = Math.max(m?.contributions.length ?? 0, r.livePeers);
    const known = this.records.find((x) => x.round === r.round);
    if (known) return known;
    const record: RoundRecord = {
      round: r.round,
      checkpoint: r.checkpoint,
      leader: m?.leader ?? commit?.peer ?? null,
      tx: commit?.tx ?? null,
      contributors: m?.contributions.length ?? 0,
      slices: m?.shards?.slices ?? 0,
      trainLoss,
      valLoss: r.valLoss,
      contributed: m?.contributions.some((c) => c.peer === r.self) ?? false,
      tokens: m?.contributions.find((c) => c.peer === r.self)?.tokens ?? 0,
      early: this.#early.delete(r.round),
      dataParallelBytes: this.spec.innerSteps *
        allReduceBytes(this.parameterCount, peers),
      ...r.counters,
    };
    const after = this.records.findIndex((x) => x.round > r.round);
    this.records.splice(after < 0 ? this.records.length : after, 0, record);
    this.#onRecord(record);
    return record;
  }
}
