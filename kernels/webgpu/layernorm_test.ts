/**
 * Layernorm forward (out, mean, rstd) and backward (dx, dw, db) against
 * the float64 reference and the WASM backend, with rows beyond one chunk
 * of the column sums and C beyond one workgroup. Tolerance 1e-5 normwise.
 */
import { Rng } from "../wasm/_test_helpers.ts";
import {
  layernormBackward,
  layernormForward,
  layernormScratch,
} from "./layernorm.ts";
import { assertMatches, gpuTest, references, uploadF32 } from "./_test_gpu.ts";

const TOLERANCE = 1e-5;
const SHAPES = [[11, 37], [130, 64], [3, 300]];

gpuTest("layernorm forward and backward", async (ctx) => {
  const rng = new Rng();
  for (const [rows, C] of SHAPES) {
    const x = rng.fill(new Float32Array(rows * C), 3);
    const w = rng.fill(new Float32Array(C)), b = rng.fill(new Float32Array(C));
    const dout = rng.fill(new Float32Array(rows * C));
    const dx = rng.fill(new Float32Array(rows * C));
    const dw = rng.fill(new Float32Array(C)),
      db = rng.fill(new Float32Array(C));
    const refs = await references({ x, w, b, dout, dx, dw, db }, (be, i) => {
      const f = i as Record<string, Float32Array>;
      const out = be.alloc(rows * C), mean = be.alloc(rows);
      const rstd = be.alloc(rows);
      be.layernorm(out, mean, rstd, f.x, f.w, f.b, rows, C);
      be.layernormBackward(
        f.dx,
        f.dw,
        f.db,
        f.dout,
        f.x,
        f.w,
        mean,
        rstd,
        rows,
        C,
      );
      return { out, mean, rstd, dx: f.dx, dw: f.dw, db: f.db };
    });
    const t = {
      out: ctx.tensor(rows * C),
      mean: ctx.tensor(rows),
      rstd: ctx.tensor(rows),
      x: uploadF32(ctx, x),
      w: uploadF32(ctx, w),
      b: uploadF32(ctx, b),
    };
    const g = {
      dx: uploadF32(ctx, dx),
      dw: uploadF32(ctx, dw),
      db: uploadF32(ctx, db),
      dout: uploadF32(ctx, dout),
      scratch: ctx.tensor(layernormScratch(rows, C)),
    };
    ctx.run([
      layernormForward(ctx, t, rows, C),
      ...layernormBackward(ctx, { ...t, ...g }, rows, C, { accumulate: true }),
    ]);
    const what = `layernorm ${rows}x${C}`;
    for (const [key, tensor] of Object.entries({ ...t, ...g })) {
      if (key in refs.f64) {
        const k = key as keyof typeof refs.f64;
        assertMatches(
          await ctx.readF32(tensor),
          refs,
          k,
          TOLERANCE,
          `${what} ${key}`,
        );
      }
    }
  }
});
