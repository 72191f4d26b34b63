/**
 * One round's steps on this peer's share: its part of H sized from the
 * throughputs in the heartbeats (protocol/audit/inner_steps.ts), its chunks
 * assigned among the round's peers, the steps themselves on the
 * {@linkcode RoundTrainer}, with its states written as it trains and its
 * speed measured for the next heartbeats.
 *
 * @module
 */
import { assignChunks } from "../../../protocol/peers/assignment.ts";
import {
  type JobSpec,
  resetsMoments,
} from "../../../protocol/spec/job_spec.ts";
import { othersDone, roundShare } from "../../../protocol/audit/inner_steps.ts";
import { segmentBounds } from "../../../protocol/audit/work_record.ts";
import type { RoundState } from "../../../protocol/round/round_state.ts";
import type { Progress } from "../../p2p/gossip_service.ts";
import type { RoundBehaviour } from "../services/behaviour.ts";
import type { Trained } from "./deliver.ts";
import type { RoundLedger } from "../records/ledger.ts";
import type { RoundTrainer } from "../trainer/inner_loop.ts";
import type { RoundStart, TrainRoundParams } from "../services/round_io.ts";
import { StateWindow } from "../trainer/state_window.ts";
import { ThroughputMeter } from "../trainer/throughput_meter.ts";

/** Most of a round's inner steps taken before its checkpoint is known. */
const AHEAD_FRACTION = 0.1;

/**
 * Steps trained before a round's checkpoint must be known: the last
 * segment bound within {@linkcode AHEAD_FRACTION} of the round, as the
 * checkpoint is moved onto only at bounds.
 */
function aheadSteps(steps: number, innerSteps: number): number {
  const most = Math.floor(steps * AHEAD_FRACTION);
  return segmentBounds(steps, innerSteps).filter((b) => b <= most).at(-1)!;
}

/** What {@linkcode ShareSteps} works with. */
export interface ShareStepsOptions {
  jobId: string;
  /** This peer's id: its chunk assignment and batch stream. */
  peerId: string;
  spec: JobSpec;
  trainer: RoundTrainer;
  /** Where step losses and training time are counted. */
  ledger: Pick<RoundLedger, "steps" | "noteTraining">;
  /**
   * The machine's current state: its round, live peers, the deltas
   * announced in it and those of the next round heard meanwhile.
   */
  state: () => Pick<RoundState, "round" | "live" | "deltas" | "early">;
  /**
   * The training throughput (tokens per second) `peer` last reported in a
   * heartbeat; 0 when unknown. Sizes this peer's share of a round.
   */
  throughput: (peer: string) => number;
  /**
   * This peer's speed measured before its first step (its benchmark for a
   * priced job's seat), tokens per second: its share until its steps are
   * measured; 0 or absent: unknown.
   */
  startSpeed?: number;
  /** Reports progress for heartbeats; `now` sends one at once. */
  progress: (
    p: Partial<Pick<Progress, "round" | "step" | "throughput">>,
    now?: boolean,
  ) => void;
  /**
   * Stores a block (a quantized delta, a training state, a work record);
   * resolves with its CID string.
   */
  store: (bytes: Uint8Array, codec?: number) => Promise<string>;
  /** Deletes a stored block by CID string (states past their window). */
  drop: (cid: string) => Promise<void>;
  /** How chunks, start and states are settled; HONEST in the shipped node. */
  behaviour: Pick<RoundBehaviour, "chunks" | "start" | "params" | "state">;
  /**
   * The CID of this peer's delta of `round` as the manifest that made
   * `checkpoint`, C(round + 1), lists it (aggregated or excluded): null
   * when it does not, undefined when that manifest is not held. Only a
   * listed round is audited, so only its moments may be gone on from.
   */
  listed: (round: number, checkpoint: string) => string | null | undefined;
  /**
   * Makes the manifest of `round` that made `checkpoint` known to `listed`
   * when this peer holds none (it refused that manifest, or never checked
   * it): fetched as the chain recorded it. Without it such a peer would go
   * on from zero moments while the others go on from theirs, and its next
   * deltas would point elsewhere than theirs (see `begin`).
   */
  known?: (round: number, checkpoint: string) => Promise<void>;
}

/** Takes this peer's share of each round's steps. */
export class ShareSteps {
  readonly #o: ShareStepsOptions;
  /** This peer's throughput, as its heartbeats report it. */
  readonly #speed: ThroughputMeter;
  /** Training states kept for audits of recent rounds. */
  readonly #states: StateWindow;
  /** Rounds taken so far, to tell whether one was taken since another. */
  #takes = 0;
  /** The last round taken to its end: its final state, and which take. */
  #ended: { round: number; state: string; take: number } | null = null;
  /** The round announced whose final moments the trainer still holds. */
  #continues: { round: number; state: string } | null = null;
  /** A start `begin` gave whose moments the trainer holds as they are. */
  #holds: RoundStart | null = null;

  constructor(o: ShareStepsOptions) {
    this.#o = o;
    this.#speed = new ThroughputMeter(
      o.spec.batchSize * o.spec.contextLength,
      o.startSpeed,
    );
    this.#states = new StateWindow(o.store, o.drop);
  }

  /**
   * Where `round`'s steps start: from zero moments in a job that resets
   * them (`moments: "reset"`); else from the moments the trainer holds when
   * they are those its announced round r − 1 ended with (nothing was
   * trained since) and, with C(round) = `parent` committed, the manifest
   * that made it is held and lists that round's delta; else from zero
   * moments, which is all an audit can tell from committed work. Started
   * before the commit, a round goes on from them: the delta is in the
   * preview or the eager estimate it starts from, and a round whose commit
   * does not list it is trained again. A round trained again is handed
   * its start, as after a `take` this gives zero moments.
   *
   * Zero moments are a last resort: a round from zero moments while the
   * others go on from theirs points elsewhere than theirs (measured on the
   * tiny test model: cosine 0.3 with theirs against 0.8 between them), and
   * the screen calls it `misaligned` (protocol/aggregation/delta_screen.ts), in that
   * round and, its moments younger than theirs, the next. So the manifest
   * that made C(round) is fetched first when this peer holds none.
   */
  async begin(round: number, parent?: string): Promise<RoundStart> {
    const { trainer, behaviour } = this.#o;
    if (parent !== undefined) await this.know(round, parent);
    const last = this.#continues;
    if (
      !resetsMoments(this.#o.spec) && last?.round === round - 1 &&
      (parent === undefined ||
        typeof this.#o.listed(round - 1, parent) === "string")
    ) {
      const moments = await trainer.moments();
      const start = behaviour.start({ moments, from: last.state });
      // The trainer holds these: its round need not load them again.
      this.#holds = start.moments === moments ? start : null;
      return start;
    }
    const n = trainer.parameterCount;
    return behaviour.start({
      moments: { m: new Float32Array(n), v: new Float32Array(n) },
      from: "",
    });
  }

  /**
   * `round`'s delta is being announced: if the trainer has taken no round
   * since, the next round continues from its final moments.
   */
  announced(round: number): void {
    const ended = this.#ended;
    if (ended?.round === round && ended.take === this.#takes) {
      this.#continues = { round, state: ended.state };
    }
  }

  /** `round`'s announcement failed: the next round does not go on from it. */
  retract(round: number): void {
    if (this.#continues?.round === round) this.#continues = null;
  }

  /**
   * Whether `round` would go on from the moments of its round r − 1: never
   * in a job that resets them (`moments: "reset"`), which so trains
   * nothing ahead either.
   */
  continues(round: number): boolean {
    return !resetsMoments(this.#o.spec) && this.#continues?.round === round - 1;
  }

  /**
   * Makes the manifest that made C(round) = `parent` known (see the
   * `known` option), so that `stands` and `begin` judge by it.
   */
  async know(round: number, parent: string): Promise<void> {
    if (round > 0) await this.#o.known?.(round - 1, parent);
  }

  /**
   * Whether a start `from` a state may stand once C(round) = `parent` is
   * committed: a round that goes on from round r − 1 needs its delta
   * listed (see `begin`; call `know` first).
   */
  stands(round: number, parent: string, start: RoundStart | null): boolean {
    return !start?.from ||
      typeof this.#o.listed(round - 1, parent) === "string";
  }

  /**
   * This peer's share of `round`'s steps on its chunks, from `params` and
   * `start` (see `begin`). Training ahead, it waits for `until` before the
   * last segment bound within a tenth of the round: below its end, so every
   * round trained ahead ends moved onto its checkpoint.
   */
  async take(
    round: number,
    params: Float32Array,
    start: RoundStart,
    signal: AbortSignal,
    ahead: Pick<TrainRoundParams, "shift"> & {
      until?: Promise<unknown>;
    } = {},
  ): Promise<Trained> {
    const { trainer, spec, ledger, progress, peerId } = this.#o;
    const take = ++this.#takes;
    const held = this.#holds === start;
    this.#continues = this.#holds = null;
    const { peers, steps, weights } = roundShare(
      spec,
      peerId,
      this.#o.state().live,
      (p) => p === peerId ? this.#speed.tokensPerSecond : this.#o.throughput(p),
    );
    const assigned = this.#o.behaviour.chunks(
      assignChunks({
        job: this.#o.jobId,
        round,
        peers,
        chunks: trainer.trainChunks.length,
        weights,
      }).get(peerId) ?? [],
      trainer.trainChunks.length,
    );
    const states = this.#states.writer(round, start.from);
    progress({ round, step: 0 });
    const result = await trainer.trainRound({
      round,
      params: this.#o.behaviour.params(round, params),
      chunks: assigned.map((i) => trainer.trainChunks[i]),
      steps,
      signal,
      moments: held ? undefined : start.moments,
      shift: ahead.shift,
      hold: ahead.until &&
        { beforeStep: aheadSteps(steps, spec.innerSteps), until: ahead.until },
      // Shares sized by measured speed, and not trained ahead of the
      // checkpoint, also end when the others are done: the rest of a
      // share would only make them wait.
      enough: spec.shares === "full" || ahead.until
        ? undefined
        : (taken) =>
          othersDone(this.#o.state(), peerId, spec, round, taken, steps),
      onState: (state) => states.write(this.#o.behaviour.state(state, steps)),
      onStep: (s) => {
        ledger.steps.note(round, s.step, s.loss);
        this.#speed.note(s.ms);
        progress({ step: s.step, throughput: this.#speed.tokensPerSecond });
      },
    }).catch(async (err) => {
      await states.abandon();
      throw err;
    });
    ledger.noteTraining(result.trainMs);
    // Before the delta goes out: whoever starts the next round once it is
    // in sizes its share from this peer's speed, as measured to the end.
    progress({ throughput: this.#speed.tokensPerSecond }, true);
    const written = await states.done();
    this.#ended = { round, state: written.at(-1)!, take };
    return {
      ...result,
      chunks: assigned.length,
      peers,
      weights,
      states: written,
      from: start.from,
    };
  }
}
