/**
 * The startup self-test a WebGPU device must pass before the engine trains
 * on it: small matmuls (each operand transposed, vec4 and scalar paths,
 * 64 and 128 tiles, bias epilogue) compared with the JS reference in
 * float64. A driver that miscompiles the kernels, or a device that fails validation,
 * is caught here rather than as a diverging loss.
 *
 * @module
 */
import { matmul as refMatmul } from "../js_kernels.ts";
import { relativeError } from "../relative_error.ts";
import { GpuContext } from "./context.ts";
import { matmul } from "./matmul.ts";

/** Normwise relative error a float32 product of these sizes stays within. */
export const SELF_TEST_TOLERANCE = 1e-5;

interface Case {
  m: number;
  k: number;
  n: number;
  transA?: boolean;
  transB?: boolean;
  tile?: 64 | 128;
}

const CASES: Case[] = [
  { m: 67, k: 45, n: 33 },
  { m: 64, k: 48, n: 32, transB: true },
  { m: 40, k: 36, n: 52, transA: true },
  { m: 130, k: 24, n: 136, tile: 128 },
];

/**
 * Null when the device computes correctly, else what went wrong.
 * `tolerance` is for tests, which must see it fail.
 */
export async function gpuSelfTest(
  device: GPUDevice,
  tolerance = SELF_TEST_TOLERANCE,
): Promise<string | null> {
  const ctx = new GpuContext(device);
  device.pushErrorScope("validation");
  try {
    for (const { m, k, n, transA = false, transB = false, tile } of CASES) {
      // Fixed, irregular values: no randomness at startup.
      const a = Float32Array.from({ length: m * k }, (_, i) => Math.sin(i));
      const b = Float32Array.from(
        { length: k * n },
        (_, i) => Math.cos(i * 0.7),
      );
      const bias = Float32Array.from({ length: n }, (_, i) => i / n);
      const want = new Float64Array(m * n);
      refMatmul(want, Float64Array.from(a), Float64Array.from(b), m, k, n, {
        transA,
        transB,
      });
      for (let i = 0; i < want.length; i++) want[i] += bias[i % n];
      const out = ctx.tensor(m * n);
      ctx.run([matmul(
        ctx,
        {
          out,
          a: ctx.upload(a),
          b: ctx.upload(b),
          bias: ctx.upload(bias),
        },
        m,
        k,
        n,
        { transA, transB, tile },
      )]);
      const err = relativeError(await ctx.readF32(out), want);
      if (!(err <= tolerance)) {
        const how = [transA && "A transposed", transB && "B transposed"]
          .filter(Boolean).join(", ");
        return `matmul ${m}x${k}x${n}${how ? ` (${how})` : ""}${
          tile ? ` on ${tile} tiles` : ""
        } is off by ${err.toExponential(2)} (allowed ${tolerance})`;
      }
    }
    return null;
  } catch (error) {
    return `the self-test threw: ${error}`;
  } finally {
    const invalid = await device.popErrorScope();
    ctx.destroy();
    if (invalid) {
      // deno-lint-ignore no-unsafe-finally
      return `WebGPU validation failed: ${invalid.message}`;
    }
  }
}
