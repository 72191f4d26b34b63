/**
 * The check every audit makes of where a peer's round started, whatever
 * segment it replays: state 0's parameters are C(r)'s, bit for bit (for a
 * round trained ahead, the outer step of C(r − 1) with the peer's own delta
 * of round r − 1: its eager estimate, node/round/settle/aggregate.ts), and its
 * moments are zero or, when the work record names the state they continue
 * (`from`), those the peer's round r − 1 ended with: the last state of the
 * round r − 1 record its signed commitment names, whose delta the manifest
 * that made C(r) lists (only listed deltas are audited). And every
 * replayed segment's start must hold moments an optimizer can reach.
 *
 * Only heads are compared (their digests name the blocks), so the check
 * fetches state 0's head and, for a round that goes on, the small record
 * of round r − 1 and one head; for a round trained ahead, also the delta
 * of round r − 1.
 *
 * Without it, a peer could start from moments of its choosing: AdamW steps
 * by m / √v, so a large m over a tiny v moves the parameters as far as it
 * likes along any pattern, and every step after is honest, so every replay
 * reproduces.
 *
 * @module
 */
import type { DeltaAnnounce } from "../../../protocol/messages/messages.ts";
import type { JobSpec } from "../../../protocol/spec/job_spec.ts";
import type { RoundCheckpoint } from "../../../protocol/round/round_checkpoint.ts";
import { nextCheckpoint } from "../../../protocol/round/round_update.ts";
import {
  momentsDigest,
  paramsDigest,
  type StateHead,
  type TrainingState,
} from "../../../protocol/content/state_hash.ts";
import { momentsFault } from "../../../kernels/moment_bounds.ts";
import {
  trajectoryRoot,
  type WorkRecord,
} from "../../../protocol/audit/work_record.ts";
import { NotJudged, served } from "./audit_errors.ts";
import type { WorkReader } from "./work_reader.ts";

/** What a {@linkcode StartCheck} reads with. */
export interface StartCheckOptions {
  spec: JobSpec;
  work: Pick<WorkReader, "head" | "record" | "checkpoint">;
  /** The values of an announced delta, bound to it (delta_reader.ts). */
  delta: (msg: DeltaAnnounce) => Promise<Float32Array>;
  /**
   * The signed delta `msg`'s peer announced in the round before, as the
   * manifest that made `msg.parent` lists it: null when that manifest does
   * not list the peer, undefined when this peer lacks the manifest or
   * that announcement.
   */
  previous: (msg: DeltaAnnounce) => DeltaAnnounce | null | undefined;
}

/** Checks where audited rounds started (see the module doc). */
export class StartCheck {
  readonly #o: StartCheckOptions;
  /** Digests of checkpoints' parameters blocks, by their parameters. */
  readonly #digests = new WeakMap<Float32Array, Uint8Array>();
  #zeroMoments: Uint8Array | null = null;

  constructor(o: StartCheckOptions) {
    this.#o = o;
  }

  /**
   * Why state 0 (its head: `head`) of the round `a.msg` announced, with
   * work record `a.record` and C(r)'s parameters `a.parent`, is not where
   * the protocol starts it (see the module doc), or null.
   */
  async fault(
    a: { msg: DeltaAnnounce; record: WorkRecord; parent: Float32Array },
    head: Promise<StateHead>,
  ): Promise<string | null> {
    const { msg, record } = a;
    const head0 = await head;
    if (head0.step !== 0) return `its state 0 is at step ${head0.step}`;
    if (record.from !== "" && msg.round === 0) {
      return "it names a state its moments continue, in its first round";
    }
    const before = record.from === "" ? null : this.#previous(msg);
    if (record.from !== "" && before === null) {
      return `it goes on from its round ${
        msg.round - 1
      }, whose delta the manifest that made C(r) does not list`;
    }
    if (record.shifted === 0) {
      if (!sameBytes(head0.params, this.#paramsDigest(a.parent))) {
        return "its step-0 parameters are not C(r)'s";
      }
    } else if (
      !sameBytes(head0.params, paramsDigest(await this.#eager(before!)))
    ) {
      return `its step-0 parameters are not the outer step of C(r - 1) with its delta of round ${
        before!.round
      }`;
    }
    if (!before) {
      return sameBytes(head0.moments, this.#zeroMomentsDigest(a.parent.length))
        ? null
        : "its step-0 moments are not zero, and it names no state they continue";
    }
    const { work } = this.#o;
    const previous = await work.record(before);
    if (trajectoryRoot(previous.states) !== before.trajectory) {
      return `its work record of round ${before.round} does not hash to that round's trajectory`;
    }
    if (previous.states.at(-1) !== record.from) {
      return `the state its moments continue is not the end of its round ${before.round}`;
    }
    const end = await served(
      `the end of its round ${before.round}`,
      msg.peer,
      () => work.head(record.from, msg.peer),
    );
    return sameBytes(end.moments, head0.moments)
      ? null
      : `its step-0 moments are not those its round ${before.round} ended with`;
  }

  /**
   * Why the moments of `state`, the start of segment `segment`, are out of
   * any optimizer's reach (kernels/moment_bounds.ts), or null: moments made
   * up at an earlier bound show here for as long as they stay out of it.
   */
  unreachable(
    segment: number,
    state: Pick<TrainingState, "m" | "v">,
  ): string | null {
    const { spec } = this.#o;
    const fault = momentsFault(
      { model: spec.model, adamw: spec.inner, muon: spec.inner.muon },
      state.m,
      state.v,
    );
    return fault &&
      `its state ${segment} holds moments no training reaches: ${fault}`;
  }

  /**
   * The peer's signed delta of the round before `msg`'s, as listed; null
   * when not listed: only listed deltas are audited, so an unlisted
   * round's moments may not be gone on from.
   */
  #previous(msg: DeltaAnnounce): DeltaAnnounce | null {
    const before = this.#o.previous(msg);
    if (before === undefined) {
      throw new NotJudged(
        `its delta of round ${
          msg.round - 1
        }, where its moments continue from, was not seen here as listed`,
      );
    }
    return before;
  }

  /**
   * Its eager estimate of C(r) (node/round/settle/aggregate.ts): the outer step of
   * C(r − 1) with `before`, its own delta of round r − 1, alone.
   */
  async #eager(before: DeltaAnnounce): Promise<Float32Array> {
    const delta = await served(
      `its delta of round ${before.round}`,
      before.peer,
      () => this.#o.delta(before),
    );
    let parent: RoundCheckpoint;
    try {
      parent = await this.#o.work.checkpoint(before.parent);
    } catch (err) {
      throw new NotJudged(
        `C(${before.round}) is not held here: ${(err as Error).message}`,
      );
    }
    return nextCheckpoint({
      spec: this.#o.spec,
      parent,
      parentCid: before.parent,
      deltas: [{ peer: before.peer, tokens: before.tokens, delta }],
    }).params;
  }

  #paramsDigest(params: Float32Array): Uint8Array {
    let digest = this.#digests.get(params);
    if (!digest) this.#digests.set(params, digest = paramsDigest(params));
    return digest;
  }

  #zeroMomentsDigest(n: number): Uint8Array {
    if (!this.#zeroMoments) {
      const zeros = new Float32Array(n);
      this.#zeroMoments = momentsDigest({ m: zeros, v: zeros });
    }
    return this.#zeroMoments;
  }
}

/** Whether `a` and `b` hold the same bytes. */
export function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  return a.length === b.length && a.every((x, i) => x === b[i]);
}
