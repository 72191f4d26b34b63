/**
 * The lines of a byte stream, for the JSON-line channel between the kernels
 * benchmark and a peer library's process (`peers/server.ts`), and a bench and
 * the processes it starts.
 *
 * @module
 */

/** Yields each newline-ended line of `stream`, without its newline. */
export async function* lines(
  stream: ReadableStream<Uint8Array<ArrayBuffer>>,
): AsyncGenerator<string> {
  let pending = "";
  for await (const chunk of stream.pipeThrough(new TextDecoderStream())) {
    pending += chunk;
    for (
      let end = pending.indexOf("\n");
      end >= 0;
      end = pending.indexOf("\n")
    ) {
      yield pending.slice(0, end);
      pending = pending.slice(end + 1);
    }
  }
}
