/**
 * Reading another peer's committed work for an audit: its work record and
 * training states from the peer that committed them, each verified by its
 * CID (a state's CID digest is its committed hash), and the checkpoint its
 * round started from. A peer's states are megabytes each and useful to no
 * one after the audit, so the ones fetched here are deleted once read.
 *
 * @module
 */
import { BlobFetchError } from "../p2p/blob_service.ts";
import {
  decodeRoundCheckpoint,
  roundCheckpointMaxBytes,
} from "../../protocol/round_checkpoint.ts";
import type { DeltaAnnounce } from "../../protocol/messages.ts";
import { parseCid } from "../../protocol/cid.ts";
import {
  decodeState,
  stateByteLength,
  type TrainingState,
} from "../../protocol/state_hash.ts";
import { claimedSteps, type StepShape } from "../../protocol/inner_steps.ts";
import {
  decodeWorkRecord,
  MAX_WORK_RECORD_BYTES,
  type WorkRecord,
} from "../../protocol/work_record.ts";
import type { BlobGetter } from "./blob_getter.ts";
import type { RoundBlocks } from "./services.ts";

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
          return decodeWorkRecord(
            bytes,
            claimedSteps(this.#shape, msg.tokens),
          );
        },
      });
    } catch (err) {
      throw new WorkRecordUnserved(msg.work, err, refusedBy(err, msg.peer));
    }
  }

  /** The training state `cid`, from `peer`; not kept unless held before. */
  async state(cid: string, peer: string): Promise<TrainingState> {
    const held = await this.#blobs.has(cid);
    try {
      return await this.#blobs.get(cid, {
        what: "training state",
        maxBytes: stateByteLength(this.#parameterCount),
        providers: [peer],
        timeoutMs: SERVE_DEADLINE_MS,
        decode: (bytes) => {
          if (!held) this.#fetched(bytes.length);
          return decodeState(bytes, this.#parameterCount);
        },
      });
    } finally {
      if (!held) await this.#blocks.delete(parseCid(cid));
    }
  }

  /** The parameters of checkpoint `cid` (held: it is a committed C(r)). */
  async parent(cid: string): Promise<Float32Array> {
    if (this.#parent?.cid !== cid) {
      const ckpt = await this.#blobs.get(cid, {
        what: "checkpoint",
        maxBytes: roundCheckpointMaxBytes(this.#parameterCount),
        timeoutMs: SERVE_DEADLINE_MS,
        decode: decodeRoundCheckpoint,
      });
      this.#parent = { cid, params: ckpt.params };
    }
    return this.#parent.params;
  }
}

/**
 * The work record a delta names was not served. `refused`: its peer
 * answered that it lacks it, which an honest peer never does in the
 * challenge window; otherwise it could not be reached (restarting,
 * partitioned), which proves nothing.
 */
export class WorkRecordUnserved extends Error {
  constructor(cid: string, cause: unknown, readonly refused: boolean) {
    super(`its work record ${cid} was not served: ${(cause as Error).message}`);
    this.name = "WorkRecordUnserved";
  }
}

/** Whether `peer` itself answered a fetch that `err` ended with "not found". */
export function refusedBy(err: unknown, peer: string): boolean {
  for (let e = err; e instanceof Error; e = e.cause) {
    if (e instanceof BlobFetchError) {
      return e.report.failed[peer] === "refused: not-found";
    }
  }
  return false;
}
