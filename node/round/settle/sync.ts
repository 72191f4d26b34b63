/**
 * Every peer's last phase of a round: the committed checkpoint C(r+1) is
 * fetched (or found, stored by this peer's own verification), becomes the
 * checkpoint held for the next round, and round r is closed in the ledger
 * with its manifest and held-out loss.
 *
 * @module
 */
import { committedManifest } from "../services/committed_manifest.ts";
import { CheckpointMismatchError, NotHeldError } from "../services/failures.ts";
import {
  decodeRoundCheckpoint,
  type RoundCheckpoint,
  roundCheckpointMaxBytes,
} from "../../../protocol/round/round_checkpoint.ts";
import type {
  RoundEvent,
  RoundState,
} from "../../../protocol/round/round_state.ts";
import type { RoundManifest } from "../../../protocol/round/round_manifest.ts";
import type { BlobGetter } from "../services/blob_getter.ts";
import type { RoundTrainer } from "../trainer/inner_loop.ts";
import type { RoundCounters, RoundLedger } from "../records/ledger.ts";
import type { RoundChain } from "../services/services.ts";

/** A checkpoint in hand: its CID and contents. */
export interface Held {
  cid: string;
  ckpt: RoundCheckpoint;
}

/** What a {@linkcode RoundSync} uses. */
export interface RoundSyncOptions {
  jobId: string;
  /** This peer's id, for its round records. */
  peerId: string;
  blobs: Pick<BlobGetter, "get" | "manifest" | "ensure" | "has" | "signal">;
  trainer: Pick<RoundTrainer, "parameterCount" | "evalLoss">;
  ledger: Pick<RoundLedger, "noteSent" | "cut" | "closeRound">;
  chain: Pick<RoundChain, "committedManifest">;
  /** The machine's current state. */
  state(): RoundState;
  /** Hands an event back to the machine. */
  feed(event: RoundEvent): void;
  log(line: string): void;
  /** Bytes this peer's blob service has served so far. */
  servedBytes(): number;
  /** A manifest this peer built or verified with that result. */
  known(round: number, checkpoint: string): RoundManifest | undefined;
  /** A verification under way that will store `checkpoint`, if any. */
  recomputing(checkpoint: string): Promise<void> | undefined;
}

/** How long closing a round may wait for a manifest it did not verify. */
/** Pause between tries to fetch a committed checkpoint. */
const RETRY_MS = 500;

/** What a round closed out of turn counts: its traffic went to a later one. */
const NO_COUNTS: RoundCounters = {
  bytesSent: 0,
  slicesComputed: 0,
  auditBytes: 0,
  trainMs: 0,
  busyMs: 0,
  wallMs: 0,
};

/** Moves one peer from checkpoint to checkpoint, closing rounds. */
export class RoundSync {
  readonly #o: RoundSyncOptions;
  #current: Held | null = null;
  /** The round records being completed, one after another. */
  #closing: Promise<void> = Promise.resolve();
  /** The servedBytes counter at the last look, for the ledger. */
  #served: number;

  constructor(o: RoundSyncOptions) {
    this.#o = o;
    this.#served = o.servedBytes();
  }

  /** The checkpoint held; throws unless it is `cid`. */
  held(cid: string): Held {
    if (this.#current?.cid !== cid) {
      throw new NotHeldError("checkpoint", cid);
    }
    return this.#current;
  }

  /**
   * Takes committed C(round) = `checkpoint` as the one held, enters the
   * round when the machine is still in it, then closes round − 1.
   */
  async advance(round: number, checkpoint: string): Promise<void> {
    const { blobs } = this.#o;
    // A verification under way is about to store this very checkpoint:
    // waiting for it costs less than fetching it from a peer.
    await this.#o.recomputing(checkpoint);
    const want = {
      what: "checkpoint",
      maxBytes: roundCheckpointMaxBytes(this.#o.trainer.parameterCount),
    };
    // Fetched even when the machine has moved past the round (a newer
    // checkpoint came first): closing round − 1 needs it. Only a fetch
    // that fails after that gives up, so a checkpoint nobody serves does
    // not hold the sync.
    while (!await blobs.has(checkpoint)) {
      if (blobs.signal.aborted) return;
      try {
        await blobs.ensure(checkpoint, want);
      } catch {
        if (this.#o.state().round !== round) return;
        await new Promise((r) => setTimeout(r, RETRY_MS));
      }
    }
    const ckpt = await blobs.get(checkpoint, {
      ...want,
      decode: decodeRoundCheckpoint,
    });
    if (ckpt.job !== this.#o.jobId || ckpt.round !== round) {
      throw new CheckpointMismatchError(
        checkpoint,
        { job: this.#o.jobId, round },
        { job: ckpt.job, round: ckpt.round },
      );
    }
    // A slower fetch of an older checkpoint must not replace a newer one,
    // but the round it closes is still recorded: a peer that fell behind
    // would otherwise have no record of a round it may have trained.
    if ((this.#current?.ckpt.round ?? -1) >= round) {
      if (round > 0) await this.#close(round - 1, checkpoint, ckpt, NO_COUNTS);
      return;
    }
    this.#current = { cid: checkpoint, ckpt };
    const served = this.#o.servedBytes();
    this.#o.ledger.noteSent(served - this.#served);
    this.#served = served;
    const counters = this.#o.ledger.cut(Date.now());
    if (this.#o.state().round === round) {
      this.#o.feed({ type: "enter", round, parent: checkpoint });
    }
    // Bookkeeping after the next round has started: it may wait on a
    // manifest fetch and evaluates the checkpoint, which training need not.
    // One close at a time, so records keep the rounds' order.
    if (round > 0) await this.#close(round - 1, checkpoint, ckpt, counters);
  }

  /** Closes `round`, after the closes under way (one at a time). */
  #close(
    round: number,
    checkpoint: string,
    ckpt: RoundCheckpoint,
    counters: RoundCounters,
  ): Promise<void> {
    const close = () => this.#closeRound(round, checkpoint, ckpt, counters);
    this.#closing = this.#closing.then(close, close);
    return this.#closing;
  }

  async #closeRound(
    round: number,
    checkpoint: string,
    ckpt: RoundCheckpoint,
    counters: RoundCounters,
  ): Promise<void> {
    const manifest = this.#o.known(round, checkpoint) ??
      await this.#committedManifest(round, checkpoint);
    const record = this.#o.ledger.closeRound({
      round,
      counters,
      checkpoint,
      manifest,
      valLoss: await this.#o.trainer.evalLoss(ckpt.params),
      self: this.#o.peerId,
      livePeers: this.#o.state().live.length,
    });
    this.#o.log(
      `round ${round}: committed ${checkpoint}, held-out loss ${
        record.valLoss.toFixed(3)
      }, sent ${record.bytesSent} bytes (data-parallel: ${
        Math.round(record.dataParallelBytes)
      })`,
    );
  }

  /**
   * The manifest the chain recorded for `round`, fetched from peers: for a
   * round this peer did not see verified (it joined late, or the commit
   * overtook its verification). Null when it cannot be had quickly.
   */
  async #committedManifest(
    round: number,
    checkpoint: string,
  ): Promise<RoundManifest | null> {
    return (await committedManifest(this.#o, round, checkpoint))?.manifest ??
      null;
  }
}
