/**
 * One request of `/zoo/blob/1.0.0` to one peer: open a stream, send the
 * request, read the answer's header. What a whole-blob pull and a leaf of
 * a swarm fetch both start with.
 *
 * @module
 */
import type { Libp2p, Stream } from "@libp2p/interface";
import { peerIdFromString } from "@libp2p/peer-id";
import {
  BLOB_PROTOCOL,
  type BlobRequest,
  type BlobResponse,
  MAX_BLOB_FRAME_BYTES,
  parseBlobResponse,
} from "../../protocol/messages/blob_messages.ts";
import { NodeError } from "../errors.ts";
import { readJsonFrame, StreamReader, writeJsonFrame } from "./stream_io.ts";

/** A provider could not serve this fetch; the next one is tried. */
export class PeerRefused extends NodeError {}

/**
 * A provider serving all it can at once ("busy"): a refusal for now, not
 * for this fetch, which asks it again after a pause.
 */
export class PeerBusy extends NodeError {}

/** What a request uses of the blob service. */
export interface RequestContext {
  host: Pick<Libp2p, "dialProtocol">;
  headerTimeoutMs: number;
}

/** An answered request: its stream, a reader on it and the header. */
export interface BlobAnswer {
  stream: Stream;
  reader: StreamReader;
  header: BlobResponse;
}

/**
 * Sends `request` to `peer` and reads the header of its answer. A peer
 * that takes the stream and says nothing within the header timeout is
 * added to `silent` and fails; a malformed header is a
 * {@linkcode PeerRefused}. A refusal comes back as the header says it:
 * the caller decides. On any failure the stream is aborted.
 */
export async function requestBlob(
  ctx: RequestContext,
  peer: string,
  request: BlobRequest,
  silent: string[],
  signal: AbortSignal | undefined,
  readerHighWaterMark = 4 << 20,
): Promise<BlobAnswer> {
  const dialSignal = anySignal(signal, ctx.headerTimeoutMs);
  const stream = await settledFirst(
    ctx.host.dialProtocol(peerIdFromString(peer), BLOB_PROTOCOL, {
      signal: dialSignal,
    }),
    dialSignal,
    (late) => late.abort(new Error("the fetch gave up before the stream")),
  );
  try {
    const reader = new StreamReader(stream, {
      highWaterMark: readerHighWaterMark,
    });
    await writeJsonFrame(stream, request);
    const headerSignal = anySignal(signal, ctx.headerTimeoutMs);
    const header = parseBlobResponse(
      await readJsonFrame(reader, MAX_BLOB_FRAME_BYTES, headerSignal)
        .catch((err) => {
          if (!signal?.aborted && headerSignal.aborted) {
            if (!silent.includes(peer)) silent.push(peer);
            throw new NodeError(
              `took the request and answered nothing in ${ctx.headerTimeoutMs} ms`,
              { cause: err },
            );
          }
          throw err;
        }),
    );
    if (!header) throw new PeerRefused("sent a malformed response header");
    return { stream, reader, header };
  } catch (err) {
    stream.abort(err instanceof Error ? err : new Error(String(err)));
    throw err;
  }
}

/**
 * `promise`'s value, or `signal`'s reason as soon as it aborts: libp2p
 * may go on dialing a silent peer well past an aborted signal. A value
 * that comes too late is handed to `discard`.
 */
function settledFirst<T>(
  promise: Promise<T>,
  signal: AbortSignal,
  discard: (late: T) => void,
): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const quit = () => reject(signal.reason);
    if (signal.aborted) quit();
    signal.addEventListener("abort", quit, { once: true });
    promise.then(
      (value) => signal.aborted ? discard(value) : resolve(value),
      reject,
    ).finally(() => signal.removeEventListener("abort", quit));
  });
}

/** `signal` (if any) or a timeout of `ms`, whichever aborts first. */
export function anySignal(
  signal: AbortSignal | undefined,
  ms: number,
): AbortSignal {
  const timeout = AbortSignal.timeout(ms);
  return signal ? AbortSignal.any([signal, timeout]) : timeout;
}
