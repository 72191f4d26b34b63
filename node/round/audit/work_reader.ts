/**
 * Reading another peer's committed work for an audit: its work record and
 * training states from the peer that committed them, each verified by its
 * CID (a state's CID digest is its committed hash), and the checkpoint its
 * round started from. A peer's states are megabytes each and useful to no
 * one after the audit, so the ones fetched here are deleted once read.
 *
 * @module
 */
import { BlobFetchError } from "../../p2p/blob_fetch.ts";
import {
  decodeRoundCheckpoint,
  type RoundCheckpoint,
  roundCheckpointMaxBytes,
} from "../../../protocol/round/round_checkpoint.ts";
import type { DeltaAnnounce } from "../../../protocol/messages/messages.ts";
import {
  type CID,
  cidFromDigest,
  cidToString,
  parseCid,
} from "../../../protocol/content/cid.ts";
import {
  decodeStateHead,
  decodeStateMoments,
  decodeStateParams,
  momentsByteLength,
  paramsByteLength,
  STATE_HEAD_BYTES,
  STATE_PART_CODEC,
  type StateHead,
  type TrainingState,
} from "../../../protocol/content/state_hash.ts";
import {
  claimedSteps,
  type StepShape,
} from "../../../protocol/audit/inner_steps.ts";
import {
  decodeWorkRecord,
  MAX_WORK_RECORD_BYTES,
  type WorkRecord,
} from "../../../protocol/audit/work_record.ts";
import type { BlobGetter } from "../services/blob_getter.ts";
import type { RoundBlocks } from "../services/services.ts";

/** How long an audited peer has to serve its record or a state, ms. */
export const SERVE_DEADLINE_MS = 30_000;

/** Reads committed work for audits. */
export class WorkReader {
  readonly #blobs: Pick<BlobGetter, "get" | "has">;
  readonly #blocks: Pick<RoundBlocks, "delete">;
  readonly #shape: StepShape;
  readonly #parameterCount: number;
  readonly #fetched: (bytes: number) => void;
  #parent: { cid: string; params: Float32Array } | null = null;

  constructor(
    blobs: Pick<BlobGetter, "get" | "has">,
    blocks: Pick<RoundBlocks, "delete">,
    shape: StepShape,
    parameterCount: number,
    fetched: (bytes: number) => void,
  ) {
    this.#fetched = fetched;
    this.#blobs = blobs;
    this.#blocks = blocks;
    this.#shape = shape;
    this.#parameterCount = parameterCount;
  }

  /**
   * The work record `msg` names, from its peer; a
   * {@linkcode WorkRecordUnserved} when it cannot be had or read.
   */
  async record(msg: DeltaAnnounce): Promise<WorkRecord> {
    const held = await this.#blobs.has(msg.work);
    try {
      return await this.#blobs.get(msg.work, {
        what: "work record",
        maxBytes: MAX_WORK_RECORD_BYTES,
        providers: [msg.peer],
        timeoutMs: SERVE_DEADLINE_MS,
        decode: (bytes) => {
          if (!held) this.#fetched(bytes.length);
          return committed(() =>
            decodeWorkRecord(
              bytes,
              claimedSteps(this.#shape, msg.tokens),
              this.#shape.innerSteps,
            )
          );
        },
      });
    } catch (err) {
      throw new WorkRecordUnserved(msg.work, err, provenBy(err, msg.peer));
    }
  }

  /**
   * The training state `cid` (its head's CID), from `peer`; not kept unless
   * held before.
   */
  async state(cid: string, peer: string): Promise<TrainingState> {
    const head = await this.head(cid, peer);
    const [params, { m, v }] = await Promise.all([
      this.#params(head, peer),
      this.#fetch(
        cidFromDigest(head.moments, STATE_PART_CODEC),
        peer,
        "training state's moments",
        momentsByteLength(this.#parameterCount),
        decodeStateMoments,
      ),
    ]);
    return { step: head.step, params, m, v };
  }

  /**
   * The step and parameters of the training state `cid`, from `peer`,
   * without its moments (two thirds of it): all a delta check needs.
   */
  async params(
    cid: string,
    peer: string,
  ): Promise<Pick<TrainingState, "step" | "params">> {
    const head = await this.head(cid, peer);
    return { step: head.step, params: await this.#params(head, peer) };
  }

  /** The head of the training state `cid`, from `peer`. */
  head(cid: string, peer: string): Promise<StateHead> {
    return this.#fetch(
      parseCid(cid),
      peer,
      "training state",
      STATE_HEAD_BYTES,
      decodeStateHead,
    );
  }

  #params(head: StateHead, peer: string): Promise<Float32Array> {
    return this.#fetch(
      cidFromDigest(head.params, STATE_PART_CODEC),
      peer,
      "training state's parameters",
      paramsByteLength(this.#parameterCount),
      decodeStateParams,
    );
  }

  /**
   * A block of a committed state, verified by `cid` and decoded; deleted
   * after unless held before.
   */
  async #fetch<T>(
    cid: CID,
    peer: string,
    what: string,
    maxBytes: number,
    decode: (bytes: Uint8Array, n: number) => T,
  ): Promise<T> {
    const text = cidToString(cid);
    const held = await this.#blobs.has(text);
    try {
      return await this.#blobs.get(text, {
        what,
        maxBytes,
        providers: [peer],
        timeoutMs: SERVE_DEADLINE_MS,
        decode: (bytes) => {
          if (!held) this.#fetched(bytes.length);
          return committed(() => decode(bytes, this.#parameterCount));
        },
      });
    } finally {
      if (!held) await this.#blocks.delete(cid);
    }
  }

  /** The parameters of checkpoint `cid` (held: it is a committed C(r)). */
  async parent(cid: string): Promise<Float32Array> {
    if (this.#parent?.cid !== cid) {
      this.#parent = { cid, params: (await this.checkpoint(cid)).params };
    }
    return this.#parent.params;
  }

  /**
   * Checkpoint `cid` whole, outer momentum included (held: it is a
   * committed C(r)).
   */
  checkpoint(cid: string): Promise<RoundCheckpoint> {
    return this.#blobs.get(cid, {
      what: "checkpoint",
      maxBytes: roundCheckpointMaxBytes(this.#parameterCount),
      timeoutMs: SERVE_DEADLINE_MS,
      decode: decodeRoundCheckpoint,
    });
  }
}

/**
 * The work record a delta names was not served, or not as a record.
 * `proven` (see {@linkcode provenBy}): the peer's own answer or its
 * committed bytes show it, which an honest peer never gives in the
 * challenge window; otherwise it could not be reached (restarting,
 * partitioned), which proves nothing.
 */
export class WorkRecordUnserved extends Error {
  constructor(cid: string, cause: unknown, readonly proven: boolean) {
    super(
      `its work record ${cid} was not served: ${(cause as Error).message}`,
      { cause },
    );
    this.name = "WorkRecordUnserved";
  }
}

/**
 * Committed bytes (they match the CID their peer signed) that do not
 * decode as what they were committed as: its peer's doing, whoever served
 * them.
 */
export class MalformedWork extends Error {
  constructor(cause: unknown) {
    super((cause as Error).message, { cause });
    this.name = "MalformedWork";
  }
}

function committed<T>(decode: () => T): T {
  try {
    return decode();
  } catch (err) {
    throw new MalformedWork(err);
  }
}

/**
 * Whether the fetch that `err` ended shows that `peer` does not serve its
 * committed work: it answered "not found" itself, announced a size over
 * the limit for what it committed, or the bytes (matching their CID) do
 * not decode. A peer that could not be reached, or sent bytes that do not
 * match the CID, proves nothing: the next try may reach it.
 */
export function provenBy(err: unknown, peer: string): boolean {
  for (let e = err; e instanceof Error; e = e.cause) {
    if (e instanceof MalformedWork) return true;
    if (e instanceof BlobFetchError) {
      const failed = e.report.failed[peer] ?? "";
      return failed === "refused: not-found" ||
        failed.startsWith("announced ");
    }
  }
  return false;
}

/**
 * Whether the fetch that `err` ended shows that `peer` took the request
 * and answered nothing before the header timeout: reachable, yet silent.
 * A peer cut off by a partition fails the dial instead.
 */
export function silentIn(err: unknown, peer: string): boolean {
  for (let e = err; e instanceof Error; e = e.cause) {
    if (e instanceof BlobFetchError) return e.report.silent.includes(peer);
  }
  return false;
}

/** Whether `err` shows committed bytes that do not decode. */
export function malformedIn(err: unknown): boolean {
  for (let e = err; e instanceof Error; e = e.cause) {
    if (e instanceof MalformedWork) return true;
  }
  return false;
}
