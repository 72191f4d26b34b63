/**
 * Reading announced deltas: a delta blob is fetched (from given providers
 * if not held, then from the round's other peers), limited to the exact
 * size of this job's encoded deltas, and decoded only if it is bound to its
 * announcement's job, round, parent and peer (protocol/round/delta_blob.ts).
 *
 * The given providers (a delta's author first) have a margin g to answer
 * before the others are offered: a provider that took the request and sent
 * nothing then gives way to them. So an author that stalls one peer's
 * fetch of its delta (a leader's) while it serves the rest does not keep
 * that peer from the delta: the peers it served serve it too.
 *
 * @module
 */
import {
  decodeDeltaBlob,
  type DeltaContext,
  MAX_DELTA_BLOB_OVERHEAD,
} from "../../../protocol/round/delta_blob.ts";
import {
  decodeDeltaRoot,
  decodePiece,
  deltaRootMaxBytes,
  pieceMaxBytes,
} from "../../../protocol/round/delta_pieces.ts";
import {
  pieceBounds,
  slicePieces,
} from "../../../protocol/aggregation/shards.ts";
import { type CID, cidToString } from "../../../protocol/content/cid.ts";
import { isSharded, type JobSpec } from "../../../protocol/spec/job_spec.ts";
import type { DeltaAnnounce } from "../../../protocol/messages/messages.ts";
import { BITS_FOR_COMPRESSION } from "../../../protocol/aggregation/quantize.ts";
import { encodedByteLength } from "../../../protocol/aggregation/quantized_container.ts";
import { comparePeerIds } from "../../../protocol/peers/peer_table.ts";
import type { RoundState } from "../../../protocol/round/round_state.ts";
import {
  censorGraceMs,
  collectMs,
} from "../../../protocol/round/round_timing.ts";
import type { BlobGetter, BlobWant } from "./blob_getter.ts";
import { NotHeldError } from "./failures.ts";
import { mapAtMost } from "./at_most.ts";

/**
 * The size of this job's encoded delta blobs over `parameterCount`
 * parameters: what a fetch of one may take.
 */
export function deltaBlobMaxBytes(
  spec: Pick<JobSpec, "compression">,
  parameterCount: number,
): number {
  return MAX_DELTA_BLOB_OVERHEAD +
    encodedByteLength(parameterCount, {
      bits: BITS_FOR_COMPRESSION[spec.compression.format],
      blockSize: spec.compression.blockSize,
    });
}

/** Pieces of one delta fetched at once. */
const PIECES_AT_ONCE = 4;

/** What names a delta: its author, its round and its CID. */
export type DeltaRef = Pick<
  DeltaAnnounce,
  "job" | "round" | "parent" | "peer" | "delta"
>;

/** Where announced delta `d` belongs. */
function contextOf(d: DeltaRef): DeltaContext {
  return { job: d.job, round: d.round, parent: d.parent, peer: d.peer };
}

/** Reads the values of announced deltas. */
export class DeltaReader {
  readonly #blobs: Pick<BlobGetter, "get" | "has">;
  readonly #spec: JobSpec;
  readonly #parameterCount: number;
  readonly #state: () => Pick<RoundState, "config" | "deltas" | "live">;
  /** Exact size of this job's encoded deltas. */
  readonly #maxBytes: number;

  constructor(
    blobs: Pick<BlobGetter, "get" | "has">,
    spec: JobSpec,
    parameterCount: number,
    state: () => Pick<RoundState, "config" | "deltas" | "live">,
  ) {
    this.#blobs = blobs;
    this.#spec = spec;
    this.#parameterCount = parameterCount;
    this.#state = state;
    this.#maxBytes = deltaBlobMaxBytes(spec, parameterCount);
  }

  /**
   * The values of announced delta `d`: its blob (in a sharded job, its
   * root and every piece), fetched from `providers` if need be, then
   * (after a margin g, or at once when they fail) from the round's other
   * peers too, read only if bound to `d`'s job, round, parent and peer.
   * With no providers, only blocks held here are read, and a
   * {@linkcode NotHeldError} thrown when one is not: no peer is asked.
   */
  async read(d: DeltaAnnounce, providers: string[]): Promise<Float32Array> {
    if (!isSharded(this.#spec)) {
      return await this.#fetch(d.delta, {
        what: "delta",
        maxBytes: this.#maxBytes,
        decode: (bytes) =>
          decodeDeltaBlob(bytes, contextOf(d), this.#parameterCount),
      }, providers);
    }
    return await this.#pieces(
      d,
      providers,
      0,
      pieceBounds(this.#parameterCount).length - 1,
    );
  }

  /**
   * The CIDs of the pieces of announced delta `d` of a sharded job: its
   * root, fetched as {@linkcode read} fetches a blob and checked to be
   * bound to `d`.
   */
  async root(d: DeltaRef, providers: string[]): Promise<CID[]> {
    return await this.#fetch(d.delta, {
      what: "delta root",
      maxBytes: deltaRootMaxBytes(this.#parameterCount),
      decode: (bytes) =>
        decodeDeltaRoot(bytes, contextOf(d), this.#parameterCount),
    }, providers);
  }

  /**
   * The values of slice `j` of `k` (`sliceBounds`) of announced delta `d`
   * of a sharded job: its root and that slice's pieces only.
   */
  async readSlice(
    d: DeltaRef,
    providers: string[],
    k: number,
    j: number,
  ): Promise<Float32Array> {
    const { from, to } = slicePieces(this.#parameterCount, k, j);
    return await this.#pieces(d, providers, from, to);
  }

  /** Pieces [from, to) of `d`, fetched a few at a time, as one vector. */
  async #pieces(
    d: DeltaRef,
    providers: string[],
    from: number,
    to: number,
  ): Promise<Float32Array> {
    const cids = await this.root(d, providers);
    const bounds = pieceBounds(this.#parameterCount);
    const values = new Float32Array(bounds[to] - bounds[from]);
    const indices = Array.from({ length: to - from }, (_, k) => from + k);
    await mapAtMost(indices, PIECES_AT_ONCE, async (i) => {
      const piece = await this.#fetch(cidToString(cids[i]), {
        what: "delta piece",
        maxBytes: pieceMaxBytes(this.#spec, this.#parameterCount, i),
        decode: (bytes) => decodePiece(bytes, this.#parameterCount, i),
      }, providers);
      values.set(piece, bounds[i] - bounds[from]);
    });
    return values;
  }

  /**
   * Block `cid` decoded by `want`, fetched from `providers` if need be,
   * then (after a margin g, or at once when they fail) from the round's
   * other peers too; with no providers, only one held here, else a
   * {@linkcode NotHeldError}.
   */
  async #fetch<T>(
    cid: string,
    want: Omit<BlobWant<T>, "providers" | "timeoutMs">,
    providers: string[],
  ): Promise<T> {
    const { config } = this.#state();
    const timeoutMs = collectMs(config);
    const full: BlobWant<T> = { ...want, providers, timeoutMs };
    if (providers.length === 0) {
      if (!await this.#blobs.has(cid)) throw new NotHeldError("delta", cid);
      return await this.#blobs.get(cid, full);
    }
    const others = this.#holders(providers);
    const first = this.#blobs.get(cid, full);
    if (others.length === 0) return await first;
    first.catch(() => {}); // awaited below, or its fetch joined
    const deadline = Date.now() + timeoutMs;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const margin = new Promise<null>((resolve) => {
      timer = setTimeout(() => resolve(null), censorGraceMs(config));
    });
    try {
      const got = await Promise.race([first, margin]);
      if (got !== null) return got;
    } catch {
      // The given providers failed: the others are asked next.
    } finally {
      clearTimeout(timer);
    }
    // Joins a fetch still under way: the others are offered to it, and a
    // provider that has sent nothing gives way.
    return await this.#blobs.get(cid, {
      ...full,
      providers: [...providers, ...others],
      timeoutMs: Math.max(1, deadline - Date.now()),
    });
  }

  /**
   * Peers likely to hold a delta besides `providers`: every peer of the round
   * fetches each delta it hears of, so when its author cannot be reached
   * from here (a link cut mid-round) one that fetched it before serves it.
   * Without them a leader leaves out a delta its verifiers hold, they
   * refuse its manifest as censoring, and with a tight quorum nobody's
   * manifest can gather one.
   */
  #holders(providers: string[]): string[] {
    const { config, deltas, live } = this.#state();
    const known = new Set([...providers, config.self]);
    return [...new Set([...live, ...deltas.keys()])]
      .filter((p) => !known.has(p))
      .sort(comparePeerIds);
  }

  /**
   * The deltas peers other than `self` announced this round so far, each
   * from its author; those that cannot be read are left out.
   */
  async others(
    self: string,
  ): Promise<{ peer: string; delta: Float32Array }[]> {
    const others = [...this.#state().deltas.values()]
      .filter((d) => d.peer !== self);
    const got = await Promise.all(others.map(async (d) => {
      try {
        return { peer: d.peer, delta: await this.read(d, [d.peer]) };
      } catch {
        return null;
      }
    }));
    return got.filter((g) => g !== null);
  }
}
