/**
 * A peer's inner training for the round machine's `train`, `trainAhead`
 * and `rebase` actions: H steps on its assigned chunks, then its
 * pseudo-gradient Δ = C(r) − θ_end, quantized and stored as a block, is
 * handed over for announcement. The blob is bound to its job, round,
 * parent and peer (delta_blob.ts), so it is good for this round only.
 *
 * Training ahead (`overlap`): once its delta for round r is out, the peer
 * goes on with round r+1's steps from θ_local(r) while r is aggregated and
 * committed. When C(r+1) arrives the parameters move onto it between two
 * steps, θ += C(r+1) − θ_local(r), so the rest of the round runs from the
 * committed checkpoint: θ_end = C(r+1) + (the round's own progress) and
 * the delta is C(r+1) − θ_end as without overlap. Steps taken before the
 * move see a stale base, and a whole stale round measurably hurts the
 * model, so at most a tenth of a round's steps (rounded down: none when H
 * < 10) run ahead; then the peer waits for the checkpoint, so every round
 * ends moved onto its own checkpoint.
 *
 * @module
 */
import { assignChunks } from "../../protocol/assignment.ts";
import { encodeDelta } from "../../protocol/delta_blob.ts";
import type { JobSpec } from "../../protocol/job_spec.ts";
import { throughputSteps } from "../../protocol/inner_steps.ts";
import { StateWindow } from "./state_window.ts";
import { ThroughputMeter } from "./throughput_meter.ts";
import { pseudoGradient } from "../../protocol/pseudo_gradient.ts";
import { encodeState } from "../../protocol/state_hash.ts";
import {
  dataHash,
  encodeWorkRecord,
  segmentBounds,
  trajectoryRoot,
} from "../../protocol/work_record.ts";
import type { RoundState } from "../../protocol/round_state.ts";
import type { Progress } from "../p2p/gossip_service.ts";
import type { DeltaChoice, RoundBehaviour } from "./behaviour.ts";
import type { RoundLedger } from "./ledger.ts";
import {
  type RoundTrainer,
  type TrainRoundParams,
  type TrainRoundResult,
} from "./inner_loop.ts";

/** Most of a round's inner steps taken before its checkpoint is known. */
const AHEAD_FRACTION = 0.1;

/**
 * Steps trained before a round's checkpoint must be known: the last
 * segment bound within {@linkcode AHEAD_FRACTION} of the round, as the
 * checkpoint is moved onto only at bounds.
 */
function aheadSteps(steps: number): number {
  const most = Math.floor(steps * AHEAD_FRACTION);
  return segmentBounds(steps).filter((b) => b <= most).at(-1)!;
}

/** A trained round's delta, stored and ready to announce. */
export interface TrainedDelta {
  round: number;
  /** CID of C(round), the base of the delta. */
  parent: string;
  /** CID of the stored, quantized delta. */
  cid: string;
  bytes: number;
  tokens: number;
  loss: number;
  steps: number;
  chunks: number;
  /** CID of the work record: state CIDs and assignment peers. */
  work: string;
  /** The work commitment's `data` and `trajectory`. */
  data: `0x${string}`;
  trajectory: `0x${string}`;
  /** The kernel build that trained. */
  kernel: string;
}

/** What {@linkcode RoundTraining} works with. */
export interface RoundTrainingOptions {
  jobId: string;
  /** This peer's id: its chunk assignment and batch stream. */
  peerId: string;
  spec: JobSpec;
  trainer: RoundTrainer;
  /** Where step losses and training time are counted. */
  ledger: Pick<RoundLedger, "steps" | "noteTraining">;
  /** The machine's current state (its round and live peers). */
  state: () => Pick<RoundState, "round" | "live">;
  /**
   * The training throughput (tokens per second) `peer` last reported in a
   * heartbeat; 0 when unknown. Sizes this peer's share of a round.
   */
  throughput: (peer: string) => number;
  /** Reports progress for heartbeats. */
  progress: (
    p: Partial<Pick<Progress, "round" | "step" | "throughput">>,
  ) => void;
  /**
   * Stores a block (a quantized delta, a training state, a work record);
   * resolves with its CID string.
   */
  store: (bytes: Uint8Array) => Promise<string>;
  /** Deletes a stored block by CID string (states past their window). */
  drop: (cid: string) => Promise<void>;
  /** Announces a trained delta (and tells the machine). */
  announce: (delta: TrainedDelta) => Promise<void>;
  /** Stops everything when the driver stops. */
  signal: AbortSignal;
  /** How the delta is settled; HONEST in the shipped node. */
  behaviour: RoundBehaviour;
  /** The other peers' deltas announced so far this round, fetched. */
  announced: DeltaChoice["announced"];
}

/** One round's training with what its work commitment needs. */
type Trained = TrainRoundResult & {
  chunks: number;
  /** The peers its chunks were assigned among. */
  peers: string[];
  /** CIDs of its stored states at the segment bounds. */
  states: string[];
};

/** A round being trained ahead of its checkpoint. */
interface Ahead {
  round: number;
  /** θ_local of the previous round: where these steps started. */
  start: Float32Array;
  abort: AbortController;
  /** C(round)'s CID and parameters, once `rebase` brings them. */
  base: PromiseWithResolvers<{ parent: string; params: Float32Array }>;
  /** C(round) − start, handed to the trainer once. */
  shift: Float32Array | null;
  shifted: boolean;
  done: Promise<void>;
}

/** Runs one peer's inner rounds, ahead of the chain when asked to. */
export class RoundTraining {
  readonly #o: RoundTrainingOptions;
  #ahead: Ahead | null = null;
  /** The round being trained from its checkpoint, if one is. */
  #current:
    | { round: number; abort: AbortController; done: Promise<void> }
    | null = null;
  /** θ_local of the last round trained, where training ahead starts. */
  #last: Float32Array | null = null;
  /** This peer's throughput, as its heartbeats report it. */
  readonly #speed: ThroughputMeter;
  /** Training states kept for audits of recent rounds. */
  readonly #states: StateWindow;

  constructor(o: RoundTrainingOptions) {
    this.#o = o;
    this.#speed = new ThroughputMeter(o.spec.batchSize * o.spec.contextLength);
    this.#states = new StateWindow(o.drop);
  }

  /**
   * Trains `round` from C(round) = `base`, dropping any work ahead and an
   * earlier round still training: the chain committed that one without
   * this peer (it was too slow, or late to start), and finishing it would
   * only make the peer late for this one too.
   */
  async train(round: number, parent: string, base: Float32Array) {
    await this.#dropAhead();
    await this.#dropBehind(round);
    const abort = new AbortController();
    const run = this.#steps(
      round,
      base,
      AbortSignal.any([abort.signal, this.#o.signal]),
    );
    const current = { round, abort, done: run.then(() => {}, () => {}) };
    this.#current = current;
    let result: Trained;
    try {
      result = await run;
    } catch (err) {
      if (abort.signal.aborted) return; // dropped: nothing to report
      throw err;
    } finally {
      if (this.#current === current) this.#current = null;
    }
    this.#last = result.params;
    if (this.#o.state().round !== round) return; // the chain moved on
    await this.#deliver(round, parent, base, result);
  }

  async #dropBehind(round: number): Promise<void> {
    const current = this.#current;
    if (!current || current.round >= round) return;
    current.abort.abort(
      new Error(`round ${current.round} was committed without this peer`),
    );
    await current.done;
  }

  /** Starts `round`'s steps from the last round's own parameters. */
  trainAhead(round: number): Promise<void> {
    if (!this.#last || this.#ahead) return Promise.resolve();
    const abort = new AbortController();
    const ahead: Ahead = {
      round,
      start: this.#last,
      abort,
      base: Promise.withResolvers(),
      shift: null,
      shifted: false,
      done: Promise.resolve(),
    };
    this.#ahead = ahead;
    ahead.done = this.#runAhead(ahead).finally(() => {
      if (this.#ahead === ahead) this.#ahead = null;
    });
    return ahead.done;
  }

  /**
   * C(round) = `base` is known: moves the steps trained ahead onto it, or
   * trains the round from it when nothing was trained ahead.
   */
  rebase(round: number, parent: string, base: Float32Array): Promise<void> {
    const ahead = this.#ahead;
    if (ahead?.round !== round) return this.train(round, parent, base);
    const shift = new Float32Array(base.length);
    for (let i = 0; i < base.length; i++) shift[i] = base[i] - ahead.start[i];
    ahead.shift = shift;
    ahead.base.resolve({ parent, params: base });
    return Promise.resolve();
  }

  async #runAhead(ahead: Ahead): Promise<void> {
    const signal = AbortSignal.any([ahead.abort.signal, this.#o.signal]);
    try {
      const result = await this.#steps(ahead.round, null, signal, {
        shift: () => {
          if (!ahead.shift || ahead.shifted) return null;
          ahead.shifted = true;
          return ahead.shift;
        },
        until: ahead.base.promise,
      });
      // Resolved: the hold waited for it.
      const { parent, params: base } = await ahead.base.promise;
      this.#last = result.params;
      // No longer ahead: delivering starts the next round's steps, which
      // must find the way clear.
      if (this.#ahead === ahead) this.#ahead = null;
      if (this.#o.state().round !== ahead.round) return;
      await this.#deliver(ahead.round, parent, base, result);
    } catch (err) {
      // Dropped because the chain went elsewhere: nothing to report.
      if (ahead.abort.signal.aborted) return;
      throw err;
    }
  }

  async #dropAhead(): Promise<void> {
    const ahead = this.#ahead;
    if (!ahead) return;
    ahead.abort.abort(
      new Error(`training ahead of round ${ahead.round} dropped`),
    );
    await ahead.done.catch(() => {});
  }

  /**
   * This peer's share of `round`'s steps on its chunks, from `params` or
   * onwards. Training ahead, it waits for `until` before the last segment
   * bound within a tenth of the round: below its end, so the trainer's own
   * parameters are always moved and the next round ahead starts from them.
   */
  async #steps(
    round: number,
    params: Float32Array | null,
    signal: AbortSignal,
    ahead: Pick<TrainRoundParams, "shift"> & { until?: Promise<unknown> } = {},
  ): Promise<Trained> {
    const { trainer, spec, ledger, progress, peerId } = this.#o;
    const peers = [...new Set([...this.#o.state().live, peerId])];
    const steps = spec.shares === "full" ? spec.innerSteps : throughputSteps(
      spec.innerSteps,
      this.#speed.tokensPerSecond,
      peers.filter((p) => p !== peerId).map((p) => this.#o.throughput(p)),
    );
    const assigned = this.#o.behaviour.chunks(
      assignChunks({
        job: this.#o.jobId,
        round,
        peers,
        chunks: trainer.trainChunks.length,
      }).get(this.#o.peerId) ?? [],
      trainer.trainChunks.length,
    );
    // Written while training goes on: waiting for each write (and its
    // fsync) at every bound would stall the steps (measured: 5-10% of a
    // default round on WASM).
    const writes: Promise<string>[] = [];
    progress({ round, step: 0 });
    const result = await trainer.trainRound({
      round,
      params,
      chunks: assigned.map((i) => trainer.trainChunks[i]),
      steps,
      signal,
      shift: ahead.shift,
      hold: ahead.until &&
        { beforeStep: aheadSteps(steps), until: ahead.until },
      onState: (state) => {
        const committed = this.#o.behaviour.state(state, steps);
        const write = this.#o.store(encodeState(committed));
        // Awaited below; a failure must not go unhandled meanwhile.
        write.catch(() => {});
        writes.push(write);
      },
      onStep: (s) => {
        ledger.steps.note(round, s.step, s.loss);
        this.#speed.note(s.ms);
        progress({ step: s.step, throughput: this.#speed.tokensPerSecond });
      },
    }).catch(async (err) => {
      // A round cut short still leaves its states to delete in time.
      const written = await Promise.allSettled(writes);
      await this.#states.keep(
        round,
        written.flatMap((w) => w.status === "fulfilled" ? [w.value] : []),
      );
      throw err;
    });
    ledger.noteTraining(result.trainMs);
    const states = await Promise.all(writes);
    await this.#states.keep(round, states);
    return { ...result, chunks: assigned.length, peers, states };
  }

  /** Quantizes and stores Δ = base − θ_end, then hands it over. */
  async #deliver(
    round: number,
    parent: string,
    base: Float32Array,
    result: Trained,
  ): Promise<void> {
    const { spec, behaviour } = this.#o;
    const delta = await behaviour.delta({
      round,
      parent,
      delta: pseudoGradient(base, result.params),
      live: () => this.#o.state().live,
      announced: this.#o.announced,
    });
    const bytes = encodeDelta(
      spec,
      behaviour.deltaContext({
        job: this.#o.jobId,
        round,
        parent,
        peer: this.#o.peerId,
      }),
      delta,
    );
    const work = await behaviour.work({
      round,
      parent,
      peers: result.peers,
      states: result.states,
      shifted: result.shiftedAt ?? 0,
    });
    await this.#o.announce({
      round,
      parent,
      cid: await this.#o.store(bytes),
      bytes: bytes.length,
      tokens: result.tokens,
      loss: result.loss,
      steps: result.steps,
      chunks: result.chunks,
      work: await this.#o.store(encodeWorkRecord(work)),
      data: dataHash(this.#o.jobId, round, this.#o.peerId, work.peers),
      trajectory: trajectoryRoot(work.states),
      kernel: this.#o.trainer.kernel,
    });
  }
}
