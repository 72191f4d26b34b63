/**
 * A peer's inner training for the round machine's `train`, `preview`,
 * `trainAhead` and `rebase` actions: H steps on its assigned chunks, then
 * its pseudo-gradient Δ = C(r) − θ_end, quantized and stored as a block, is
 * handed over for announcement (deliver.ts). The blob is bound to its job,
 * round, parent and peer (delta_blob.ts), so it is good for this round only.
 *
 * Starting early (`early`): once every live member's delta for round r is
 * in, the peer computes C(r+1) itself and trains round r+1 from it while r
 * is settled, verified and committed. The steps are exactly those of a
 * round trained after the commit; the delta waits for `train` with the same
 * checkpoint. Should the chain commit another, the steps are dropped and
 * the round trained from the committed one, from the AdamW moments the
 * early start began with, as if it had never started.
 *
 * Training ahead (`overlap`, eager starts): once its delta for round r is
 * out, the peer goes on with round r+1's steps from the eager estimate
 * Ĉ(r+1), the outer step with its own delta alone, while the others'
 * deltas come in. When C(r+1) is known, from its preview or the commit,
 * the parameters move onto it between two steps, θ += C(r+1) − Ĉ(r+1)
 * (before the first step they become C(r+1)), so the rest of the round
 * runs from it: θ_end = C(r+1) + (the round's own
 * progress) and the delta is C(r+1) − θ_end as without overlap. Steps
 * taken before the move see an estimated base, so at most a tenth of a
 * round's steps (rounded down: none when H < 10) run before C(r+1) is
 * known; then the peer waits for it. Moved onto a preview, the round is
 * one started early: its delta waits for the chain to commit that very
 * checkpoint, and is trained again from the committed one if the chain
 * commits another. The rules of what starts and what stands are
 * protocol/round/ahead_rules.ts's.
 *
 * @module
 */
import { untilOrAborted } from "../services/abortable.ts";
import type { DeltaChoice, RoundBehaviour } from "../services/behaviour.ts";
import { deliverDelta, type Trained, type TrainedDelta } from "./deliver.ts";
import type { RoundLedger } from "../records/ledger.ts";
import type { RoundStart } from "../services/round_io.ts";
import { ShareSteps, type ShareStepsOptions } from "./share_steps.ts";
import {
  mayTrainAhead,
  onCommit,
  onPreview,
  type TrainingNow,
} from "../../../protocol/round/ahead_rules.ts";

export type { TrainedDelta };

/** What {@linkcode RoundTraining} works with. */
export interface RoundTrainingOptions extends ShareStepsOptions {
  /** Where step losses, training time and early starts are counted. */
  ledger: Pick<RoundLedger, "steps" | "noteTraining" | "noteEarlyStart">;
  /** Announces a trained delta (and tells the machine). */
  announce: (delta: TrainedDelta) => Promise<void>;
  /** Stops everything when the driver stops. */
  signal: AbortSignal;
  /** How the delta is settled; HONEST in the shipped node. */
  behaviour: RoundBehaviour;
  /** The other peers' deltas announced so far this round, fetched. */
  announced: DeltaChoice["announced"];
}

/** A round being trained ahead of its checkpoint. */
interface Ahead {
  round: number;
  /** Ĉ(round), the eager estimate: where these steps started. */
  start: Float32Array;
  /** What they started from besides Ĉ, for a restart. */
  begun: RoundStart | null;
  abort: AbortController;
  /** C(round)'s CID and parameters, once a preview or `rebase` brings them. */
  base: PromiseWithResolvers<{ parent: string; params: Float32Array }>;
  /** Resolved when the chain committed the checkpoint moved onto. */
  committed: PromiseWithResolvers<void>;
  /** C(round), handed to the trainer once to move onto. */
  to: Float32Array | null;
  moved: boolean;
  done: Promise<void>;
}

/** A round being trained from its checkpoint. */
interface Running {
  round: number;
  abort: AbortController;
  /** Settles when the round's work ends, delivered or not. */
  done: Promise<void>;
  /** Set when it started from a previewed checkpoint (see `early`). */
  early: {
    parent: string;
    /** What it started from besides C(round), for a restart. */
    start: RoundStart | null;
    /** Resolved when the chain committed `parent`. */
    committed: PromiseWithResolvers<void>;
  } | null;
}

/** Runs one peer's inner rounds, ahead of the chain when asked to. */
export class RoundTraining {
  readonly #o: RoundTrainingOptions;
  #ahead: Ahead | null = null;
  /** The round being trained from its checkpoint, if one is. */
  #current: Running | null = null;
  /** Takes this peer's share of each round's steps. */
  readonly #share: ShareSteps;

  constructor(o: RoundTrainingOptions) {
    this.#o = o;
    this.#share = new ShareSteps(o);
  }

  /**
   * Trains `round` from C(round) = `base`, dropping any work ahead and an
   * earlier round still training: the chain committed that one without
   * this peer (it was too slow, or late to start), and finishing it would
   * only make the peer late for this one too. A round started early from
   * the same checkpoint goes on if its start stands (see `ShareSteps`);
   * one started from another, or whose start does not stand, is dropped
   * and the round trained again from the moments that may stand.
   */
  async train(round: number, parent: string, base: Float32Array) {
    await this.#share.know(round, parent);
    const current = this.#current;
    if (current?.round === round && current.early) {
      const { start } = current.early;
      // The preview can match the commit with this peer's own delta of
      // round r − 1 left out of both (screened out): its steps went on
      // from that round's moments, which no audit accepts unlisted. A
      // start not yet chosen cannot be judged: it is chosen again below,
      // no step lost.
      const fate = onCommit(
        round,
        current.early.parent,
        parent,
        start !== null,
        this.#share.stands(round, parent, start),
      );
      if (fate.kind === "keep") {
        current.early.committed.resolve();
        return current.done;
      }
      current.abort.abort(new Error(fate.reason));
      await current.done;
      return this.#run(round, parent, base, fate.keepStart ? start : null);
    }
    await this.#dropAhead();
    await this.#dropBehind(round);
    return this.#run(round, parent, base);
  }

  /**
   * Starts `round` from its previewed checkpoint C(round) = `base` (CID
   * `parent`) before the chain commits it, or moves the steps trained
   * ahead onto it; the delta waits for the chain to commit the same
   * parent. Does nothing while another round trains, or once the machine
   * has left the round before it (a preview finished late).
   */
  early(round: number, parent: string, base: Float32Array): Promise<void> {
    const move = onPreview(this.#now(), round);
    if (move === "move") this.#moveAhead(this.#ahead!, parent, base);
    if (move !== "start") return Promise.resolve();
    return this.#run(round, parent, base, undefined, true);
  }

  /** Trains `round` and delivers its delta (see `train` and `early`). */
  #run(
    round: number,
    parent: string,
    base: Float32Array,
    start?: RoundStart | null,
    early = false,
  ): Promise<void> {
    const abort = new AbortController();
    const signal = AbortSignal.any([abort.signal, this.#o.signal]);
    const running: Running = {
      round,
      abort,
      done: Promise.resolve(),
      early: early
        ? { parent, start: null, committed: Promise.withResolvers() }
        : null,
    };
    this.#current = running;
    const task = (async () => {
      let result: Trained;
      try {
        start ??= await this.#share.begin(round, early ? undefined : parent);
        if (running.early) running.early.start = start;
        result = await this.#share.take(round, base, start, signal);
        if (running.early) {
          await untilOrAborted(running.early.committed.promise, signal);
        }
      } catch (err) {
        if (abort.signal.aborted) return; // dropped: nothing to report
        throw err;
      } finally {
        if (this.#current === running) this.#current = null;
      }
      if (this.#o.state().round !== round) return; // the chain moved on
      if (running.early) this.#o.ledger.noteEarlyStart(round);
      await this.#deliver(round, parent, base, result);
    })();
    running.done = task.then(() => {}, () => {});
    return task;
  }

  async #dropBehind(round: number): Promise<void> {
    const current = this.#current;
    if (!current || current.round >= round) return;
    current.abort.abort(
      new Error(`round ${current.round} was committed without this peer`),
    );
    await current.done;
  }

  /**
   * Starts `round`'s steps from `start`, its eager estimate Ĉ(round), and
   * the moments its round r − 1 ended with. Audits check such a start
   * against that round, so a peer that cannot go on from it (it restarted
   * since, its moments lost) waits for the checkpoint instead.
   */
  trainAhead(round: number, start: Float32Array): Promise<void> {
    if (!mayTrainAhead(this.#now(), this.#share.continues(round))) {
      return Promise.resolve();
    }
    const ahead: Ahead = {
      round,
      start,
      begun: null,
      abort: new AbortController(),
      base: Promise.withResolvers(),
      committed: Promise.withResolvers(),
      to: null,
      moved: false,
      done: Promise.resolve(),
    };
    this.#ahead = ahead;
    ahead.done = this.#runAhead(ahead).finally(() => {
      if (this.#ahead === ahead) this.#ahead = null;
    });
    return ahead.done;
  }

  /**
   * The chain committed C(round) = `base`: moves the steps trained ahead
   * onto it (or keeps them, moved onto that very checkpoint at its
   * preview), trains them again from it when they moved onto another, or
   * trains the round from it when nothing was trained ahead.
   */
  async rebase(
    round: number,
    parent: string,
    base: Float32Array,
  ): Promise<void> {
    const ahead = this.#ahead;
    if (ahead?.round !== round) return this.train(round, parent, base);
    await this.#share.know(round, parent);
    if (!ahead.to) this.#moveAhead(ahead, parent, base);
    const moved = await ahead.base.promise;
    // Steps ahead always began from a start of their own.
    const fate = onCommit(
      round,
      moved.parent,
      parent,
      true,
      this.#share.stands(round, parent, ahead.begun),
    );
    if (fate.kind === "keep") return ahead.committed.resolve();
    ahead.abort.abort(new Error(fate.reason));
    await ahead.done;
    // Trained ahead from the outer step with its own delta, which the
    // committed manifest left out: from C(round) itself.
    return this.#run(round, parent, base, fate.keepStart ? ahead.begun : null);
  }

  /** What trains now, as the rules of ahead_rules.ts see it. */
  #now(): TrainingNow {
    const ahead = this.#ahead;
    return {
      ahead: ahead && { round: ahead.round, based: ahead.to !== null },
      running: this.#current !== null,
      machineRound: this.#o.state().round,
    };
  }

  /** Hands the steps ahead C(round): they move onto it at the next bound. */
  #moveAhead(ahead: Ahead, parent: string, base: Float32Array): void {
    ahead.to = base;
    ahead.base.resolve({ parent, params: base });
  }

  async #runAhead(ahead: Ahead): Promise<void> {
    const signal = AbortSignal.any([ahead.abort.signal, this.#o.signal]);
    try {
      ahead.begun = await this.#share.begin(ahead.round);
      const result = await this.#share.take(
        ahead.round,
        ahead.start,
        ahead.begun,
        signal,
        {
          shift: () => {
            if (!ahead.to || ahead.moved) return null;
            ahead.moved = true;
            return ahead.to;
          },
          until: ahead.base.promise,
        },
      );
      // Resolved: the hold waited for it.
      const { parent, params: base } = await ahead.base.promise;
      await untilOrAborted(ahead.committed.promise, signal);
      // No longer ahead: delivering starts the next round's steps, which
      // must find the way clear.
      if (this.#ahead === ahead) this.#ahead = null;
      if (this.#o.state().round !== ahead.round) return;
      this.#o.ledger.noteEarlyStart(ahead.round);
      await this.#deliver(ahead.round, parent, base, result);
    } catch (err) {
      // Dropped because the chain went elsewhere: nothing to report.
      if (ahead.abort.signal.aborted) return;
      throw err;
    }
  }

  /**
   * Delivers `round`'s delta; as it is announced, the next round may go
   * on from its final moments.
   */
  #deliver(
    round: number,
    parent: string,
    base: Float32Array,
    result: Trained,
  ): Promise<void> {
    return deliverDelta(
      {
        ...this.#o,
        announce: async (d) => {
          // Before it goes out: the next round may start as soon as it has.
          this.#share.announced(round);
          try {
            await this.#o.announce(d);
          } catch (err) {
            this.#share.retract(round);
            throw err;
          }
        },
      },
      round,
      parent,
      base,
      result,
    );
  }

  async #dropAhead(): Promise<void> {
    const ahead = this.#ahead;
    if (!ahead) return;
    ahead.abort.abort(
      new Error(`training ahead of round ${ahead.round} dropped`),
    );
    await ahead.done.catch(() => {});
  }
}
