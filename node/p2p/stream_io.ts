import { NodeError } from "../errors.ts";
import type { Stream, StreamCloseEvent } from "@libp2p/interface";

/** The stream ended, timed out or sent a frame over its limit. */
export class StreamIoError extends NodeError {
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = "StreamIoError";
  }
}

/**
 * Pull-based reader over a libp2p stream with real backpressure: when more
 * than `highWaterMark` bytes wait unread it pauses the stream, which stops
 * yamux window updates, so a fast sender cannot grow our memory without bound.
 */
export class StreamReader {
  readonly #stream: Stream;
  readonly #highWaterMark: number;
  #queue: Uint8Array[] = [];
  #queued = 0;
  #ended = false;
  #error: Error | undefined;
  #wake: (() => void) | undefined;

  constructor(stream: Stream, options: { highWaterMark?: number } = {}) {
    this.#stream = stream;
    this.#highWaterMark = options.highWaterMark ?? 1 << 20;
    // While paused, bytes already in flight still land in the stream's own
    // buffer: it must hold a full yamux window (16 MiB at most) or the
    // stream aborts itself.
    stream.maxReadBufferLength = Math.max(stream.maxReadBufferLength, 32 << 20);
    stream.addEventListener("message", (evt) => {
      const data = evt.data;
      this.#queue.push(data instanceof Uint8Array ? data : data.subarray());
      this.#queued += data.byteLength;
      if (
        this.#queued > this.#highWaterMark && stream.readStatus === "readable"
      ) {
        stream.pause();
      }
      this.#notify();
    });
    stream.addEventListener("remoteCloseWrite", () => {
      this.#ended = true;
      this.#notify();
    });
    stream.addEventListener("close", (evt) => {
      this.#ended = true;
      this.#error = evt.error;
      this.#notify();
    });
    if (stream.remoteWriteStatus === "closed" || stream.status !== "open") {
      // Data that arrived before we listened is redispatched in a microtask
      // queued by the 'message' listener above, so mark the end after it.
      queueMicrotask(() => {
        this.#ended = true;
        this.#notify();
      });
    }
  }

  /** Bytes buffered but not yet read. */
  get buffered(): number {
    return this.#queued;
  }

  /**
   * Resolves with the next chunk of at most `max` bytes, or null once the
   * remote has finished sending. Rejects if the stream was aborted or reset.
   */
  async read(max = Infinity, signal?: AbortSignal): Promise<Uint8Array | null> {
    while (this.#queue.length === 0) {
      if (this.#error) {
        throw new StreamIoError("stream reset", { cause: this.#error });
      }
      if (this.#ended) return null;
      await this.#waitForData(signal);
    }
    let head = this.#queue[0];
    if (head.byteLength > max) {
      this.#queue[0] = head.subarray(max);
      head = head.subarray(0, max);
    } else {
      this.#queue.shift();
    }
    this.#queued -= head.byteLength;
    if (
      this.#queued <= this.#highWaterMark / 2 &&
      this.#stream.readStatus === "paused"
    ) {
      this.#stream.resume();
    }
    return head;
  }

  /** Reads exactly `n` bytes, or throws if the stream ends first. */
  async readExactly(n: number, signal?: AbortSignal): Promise<Uint8Array> {
    const out = new Uint8Array(n);
    let filled = 0;
    while (filled < n) {
      const chunk = await this.read(n - filled, signal);
      if (chunk === null) {
        throw new StreamIoError(
          `stream ended after ${filled} of ${n} expected bytes`,
        );
      }
      out.set(chunk, filled);
      filled += chunk.byteLength;
    }
    return out;
  }

  #notify(): void {
    const wake = this.#wake;
    this.#wake = undefined;
    wake?.();
  }

  #waitForData(signal?: AbortSignal): Promise<void> {
    return new Promise((resolve, reject) => {
      if (signal?.aborted) {
        return reject(
          new StreamIoError("read timed out", { cause: signal.reason }),
        );
      }
      const onAbort = () => {
        this.#wake = undefined;
        reject(new StreamIoError("read timed out", { cause: signal?.reason }));
      };
      signal?.addEventListener("abort", onAbort, { once: true });
      this.#wake = () => {
        signal?.removeEventListener("abort", onAbort);
        resolve();
      };
    });
  }
}

/**
 * Sends bytes, waiting until the stream has handed its whole send buffer to
 * the muxer, so at most one chunk plus one yamux window is held in memory.
 *
 * Waits on 'drain' events, not `stream.onDrain()`: in @libp2p/utils 7.4 that
 * promise is never reset once resolved, so after the first drain it returns
 * at once and a fast writer queues everything it has into the send buffer.
 */
export async function writeAll(
  stream: Stream,
  data: Uint8Array,
  signal?: AbortSignal,
): Promise<void> {
  stream.send(data);
  while (stream.writableNeedsDrain) await nextDrain(stream, signal);
}

function nextDrain(stream: Stream, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    const settle = (err?: StreamIoError) => {
      stream.removeEventListener("drain", onDrain);
      stream.removeEventListener("close", onClose);
      signal?.removeEventListener("abort", onAbort);
      if (err) reject(err);
      else resolve();
    };
    const onDrain = () => settle();
    const onClose = (evt: StreamCloseEvent) =>
      settle(
        new StreamIoError("stream closed while sending", { cause: evt.error }),
      );
    const onAbort = () =>
      settle(new StreamIoError("write timed out", { cause: signal?.reason }));
    if (signal?.aborted) return onAbort();
    if (stream.writeStatus === "closed") {
      return settle(new StreamIoError("stream closed while sending"));
    }
    stream.addEventListener("drain", onDrain);
    stream.addEventListener("close", onClose);
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}

/**
 * Writes one JSON frame: a 4-byte big-endian length, then UTF-8 JSON.
 * Frames carry small control messages; bulk bytes follow them raw.
 */
export async function writeJsonFrame(
  stream: Stream,
  value: unknown,
  signal?: AbortSignal,
): Promise<void> {
  const body = new TextEncoder().encode(JSON.stringify(value));
  const frame = new Uint8Array(4 + body.byteLength);
  new DataView(frame.buffer).setUint32(0, body.byteLength);
  frame.set(body, 4);
  await writeAll(stream, frame, signal);
}

/** Reads one JSON frame of at most `maxBytes`, refusing larger ones unread. */
export async function readJsonFrame(
  reader: StreamReader,
  maxBytes: number,
  signal?: AbortSignal,
): Promise<unknown> {
  const head = await reader.readExactly(4, signal);
  const length = new DataView(head.buffer, head.byteOffset).getUint32(0);
  if (length > maxBytes) {
    throw new StreamIoError(
      `frame of ${length} bytes exceeds the limit of ${maxBytes}`,
    );
  }
  const body = await reader.readExactly(length, signal);
  try {
    return JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(body));
  } catch (err) {
    throw new StreamIoError("frame is not valid UTF-8 JSON", { cause: err });
  }
}
