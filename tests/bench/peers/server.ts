/**
 * One peer library's matmul served to the kernels benchmark over stdin and
 * stdout, in a process of its own: this folder is a Deno project apart
 * (its own deno.json and lockfile), so that the peer libraries
 * (onnxruntime-web, TensorFlow.js: about 200 MB) are not in the product's
 * lockfile and a first run of zoo-node does not fetch them.
 *
 *   deno run -A --config tests/bench/peers/deno.json \
 *     tests/bench/peers/server.ts tfjs|ort THREADS
 *
 * Requests, one JSON line each, answered by one JSON line (`{error}` on a
 * failure); operands and the product travel as raw float32 files:
 *   {cmd: "load", n, transB, a: PATH, b: PATH} -> {}
 *   {cmd: "time", times}                       -> {seconds}  per product
 *   {cmd: "output", path: PATH}                -> {}          Y [n,n] written
 *
 * @module
 */
import { lines } from "../_lines.ts";
import type { PeerMatmul } from "./matmul.ts";
import { ortMatmul } from "./ort.ts";
import { tfjsMatmul } from "./tfjs.ts";

async function start(impl: string, threads: number): Promise<PeerMatmul> {
  if (impl === "tfjs" && threads === 1) return await tfjsMatmul();
  if (impl === "ort" && Number.isInteger(threads) && threads >= 1) {
    return await ortMatmul(threads);
  }
  throw new Error(
    `usage: server.ts tfjs 1 | ort THREADS (got ${impl} ${threads})`,
  );
}

async function floats(path: string): Promise<Float32Array> {
  const bytes = await Deno.readFile(path);
  return new Float32Array(bytes.buffer, bytes.byteOffset, bytes.byteLength / 4);
}

async function handle(
  peer: PeerMatmul,
  msg: Record<string, unknown>,
): Promise<unknown> {
  switch (msg.cmd) {
    case "load":
      await peer.load(
        msg.n as number,
        msg.transB as boolean,
        await floats(msg.a as string),
        await floats(msg.b as string),
      );
      return {};
    case "time":
      return { seconds: await peer.time(msg.times as number) };
    case "output": {
      const y = peer.output();
      await Deno.writeFile(
        msg.path as string,
        new Uint8Array(y.buffer, y.byteOffset, y.byteLength),
      );
      return {};
    }
    default:
      throw new Error(`Unknown request ${JSON.stringify(msg.cmd)}`);
  }
}

const encoder = new TextEncoder();
async function reply(value: unknown): Promise<void> {
  await Deno.stdout.write(encoder.encode(JSON.stringify(value) + "\n"));
}

let peer: PeerMatmul;
try {
  peer = await start(Deno.args[0], Number(Deno.args[1]));
  await reply({ ready: true });
} catch (error) {
  await reply({ error: String(error) });
  Deno.exit(1);
}
for await (const line of lines(Deno.stdin.readable)) {
  try {
    await reply(await handle(peer, JSON.parse(line)));
  } catch (error) {
    await reply({ error: String((error as Error)?.stack ?? error) });
  }
}
