import { FULL_TIER } from "../../tests/_tier.ts";
/**
 * The WGSL matmul against the float64 reference and the WASM backend:
 * every transpose / accumulate / batch combination on odd shapes (scalar
 * loads) and multiples of 4 (vec4 loads), both tiles, offsets into shared
 * buffers, the bias + residual epilogue, and f16 storage.
 *
 * Tolerance: normwise error 1e-5 of the terms' size (|out| + |A||B|, so a
 * sum that cancels to near zero is not held to its own tiny size), as for
 * the WASM kernels (f32 accumulation over k <= 2100 terms stays near 1e-6). f16 storage is
 * checked against the reference on the same f16-rounded inputs, so the
 * f32 accumulation is what is measured, at the same tolerance.
 */
import { throws } from "node:assert";
import { Rng } from "../wasm/_test_helpers.ts";
import { MATMUL_OPTIONS, MATMUL_SHAPES } from "../../tests/kernel_cases.ts";
import type { GpuContext, GpuTensor } from "./context.ts";
import { type GpuMatmulOptions, matmul } from "./matmul.ts";
import {
  assertMatches,
  gpuTest,
  references,
  testGpu,
  uploadF32,
} from "./_test_gpu.ts";

const TOLERANCE = 1e-5;
/** Sizes that are multiples of 4 (vec4 paths) next to the odd ones. */
const ALIGNED: [number, number, number][] = [[64, 32, 132], [8, 12, 20]];

async function check(
  ctx: GpuContext,
  rng: Rng,
  [m, k, n]: [number, number, number],
  opts: GpuMatmulOptions,
): Promise<Float32Array> {
  const batch = opts.batch ?? 1;
  const a = rng.fill(new Float32Array(batch * m * k));
  const b = rng.fill(new Float32Array(batch * k * n));
  const out = rng.fill(new Float32Array(batch * m * n));
  const product = (inputs: Record<"a" | "b" | "out", Float32Array>) =>
    references(inputs, (be, x) => {
      be.matmul(
        x.out as Float32Array,
        x.a as Float32Array,
        x.b as Float32Array,
        m,
        k,
        n,
        opts,
      );
      return { out: x.out as Float32Array };
    });
  const refs = await product({ a, b, out });
  const gOut = uploadF32(ctx, out);
  ctx.run([
    matmul(
      ctx,
      { out: gOut, a: uploadF32(ctx, a), b: uploadF32(ctx, b) },
      m,
      k,
      n,
      opts,
    ),
  ]);
  const got = await ctx.readF32(gOut);
  // The same product of the terms' magnitudes (|out| + |A||B|): the scale
  // the error is measured against, which a sum that cancels to near zero
  // (a 1x1x1 out + a·b) does not shrink.
  const abs = (v: Float32Array) => v.map(Math.abs);
  const scale = await product({ a: abs(a), b: abs(b), out: abs(out) });
  const what = `matmul ${m}x${k}x${n} ${JSON.stringify(opts)}`;
  for (
    const [name, want] of [["float64", refs.f64.out], [
      "wasm",
      refs.wasm.out,
    ]] as const
  ) {
    let err = 0, size = 0;
    for (let i = 0; i < got.length; i++) {
      err += (got[i] - want[i]) ** 2;
      size += scale.f64.out[i] ** 2;
    }
    if (!(Math.sqrt(err) <= TOLERANCE * Math.sqrt(size))) {
      throw new Error(
        `${what} vs ${name}: normwise error ${
          Math.sqrt(err / size)
        } exceeds ${TOLERANCE} of the terms' size`,
      );
    }
  }
  return got;
}

gpuTest(
  "matmul: all layouts, accumulate and batch, tile 64",
  async (ctx, t) => {
    const rng = new Rng();
    for (const shape of [...MATMUL_SHAPES, ...ALIGNED]) {
      await t.step(shape.join("x"), async () => {
        for (const opts of MATMUL_OPTIONS) {
          await check(ctx, rng, shape, { ...opts, tile: 64 });
        }
      });
    }
  },
  FULL_TIER,
);

gpuTest("matmul: tile 128 gives the same bits as tile 64", async (ctx) => {
  const rng = new Rng();
  for (
    const shape of [[130, 37, 141], [132, 40, 136]] as [
      number,
      number,
      number,
    ][]
  ) {
    for (const opts of MATMUL_OPTIONS) {
      const seed = rng.int(2 ** 31);
      const small = await check(ctx, new Rng(seed), shape, {
        ...opts,
        tile: 64,
      });
      const big = await check(ctx, new Rng(seed), shape, {
        ...opts,
        tile: 128,
      });
      if (!small.every((x, i) => Object.is(x, big[i]))) {
        throw new Error(
          `tiles 64 and 128 differ on ${shape} ${JSON.stringify(opts)}`,
        );
      }
    }
  }
}, FULL_TIER);

/** `data` placed at element `offset` of a larger buffer. */
function placed(
  ctx: GpuContext,
  data: Float32Array,
  offset: number,
): GpuTensor {
  const whole = new Float32Array(offset + data.length + 3).fill(NaN);
  whole.set(data, offset);
  const t = uploadF32(ctx, whole);
  return { buffer: t.buffer, offset, length: data.length };
}

gpuTest("matmul: bias and residual epilogue at buffer offsets", async (ctx) => {
  const rng = new Rng();
  for (
    const [[m, k, n], offset] of [[[9, 13, 11], 3], [[12, 16, 20], 8]] as const
  ) {
    const a = rng.fill(new Float32Array(m * k)),
      b = rng.fill(new Float32Array(k * n));
    const bias = rng.fill(new Float32Array(n)),
      res = rng.fill(new Float32Array(m * n));
    const refs = await references({ a, b, bias, res }, (be, x) => {
      const out = be.alloc(m * n);
      be.matmul(out, x.a as Float32Array, x.b as Float32Array, m, k, n);
      be.addBias(out, x.bias as Float32Array, m, n);
      be.add(out, out, x.res as Float32Array, m * n);
      return { out };
    });
    const out = placed(ctx, new Float32Array(m * n), offset);
    ctx.run([matmul(
      ctx,
      {
        out,
        a: placed(ctx, a, offset),
        b: placed(ctx, b, offset + 1),
        bias: placed(ctx, bias, offset),
        residual: placed(ctx, res, offset),
      },
      m,
      k,
      n,
    )]);
    const got =
      (await ctx.readF32({ ...out, offset: 0, length: offset + m * n }))
        .subarray(offset);
    assertMatches(
      got,
      refs,
      "out",
      TOLERANCE,
      `epilogue ${m}x${k}x${n} at ${offset}`,
    );
  }
});

gpuTest("matmul: f16 storage, f32 accumulation", async (ctx) => {
  if (!testGpu!.info.f16) {
    console.log(
      "shader-f16 not offered by this adapter: f16 matmul not checked",
    );
    return;
  }
  const rng = new Rng();
  for (const [m, k, n] of [[33, 45, 17], [64, 96, 32]]) {
    for (const transB of [false, true]) {
      const a = new Float16Array(rng.fill(new Float32Array(m * k)));
      const b = new Float16Array(rng.fill(new Float32Array(k * n)));
      const refs = await references(
        { a: Float32Array.from(a), b: Float32Array.from(b) },
        (be, x) => {
          const out = be.alloc(m * n);
          be.matmul(out, x.a as Float32Array, x.b as Float32Array, m, k, n, {
            transB,
          });
          return { out };
        },
      );
      const out = ctx.tensor(m * n);
      ctx.run([
        matmul(ctx, { out, a: ctx.upload(a), b: ctx.upload(b) }, m, k, n, {
          transB,
          f16: true,
        }),
      ]);
      assertMatches(
        await ctx.readF32(out),
        refs,
        "out",
        TOLERANCE,
        `f16 ${m}x${k}x${n}`,
      );
    }
  }
});

gpuTest("matmul: a tensor too short for the shape is a RangeError", (ctx) => {
  const x = ctx.tensor(6);
  throws(
    () => matmul(ctx, { out: x, a: x, b: ctx.tensor(5) }, 2, 3, 2),
    /b holds 5 elements: need 6/,
  );
});
