/**
 * The startup self-test a WebGPU device must pass before the engine trains
 * on it: small matmuls (plain and transposed operands, vec4 and scalar
 * paths, bias epilogue) compared with the JS reference in float64. A
 * driver that miscompiles the kernels, or a device that fails validation,
 * is caught here rather than as a diverging loss.
 *
 * @module
 */
import { matmul as refMatmul } from "../js_kernels.ts";
import { relativeError } from "../_test_utils.ts";
import { GpuContext } from "./context.ts";
import { matmul } from "./matmul.ts";

/** Normwise relative error a float32 product of these sizes stays within. */
const TOLERANCE = 1e-5;
const CASES: [number, number, number, boolean][] = [
  [67, 45, 33, false],
  [64, 48, 32, true],
];

/** Null when the device computes correctly, else what went wrong. */
export async function gpuSelfTest(device: GPUDevice): Promise<string | null> {
  const ctx = new GpuContext(device);
  device.pushErrorScope("validation");
  try {
    for (const [m, k, n, transB] of CASES) {
      // Fixed, irregular values: no randomness at startup.
      const a = Float32Array.from({ length: m * k }, (_, i) => Math.sin(i));
      const b = Float32Array.from(
        { length: k * n },
        (_, i) => Math.cos(i * 0.7),
      );
      const bias = Float32Array.from({ length: n }, (_, i) => i / n);
      const want = new Float64Array(m * n);
      refMatmul(want, Float64Array.from(a), Float64Array.from(b), m, k, n, {
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
        { transB },
      )]);
      const err = relativeError(await ctx.readF32(out), want);
      if (!(err < TOLERANCE)) {
        return `matmul ${m}x${k}x${n}${
          transB ? " (B transposed)" : ""
        } is off by ${err.toExponential(2)} (allowed ${TOLERANCE})`;
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
