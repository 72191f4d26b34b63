/**
 * Peer matmul implementations for the kernels benchmark: TensorFlow.js's
 * WASM backend (XNNPACK) and onnxruntime-web's WASM backend (MLAS), behind
 * the same {@linkcode MatmulImpl} as our backends. Each runs in a process
 * of its own from `peers/`, a Deno project apart, so that the product's
 * lockfile does not name them (see `peers/server.ts`); its first start
 * installs them there. Timing happens inside that process.
 *
 * What each call includes, so the comparison is read right: ours runs on
 * operands already in its memory and writes into it; tfjs also copies Y
 * out (`dataSync`); onnxruntime copies A and B in and Y out on every run.
 * At n >= 256 those copies are a few percent of the product.
 *
 * @module
 */
import type { MatmulImpl, MatmulProblem } from "./kernels_matmul.ts";
import { lines } from "./_lines.ts";

const PEERS = new URL("./peers/", import.meta.url);

/** TensorFlow.js's `tf.matMul` on its WASM backend, one thread. */
export function tfjsMatmul(): Promise<MatmulImpl> {
  return peerMatmul("tfjs-wasm", "tfjs", 1);
}

/** onnxruntime-web's WASM MatMul (or Gemm transB=1) on `threads` threads. */
export function ortMatmul(threads: number): Promise<MatmulImpl> {
  return peerMatmul("onnxruntime-web", "ort", threads);
}

/** Starts `peers/server.ts` for one library and thread count. */
async function peerMatmul(
  name: string,
  impl: string,
  threads: number,
): Promise<MatmulImpl> {
  const child = new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "-A",
      "--config",
      new URL("deno.json", PEERS).pathname,
      new URL("server.ts", PEERS).pathname,
      impl,
      String(threads),
    ],
    stdin: "piped",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const dir = await Deno.makeTempDir({ prefix: "zoo-bench-peer-" });
  const replies = lines(child.stdout);
  const stdin = child.stdin.getWriter();
  const stop = async () => {
    await stdin.close().catch(() => {});
    child.kill("SIGKILL");
    await child.status;
    await child.stderr.cancel().catch(() => {});
    await Deno.remove(dir, { recursive: true }).catch(() => {});
  };
  const next = async (): Promise<Record<string, unknown>> => {
    const { value, done } = await replies.next();
    if (done) {
      const err = await new Response(child.stderr).text().catch(() => "");
      throw new Error(`${name} exited: ${err.trim().slice(-400)}`);
    }
    const reply = JSON.parse(value);
    if (reply.error) throw new Error(`${name}: ${reply.error}`);
    return reply;
  };
  const call = async (msg: Record<string, unknown>) => {
    await stdin.write(new TextEncoder().encode(JSON.stringify(msg) + "\n"));
    return await next();
  };
  try {
    await next();
  } catch (error) {
    await stop();
    throw error;
  }
  return {
    name,
    threads,
    async load(p: MatmulProblem) {
      await Deno.writeFile(`${dir}/a`, bytesOf(p.a));
      await Deno.writeFile(`${dir}/b`, bytesOf(p.b));
      await call({
        cmd: "load",
        n: p.n,
        transB: p.layout === "transposed",
        a: `${dir}/a`,
        b: `${dir}/b`,
      });
    },
    async time(times: number) {
      return (await call({ cmd: "time", times })).seconds as number;
    },
    async output() {
      await call({ cmd: "output", path: `${dir}/y` });
      const bytes = await Deno.readFile(`${dir}/y`);
      return new Float32Array(bytes.buffer, 0, bytes.byteLength / 4);
    },
    dispose: stop,
  };
}

function bytesOf(x: Float32Array): Uint8Array {
  return new Uint8Array(x.buffer, x.byteOffset, x.byteLength);
}
