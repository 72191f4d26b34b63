/**
 * Fetching blobs by CID over `/zoo/blob/1.0.0`: a block provider after
 * provider, resuming where the last one stopped; a file (a dag-pb CID)
 * leaf by leaf from every provider at once (./file_fetch.ts); each
 * verified against its CID, and one transfer per blob however many
 * callers want it.
 *
 * @module
 */
import type { CID } from "multiformats/cid";
import { cidToString } from "../../protocol/content/cid.ts";
import { DAG_PB_CODEC } from "../../protocol/content/unixfs.ts";
import { fetchFile, SwarmExhausted } from "./file_fetch.ts";
import { NodeError } from "../errors.ts";
import {
  BlockCorruptError,
  type BlockStorage,
  type PartialBlock,
} from "../store/block_storage.ts";
import {
  anySignal,
  type FetchOptions,
  type FetchReport,
  PeerBusy,
  PeerRefused,
  pullBlob,
  type PullContext,
  RestartDownload,
} from "./blob_pull.ts";

/** No provider could deliver the blob. */
export class BlobFetchError extends NodeError {
  readonly cid: string;
  readonly report: FetchReport;
  constructor(cid: string, report: FetchReport) {
    const reasons = Object.entries(report.failed)
      .map(([p, why]) => `${p}: ${why}`).join("; ");
    super(
      `Cannot fetch blob ${cid} as no provider delivered it (${
        reasons || "no providers"
      })`,
    );
    this.name = "BlobFetchError";
    this.cid = cid;
    this.report = report;
  }
}

/** What fetching uses of the node. */
export interface FetchContext extends PullContext {
  store: BlockStorage;
  /** Counts fetches, and local copies found rotten. */
  stats: { fetched: number; fetchedBytes: number; corruptLocal: number };
}

/** The node's fetches, each blob's shared by all who want it. */
export class BlobFetches {
  readonly #ctx: FetchContext;
  /** Fetches in progress by CID, so concurrent callers share one transfer. */
  readonly #inflight = new Map<string, SharedFetch>();

  constructor(ctx: FetchContext) {
    this.#ctx = ctx;
  }

  /**
   * Fetches a blob into the local blockstore, trying `providers` (peer id
   * strings) in order. A provider that fails mid-transfer is left and the
   * next one resumes from the same byte; one whose bytes do not hash to the
   * CID is marked bad and never asked again in this fetch.
   *
   * Calls for a blob already being fetched join that transfer: their
   * providers are added to its list, and a provider still silent when
   * another is offered gives way to it. The transfer goes on while any
   * caller still waits; each caller gives up at its own `signal` or
   * `timeoutMs`. The first caller's `maxBytes` and `onProgress` hold.
   */
  async fetch(
    cid: CID,
    providers: string[],
    options: FetchOptions = {},
  ): Promise<FetchReport> {
    const { maxBytes, timeoutMs } = options;
    if (maxBytes !== undefined && !(maxBytes >= 0)) {
      // NaN would compare false against every size: no limit at all.
      throw new RangeError(
        `Cannot fetch with maxBytes ${maxBytes}: expected a number >= 0`,
      );
    }
    const signal = timeoutMs === undefined
      ? options.signal
      : anySignal(options.signal, timeoutMs);
    signal?.throwIfAborted();
    const deadline = timeoutMs === undefined
      ? Infinity
      : Date.now() + timeoutMs;
    const key = cidToString(cid);
    let running = this.#inflight.get(key);
    while (running?.state.stop.signal.aborted) {
      // Given up by all its callers and still winding down: it owns the
      // part file until it has.
      await running.done.catch(() => {});
      running = this.#inflight.get(key);
    }
    if (running) {
      const { state } = running;
      const offered = providers.filter((p) => !state.providers.includes(p));
      state.providers.push(...offered);
      if (offered.length > 0) state.attempt?.giveWay();
      return await waitFor(running, signal, deadline);
    }
    const state: FetchState = {
      providers: [...new Set(providers)],
      deadlines: [],
      stop: new AbortController(),
      attempt: null,
    };
    const shared: SharedFetch = {
      state,
      done: this.#fetch(cid, state, options).finally(() => {
        if (this.#inflight.get(key) === shared) this.#inflight.delete(key);
      }),
    };
    this.#inflight.set(key, shared);
    return await waitFor(shared, signal, deadline);
  }

  async #fetch(
    cid: CID,
    shared: FetchState,
    options: FetchOptions,
  ): Promise<FetchReport> {
    const key = cidToString(cid);
    const report: FetchReport = {
      cid: key,
      size: 0,
      bytesFrom: {},
      bad: [],
      failed: {},
      silent: [],
      local: false,
    };
    const localSize = await this.#ctx.store.size(cid);
    if (localSize !== null) {
      // A block that rotted on disk is not "already stored": verify deletes
      // it, and it is fetched again like any missing block.
      if (await this.#ctx.store.verify(cid)) {
        return { ...report, size: localSize, local: true };
      }
      this.#ctx.stats.corruptLocal++;
    }
    if (cid.code === DAG_PB_CODEC) {
      try {
        await fetchFile(
          this.#ctx,
          cid,
          shared,
          options,
          report,
          shared.stop.signal,
        );
      } catch (err) {
        if (err instanceof SwarmExhausted) {
          throw new BlobFetchError(key, report);
        }
        throw err;
      }
      this.#ctx.stats.fetched++;
      return report;
    }
    const order = shared.providers;
    const signal = shared.stop.signal;
    const failures = new Map<string, number>();
    // Peers whose bytes went into a transfer that later failed its hash
    // check together with other peers' bytes: one of them lied, so each is
    // retried alone before anyone is trusted with a shared transfer again.
    const suspects = new Set<string>();
    let partial: PartialBlock | undefined;
    let contributors = new Set<string>();
    // Fewest failures first (a stable sort keeps the caller's order among
    // equals), so a peer that just failed is retried only after the others.
    // A busy peer goes after those less busy, and stays eligible.
    const busy = new Map<string, number>();
    const rank = (p: string) =>
      (failures.get(p) ?? 0) + (busy.get(p) ?? 0) / 1024;
    const eligible = () =>
      order.filter((p) =>
        !report.bad.includes(p) && (failures.get(p) ?? 0) < MAX_TRIES
      ).sort((a, b) => rank(a) - rank(b));
    try {
      while (true) {
        signal.throwIfAborted();
        const candidates = eligible();
        if (candidates.length === 0) throw new BlobFetchError(key, report);
        const clean = candidates.filter((p) => !suspects.has(p));
        const peer = clean[0] ?? candidates[0];
        if (suspects.has(peer) && partial && partial.offset > 0) {
          await partial.truncate();
          contributors = new Set();
        }
        const pull = { partial };
        const before = partial?.offset ?? 0;
        const attempt = new Attempt(() => (pull.partial?.offset ?? 0) > before);
        shared.attempt = attempt;
        // A silent provider must not use up the time the ones after it
        // need: while others are untried, each gets its share of what is
        // left before it must answer.
        const untried = candidates.filter((p) => !failures.has(p)).length;
        const share = failures.has(peer) || untried < 2
          ? Infinity
          : (Math.min(...shared.deadlines) - Date.now()) / untried;
        try {
          await pullBlob(
            {
              ...this.#ctx,
              headerTimeoutMs: Math.min(this.#ctx.headerTimeoutMs, share),
            },
            cid,
            peer,
            pull,
            report,
            { ...options, signal: AbortSignal.any([signal, attempt.signal]) },
          );
        } catch (err) {
          signal.throwIfAborted();
          if (err instanceof RestartDownload) continue;
          if (err instanceof PeerBusy) {
            // Serving all it can: asked again after a pause (others are
            // asked meanwhile), up to MAX_BUSY times.
            report.failed[peer] = errorText(err);
            const times = (busy.get(peer) ?? 0) + 1;
            busy.set(peer, times);
            // Busy for good (a fetch may have no deadline): given up on.
            if (times >= MAX_BUSY) failures.set(peer, MAX_TRIES);
            else await pause(busyPause(times), signal);
            continue;
          }
          // A refusal is an answer, and so is taking the request and
          // saying nothing for the header timeout; a reset, a stall or
          // giving way may pass, so such a peer gets one more chance.
          const count =
            err instanceof PeerRefused || report.silent.includes(peer)
              ? MAX_TRIES
              : 1;
          failures.set(peer, (failures.get(peer) ?? 0) + count);
          report.failed[peer] = attempt.signal.aborted
            ? "sent nothing before another provider was offered"
            : errorText(err);
          continue;
        } finally {
          shared.attempt = null;
          partial = pull.partial;
          if ((partial?.offset ?? 0) > before) contributors.add(peer);
        }
        if (!partial) {
          throw new Error("unreachable: a pull ended without a partial");
        }
        try {
          await partial.commit();
          partial = undefined;
          this.#ctx.stats.fetched++;
          return report;
        } catch (err) {
          if (!(err instanceof BlockCorruptError)) throw err;
          if (contributors.size === 1) {
            report.bad.push(peer);
            report.failed[peer] = "sent bytes that do not match the CID";
          } else {
            for (const p of contributors) suspects.add(p);
          }
          contributors = new Set();
          suspects.delete(peer);
        }
      }
    } finally {
      await partial?.close();
      // Bytes that arrived are kept for a resume; an empty part file that
      // no later fetch may ever claim is not.
      if (partial?.offset === 0) await this.#ctx.store.discardPartial(cid);
    }
  }
}

/** Failed attempts after which a provider is not asked again in a fetch. */
const MAX_TRIES = 2;

/** "busy" answers after which a provider is not asked again: about 20 s. */
const MAX_BUSY = 16;

/**
 * The pause before asking again after the `n`th "busy": 50 ms doubling to
 * 1.6 s, jittered so the peers a busy one turned away do not come back
 * together.
 */
function busyPause(n: number): number {
  return (50 << Math.min(n - 1, 5)) * (0.5 + Math.random());
}

/** Resolves after `ms`, or rejects when `signal` aborts. */
function pause(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(resolve, ms);
    signal.addEventListener("abort", () => {
      clearTimeout(timer);
      reject(signal.reason);
    }, { once: true });
  });
}

/** What a fetch under way reads, and its callers change. */
interface FetchState {
  /** In the order to try; callers that join append theirs. */
  providers: string[];
  /** When each waiting caller gives up (Infinity: it does not). */
  deadlines: number[];
  /** Aborted when every caller has given up. */
  stop: AbortController;
  /** The pull from one provider (or the swarm) under way, if any. */
  attempt: { giveWay(): void } | null;
}

/** A fetch under way, shared by every caller that wants the same blob. */
interface SharedFetch {
  state: FetchState;
  done: Promise<FetchReport>;
}

/** One provider's turn in a fetch. */
class Attempt {
  readonly #abort = new AbortController();
  readonly #received: () => boolean;
  constructor(received: () => boolean) {
    this.#received = received;
  }
  get signal(): AbortSignal {
    return this.#abort.signal;
  }
  /** Ends the turn if the provider has sent nothing yet. */
  giveWay(): void {
    if (!this.#received()) this.#abort.abort();
  }
}

/**
 * The shared fetch's report, or `signal`'s reason if it aborts first (by
 * `deadline`, if it has a timeout); the fetch is stopped when its last
 * caller leaves.
 */
async function waitFor(
  shared: SharedFetch,
  signal: AbortSignal | undefined,
  deadline: number,
): Promise<FetchReport> {
  const { deadlines } = shared.state;
  deadlines.push(deadline);
  try {
    if (!signal) return await shared.done;
    return await new Promise<FetchReport>((resolve, reject) => {
      const quit = () => reject(signal.reason);
      signal.addEventListener("abort", quit, { once: true });
      shared.done.then(resolve, reject).finally(() =>
        signal.removeEventListener("abort", quit)
      );
    });
  } finally {
    deadlines.splice(deadlines.indexOf(deadline), 1);
    if (deadlines.length === 0) shared.state.stop.abort(signal?.reason);
  }
}

function errorText(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
