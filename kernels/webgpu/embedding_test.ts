/**
 * The encoder (token + position embeddings) against the float64 reference
 * and the WASM backend: forward, and the backward scatter-add with
 * repeated ids, which must follow the reference's row order. Tolerance
 * 1e-6 normwise (sums of a few float32 terms).
 */
import { deepEqual, throws } from "node:assert";
import { Rng } from "../wasm/_test_helpers.ts";
import { bucketTokens, encoderBackward, encoderForward } from "./embedding.ts";
import { assertMatches, gpuTest, references, uploadF32 } from "./_test_gpu.ts";

const TOLERANCE = 1e-6;

gpuTest("encoder forward and backward", async (ctx) => {
  const rng = new Rng();
  for (const [B, T, C, V] of [[2, 5, 7, 3], [3, 17, 33, 50]]) {
    const rows = B * T;
    const ids = Int32Array.from({ length: rows }, () => rng.int(V));
    const positions = Int32Array.from({ length: rows }, (_, r) => r % T);
    const wte = rng.fill(new Float32Array(V * C));
    const wpe = rng.fill(new Float32Array(T * C));
    const dout = rng.fill(new Float32Array(rows * C));
    const dwte = rng.fill(new Float32Array(V * C));
    const dwpe = rng.fill(new Float32Array(T * C));
    const refs = await references(
      { ids, positions, wte, wpe, dout, dwte, dwpe },
      (be, i) => {
        const f = i as Record<string, Float32Array>;
        const [id, pos] = [i.ids as Int32Array, i.positions as Int32Array];
        const a = be.alloc(rows * C), b = be.alloc(rows * C);
        be.embedding(a, f.wte, id, rows, C);
        be.embedding(b, f.wpe, pos, rows, C);
        const out = be.alloc(rows * C);
        be.add(out, a, b, rows * C);
        be.embeddingBackward(f.dwte, f.dout, id, rows, C);
        be.embeddingBackward(f.dwpe, f.dout, pos, rows, C);
        return { out, dwte: f.dwte, dwpe: f.dwpe };
      },
    );
    const out = ctx.tensor(rows * C);
    const gIds = ctx.upload(ids);
    const buckets = bucketTokens(ids, V);
    const g = {
      dwte: uploadF32(ctx, dwte),
      dwpe: uploadF32(ctx, dwpe),
      dout: uploadF32(ctx, dout),
      starts: ctx.upload(buckets.starts),
      order: ctx.upload(buckets.order),
    };
    ctx.run([
      encoderForward(
        ctx,
        {
          out,
          wte: uploadF32(ctx, wte),
          wpe: uploadF32(ctx, wpe),
          ids: gIds,
        },
        rows,
        T,
        C,
      ),
      ...encoderBackward(ctx, g, B, T, C, V),
    ]);
    const what = `encoder B=${B} T=${T} C=${C} V=${V}`;
    assertMatches(await ctx.readF32(out), refs, "out", TOLERANCE, what);
    assertMatches(await ctx.readF32(g.dwte), refs, "dwte", TOLERANCE, what);
    assertMatches(await ctx.readF32(g.dwpe), refs, "dwpe", TOLERANCE, what);
  }
});

Deno.test("bucketTokens sorts rows by id, stably, and rejects bad ids", () => {
  const { starts, order } = bucketTokens(Int32Array.of(2, 0, 2, 1, 0), 4);
  deepEqual([...starts], [0, 2, 3, 5, 5]);
  deepEqual([...order], [1, 4, 3, 0, 2]);
  throws(() => bucketTokens(Int32Array.of(0, 4), 4), /token id 4 at row 1/);
  throws(() => bucketTokens(Int32Array.of(-1), 4), /token id -1 at row 0/);
});
