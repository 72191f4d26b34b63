/**
 * The audit of one segment of a contributor's round: re-execution of the
 * steps it committed to, from its own committed state, on the batches the
 * protocol prescribes, compared with the state it committed at the
 * segment's end. The checks, in order (the first that fails is the
 * verdict's reason; the rules are protocol/audit/segment_checks.ts's):
 *
 * 1. `record`: the work record hashes to the commitment's `data` (its
 *    assignment peers, the peer among them, where its round started) and
 *    `trajectory` (its states);
 * 2. `start`: whatever segment is drawn, the round started where the
 *    protocol says: from C(r) (trained ahead, from its eager estimate) and
 *    from zero moments or those its round r − 1 ended with (audit_start.ts);
 *    then the state at the segment's start is served (verified by its CID,
 *    which is its committed hash) at the right step, with moments an
 *    optimizer can reach (kernels/moment_bounds.ts: moments made up at an earlier
 *    bound are caught here for as long as they stay out of reach);
 *    In a job that resets moments every round (`moments: "reset"`) the
 *    round starts from C(r) with zero moments, public: state 0 must hash
 *    to that, and nothing is fetched for the replay, which runs from step
 *    0 to the segment's end ({@linkcode Auditor.audit});
 * 3. `replay`: the segment's steps re-run from that state (parameters,
 *    AdamW moments, step counter) on the peer's prescribed batches
 *    (`roundSampler` over its chunks assigned among the record's peers)
 *    reach the committed end state: bit for bit on the same kernel build;
 *    on another build within `CROSS_KERNEL_TOLERANCE` of the segment's own
 *    progress;
 * 4. `delta`: the announced delta blob is exactly the quantized
 *    C(r) − θ_H of the committed final state, bound to the peer and round.
 *
 * A state that cannot be fetched throws `StateUnserved`: the
 * peer may be restarting, so the audit duty asks again until its serve
 * window closes, and fails the `start` check only on proof (audit_duty.ts):
 * bytes committed under the state's CID that are no state, or the peer's
 * own "not found" while it must still keep the state. Where the round
 * started is not judged when this peer cannot check it on its own account
 * (it never saw the peer's announcement of round r − 1, or lacks C(r − 1)):
 * the rest of the audit still is, and a pass says so (`unjudged`).
 *
 * @module
 */
import { splitTrainVal } from "../../../protocol/content/dataset.ts";
import type { Dataset } from "../../../protocol/content/dataset.ts";
import type {
  TokenBatch,
  Trainer,
  TrainerInit,
} from "../../../kernels/trainer.ts";
import { assignChunks } from "../../../protocol/peers/assignment.ts";
import {
  cidForBytes,
  cidToString,
  parseCid,
} from "../../../protocol/content/cid.ts";
import {
  type JobSpec,
  resetsMoments,
} from "../../../protocol/spec/job_spec.ts";
import type {
  AuditCheck,
  DeltaAnnounce,
} from "../../../protocol/messages/messages.ts";
import { deltaBlocks } from "../../../protocol/round/delta_pieces.ts";
import { pseudoGradient } from "../../../protocol/aggregation/pseudo_gradient.ts";
import { parameterCount } from "../../../protocol/round/round_checkpoint.ts";
import {
  stateHash,
  type TrainingState,
} from "../../../protocol/content/state_hash.ts";
import type { WorkRecord } from "../../../protocol/audit/work_record.ts";
import {
  recordFault,
  replayFault,
  replayReach,
  type SegmentSpan,
  segmentSpan,
  startStepFault,
} from "../../../protocol/audit/segment_checks.ts";
import type { AuditVerdict } from "../services/audit_verdict.ts";
import { roundSampler } from "../trainer/round_sampler.ts";
import type { WorkReader } from "./work_reader.ts";
import { NotJudged, served } from "./audit_errors.ts";
import {
  sameBytes,
  StartCheck,
  type StartCheckOptions,
} from "./audit_start.ts";

/** What an {@linkcode Auditor} works with. */
export interface AuditorOptions {
  jobId: string;
  spec: JobSpec;
  dataset: Dataset;
  /** Makes the trainer replays run on (the auditor's own build). */
  createTrainer: (init: TrainerInit) => Trainer;
  /**
   * Reads committed work from the peer that committed it, each block
   * verified by its CID (work_reader.ts), and checkpoints.
   */
  work: Pick<
    WorkReader,
    "state" | "params" | "head" | "record" | "checkpoint"
  >;
  /** The values of an announced delta, bound to it (delta_reader.ts). */
  delta: (msg: DeltaAnnounce) => Promise<Float32Array>;
  /** The peer's listed delta of the round before (audit_start.ts). */
  previous: StartCheckOptions["previous"];
  /**
   * Runs an audit's replay when the compute is free and the peer's own
   * steps need not wait for it (e.g. once its round has taken them,
   * `RoundTrainer.afterSteps`); `round` is the audited round. At once when
   * not given.
   */
  afterSteps?: <T>(task: () => Promise<T>, round: number) => Promise<T>;
  /**
   * Runs a short use of the replay trainer (two evaluations) when the
   * compute is free, e.g. `RoundTrainer.exclusive`, between two training
   * steps; at once when not given.
   */
  exclusive?: <T>(task: () => Promise<T>) => Promise<T>;
}

/** One segment to audit. */
export interface SegmentAudit {
  /** The contributor's announcement: its commitment's fields. */
  msg: DeltaAnnounce;
  record: WorkRecord;
  segment: number;
  /** C(round)'s parameters. */
  parent: Float32Array;
  /**
   * Others have failed the segment already (AuditBook's `urgent`): the
   * replay runs between the peer's steps, not after them.
   */
  urgent?: boolean;
}

/** Re-executes committed segments of other peers' rounds. */
export class Auditor {
  readonly #o: AuditorOptions;
  readonly #trainChunks: readonly number[];
  #trainer: Trainer | null = null;
  readonly #start: StartCheck;
  /** State 0 of a round that resets moments, hashed once per C(r). */
  readonly #publicStarts = new WeakMap<Float32Array, Uint8Array>();

  constructor(o: AuditorOptions) {
    this.#o = o;
    this.#trainChunks = splitTrainVal(o.dataset, o.spec.dataset.valFraction)
      .train;
    this.#start = new StartCheck(o);
  }

  /**
   * The verdict on `a` (see the module doc); throws
   * `StateUnserved` when a state it needs is not served.
   */
  async audit(a: SegmentAudit): Promise<AuditVerdict> {
    const { msg, record } = a;
    const span = segmentSpan(this.#o.spec, msg.tokens, a.segment);
    const misrecorded = recordFault(this.#o.jobId, msg, record, span);
    if (misrecorded) return fail("record", misrecorded);
    const fetch = <T>(
      k: number,
      get: (cid: string, peer: string) => Promise<T>,
    ) =>
      served(`its state ${k}`, msg.peer, () => get(record.states[k], msg.peer));
    const replayed = resetsMoments(this.#o.spec)
      ? await this.#replayFromStart(a, span, fetch)
      : await this.#replayFromState(a, span, fetch);
    if ("passed" in replayed) return replayed;
    const { end, batch, exact, drift, committedEnd, final, unjudged } =
      replayed;
    // The last segment's end is the final state: replayed bit for bit,
    // or fetched.
    const finalParams = (final ? await final : committedEnd ?? end).params;
    const { root } = await deltaBlocks(this.#o.spec, {
      job: msg.job,
      round: msg.round,
      parent: msg.parent,
      peer: msg.peer,
    }, pseudoGradient(a.parent, finalParams));
    if (cidToString(await cidForBytes(root)) !== msg.delta) {
      return fail("delta", "its delta is not C(r) minus its final state");
    }
    return {
      passed: true,
      exact,
      drift,
      loss: await this.#lossCheck(batch, a.parent, finalParams),
      ...(unjudged === undefined ? {} : { unjudged }),
    };
  }

  /**
   * A job that resets moments (`moments: "reset"`) starts every round from
   * C(r) with zero moments, which every peer holds: the replay runs from
   * there to the end of the segment drawn, or in the round's second half
   * to the final state (`replayReach`), and fetches no state but the final
   * parameters for the delta check when it stops short of them. It pays
   * compute, 0.64 of a round per audit on average, for the bytes of the
   * state at the segment's start.
   */
  async #replayFromStart(
    a: SegmentAudit,
    span: SegmentSpan,
    fetch: StateFetch,
  ): Promise<Replayed | AuditVerdict> {
    const { record } = a;
    if (record.from !== "" || record.shifted !== 0) {
      return fail(
        "start",
        "it names a start other than C(r) with zero moments, in a job that resets them every round",
      );
    }
    const n = a.parent.length;
    const start: TrainingState = {
      step: 0,
      params: a.parent,
      m: new Float32Array(n),
      v: new Float32Array(n),
    };
    let hash = this.#publicStarts.get(a.parent);
    if (!hash) this.#publicStarts.set(a.parent, hash = stateHash(start));
    const committedStart = parseCid(record.states[0]).multihash.digest;
    if (!sameBytes(hash, committedStart)) {
      return fail("start", "its state 0 is not C(r) with zero moments");
    }
    const reach = replayReach(a.segment, span.bounds.length - 1);
    return await this.#replayAndCompare(
      a,
      { ...segmentSpan(this.#o.spec, a.msg.tokens, reach), from: 0 },
      reach,
      fetch,
      start,
      0,
      null,
    );
  }

  /**
   * A job that carries moments: the round's start is checked
   * (audit_start.ts), then the state at the segment's start is fetched and
   * the segment alone replayed from it.
   */
  async #replayFromState(
    a: SegmentAudit,
    span: SegmentSpan,
    fetch: StateFetch,
  ): Promise<Replayed | AuditVerdict> {
    const { record } = a;
    const { to } = span;
    const work = this.#o.work;
    // What this peer cannot judge of the start on its own account does not
    // spare the rest of the audit.
    let unjudged: string | undefined;
    try {
      const fault = await this.#start.fault(a, fetch(0, work.head.bind(work)));
      if (fault) return fail("start", fault);
    } catch (err) {
      if (!(err instanceof NotJudged)) throw err;
      unjudged = err.message;
    }
    const start = await fetch(a.segment, work.state.bind(work));
    const misplaced = startStepFault(a.segment, start.step, span);
    if (misplaced) return fail("start", misplaced);
    const unreachable = this.#start.unreachable(a.segment, start);
    if (unreachable) return fail("start", unreachable);
    const params = work.params.bind(work);
    // The state a shift started from, before the replay, so the replay is
    // one task.
    const zero = record.shifted > 0 && record.shifted === to
      ? (a.segment === 0 ? start : await fetch(0, params))
      : null;
    const replayed = await this.#replayAndCompare(
      a,
      span,
      a.segment,
      fetch,
      start,
      span.from,
      zero,
    );
    return "passed" in replayed ? replayed : { ...replayed, unjudged };
  }

  /**
   * Replays steps [from, span.to) from `start`, to the end of segment
   * `reach` (`span`'s), and compares the end with the committed state
   * there: bit for bit on the same kernel build, within
   * `CROSS_KERNEL_TOLERANCE` of the progress since `start` on another.
   * The final state's parameters, for the delta check, are fetched while
   * the replay waits for the compute, unless it reaches them.
   */
  async #replayAndCompare(
    a: SegmentAudit,
    span: SegmentSpan,
    reach: number,
    fetch: StateFetch,
    start: TrainingState,
    from: number,
    zero: Pick<TrainingState, "params"> | null,
  ): Promise<Replayed | AuditVerdict> {
    const { msg, record } = a;
    const { bounds, to } = span;
    const work = this.#o.work;
    const params = work.params.bind(work);
    const lastSegment = reach + 2 === bounds.length;
    const final = lastSegment ? null : fetch(bounds.length - 1, params);
    final?.catch(() => {}); // awaited by the caller, after the verdict
    const claimed = parseCid(record.states[reach + 1]).multihash.digest;
    const replayTask = async () => {
      const { end, batch } = await this.#replay(a, start, from, to, zero);
      return { end, batch, exact: sameBytes(stateHash(end), claimed) };
    };
    const { afterSteps, exclusive } = this.#o;
    const { end, batch, exact } = a.urgent
      ? await (exclusive ? exclusive(replayTask) : replayTask())
      : await (afterSteps ? afterSteps(replayTask, msg.round) : replayTask());
    let drift = 0;
    let committedEnd: Pick<TrainingState, "params"> | null = null;
    if (!exact) {
      const kernels = { kernel: this.#kernel(), theirKernel: msg.kernel };
      let off: number | undefined, progress: number | undefined;
      if (kernels.kernel !== kernels.theirKernel) {
        // Another build: judged by its distance from the committed end,
        // relative to the progress since the replay's start.
        committedEnd = await fetch(reach + 1, params);
        off = distance(end.params, committedEnd.params);
        progress = distance(committedEnd.params, start.params);
        drift = off / progress;
      }
      const missed = replayFault({ exact, ...kernels, off, progress }, span);
      if (missed) return fail("replay", missed);
    }
    return { end, batch, exact, drift, committedEnd, final };
  }

  /** The loss on `batch` at `before` and at `after` (see AuditVerdict). */
  #lossCheck(
    batch: TokenBatch,
    before: Float32Array,
    after: Float32Array,
  ): Promise<{ before: number; after: number }> {
    const trainer = this.#replayTrainer();
    const exclusive = this.#o.exclusive ?? ((task) => task());
    return exclusive(async () => {
      trainer.setParams(before);
      const lossBefore = await trainer.evalLoss(batch);
      trainer.setParams(after);
      return { before: lossBefore, after: await trainer.evalLoss(batch) };
    });
  }

  /** Releases the replay trainer. */
  dispose(): void {
    this.#trainer?.dispose();
    this.#trainer = null;
  }

  /** The auditor's kernel build. */
  #kernel(): string {
    return this.#replayTrainer().name;
  }

  #replayTrainer(): Trainer {
    this.#trainer ??= this.#o.createTrainer({
      model: this.#o.spec.model,
      adamw: this.#o.spec.inner,
      muon: this.#o.spec.inner.muon,
      params: new Float32Array(parameterCount(this.#o.spec.model)),
    });
    return this.#trainer;
  }

  /** Steps [from, to) of the peer's round from `start`. */
  async #replay(
    a: SegmentAudit,
    start: TrainingState,
    from: number,
    to: number,
    zero: Pick<TrainingState, "params"> | null,
  ): Promise<{ end: TrainingState; batch: TokenBatch }> {
    const { spec, dataset, jobId } = this.#o;
    const { msg, record } = a;
    const H = spec.innerSteps, B = spec.batchSize, T = spec.contextLength;
    const assigned = assignChunks({
      job: jobId,
      round: msg.round,
      peers: record.peers,
      chunks: this.#trainChunks.length,
      weights: record.weights,
    }).get(msg.peer) ?? [];
    const sampler = roundSampler(
      spec,
      dataset,
      msg.round,
      msg.peer,
      assigned.map((i) => this.#trainChunks[i]),
    );
    const trainer = this.#replayTrainer();
    trainer.setParams(start.params);
    trainer.setMoments({ m: start.m, v: start.v });
    trainer.optimizerStep = msg.round * H + from;
    const batch: TokenBatch = {
      inputs: new Int32Array(B * T),
      targets: new Int32Array(B * T),
      B,
      T,
    };
    for (let h = from; h < to; h++) {
      sampler.writeBatch(h, batch.inputs, batch.targets);
      await trainer.step(batch);
      // A CPU trainer's step never yields: gossip and the fetches other
      // peers make of this one's delta must not wait for the whole replay.
      await new Promise((resolve) => setTimeout(resolve, 0));
    }
    const params = await trainer.readParams();
    const { m, v } = await trainer.readMoments();
    if (zero) {
      // Where a peer trained ahead moved onto C(r): by C(r) − θ_0, in
      // float32 as train.ts computes it.
      const by = new Float32Array(params.length);
      for (let i = 0; i < by.length; i++) by[i] = a.parent[i] - zero.params[i];
      for (let i = 0; i < by.length; i++) params[i] += by[i];
    }
    return { end: { step: to, params, m, v }, batch };
  }
}

/** Fetches committed state `k` (a part of it, by `get`) from its peer. */
type StateFetch = <T>(
  k: number,
  get: (cid: string, peer: string) => Promise<T>,
) => Promise<T>;

/** A replay that reached the segment's end as committed. */
interface Replayed {
  end: TrainingState;
  batch: TokenBatch;
  exact: boolean;
  drift: number;
  /** The committed end's parameters, when another build's replay fetched them. */
  committedEnd: Pick<TrainingState, "params"> | null;
  /** The final state's parameters, on their way; null for the last segment. */
  final: Promise<Pick<TrainingState, "params">> | null;
  unjudged?: string;
}

function fail(check: AuditCheck, reason: string): AuditVerdict {
  return { passed: false, check, reason };
}

function distance(a: Float32Array, b: Float32Array): number {
  let s = 0;
  for (let i = 0; i < a.length; i++) s += (a[i] - b[i]) ** 2;
  return Math.sqrt(s);
}
