/**
 * Elementwise kernels: GELU forward and backward (GPT-2's tanh
 * approximation, as `../js_kernels.ts`). Bias and residual adds are fused
 * into the matmul epilogue (`matmul.ts`), the embedding sum into the
 * encoder (`embedding.ts`).
 *
 * @module
 */
import {
  type Dispatch,
  flatMain,
  type GpuContext,
  type GpuTensor,
  grid,
  GROUP_INDEX,
  uniform,
} from "./context.ts";

// With u = sqrt(2/pi) (x + 0.044715 x^3): (1 + tanh u) / 2 = sigmoid(2u)
// = 1 / (1 + e), e = exp(-2u), which has no cancellation for negative x
// (1 + tanh u loses every digit there in f32). -2u is capped at 80 so that
// e stays finite and s never goes subnormal. As the WASM kernels do.
const GELU = /* wgsl */ `
const GELU_K: f32 = 0.7978845608028654; // sqrt(2 / pi)
fn geluE(x: f32) -> f32 {
  return exp(min(-2.0 * GELU_K * (x + 0.044715 * x * x * x), 80.0));
}
${GROUP_INDEX}`;

const GELU_FORWARD = /* wgsl */ `
struct Params { n: u32, outOff: u32, xOff: u32 }
@group(0) @binding(0) var<storage, read_write> out: array<f32>;
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<uniform> p: Params;
${GELU}
${flatMain("p.n")}
  let v = x[p.xOff + i];
  out[p.outOff + i] = v / (1.0 + geluE(v));
}`;

/** out[n] = GELU(x[n]). */
export function geluForward(
  ctx: GpuContext,
  t: { out: GpuTensor; x: GpuTensor },
  n: number,
): Dispatch {
  return ctx.dispatch({
    label: "gelu",
    code: GELU_FORWARD,
    tensors: [t.out, t.x],
    params: uniform([n, t.out.offset, t.x.offset]),
    workgroups: grid(Math.ceil(n / 256)),
  });
}

const GELU_BACKWARD = /* wgsl */ `
struct Params { n: u32, dxOff: u32, xOff: u32, doutOff: u32, accumulate: u32 }
@group(0) @binding(0) var<storage, read_write> dx: array<f32>;
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read> dout: array<f32>;
@group(0) @binding(3) var<uniform> p: Params;
${GELU}
${flatMain("p.n")}
  // GELU'(x) = s + 2 x s (1 - s) du/dx, 1 - s = e s.
  let v = x[p.xOff + i];
  let e = geluE(v);
  let s = 1.0 / (1.0 + e);
  let du = GELU_K * (1.0 + 3.0 * 0.044715 * v * v);
  let g = (s + 2.0 * v * s * (e * s) * du) * dout[p.doutOff + i];
  let j = p.dxOff + i;
  if (p.accumulate != 0u) { dx[j] = dx[j] + g; } else { dx[j] = g; }
}`;

/** dx[n] (+)= GELU'(x) * dout. */
export function geluBackward(
  ctx: GpuContext,
  t: { dx: GpuTensor; x: GpuTensor; dout: GpuTensor },
  n: number,
  options: { accumulate: boolean },
): Dispatch {
  return ctx.dispatch({
    label: "gelu backward",
    code: GELU_BACKWARD,
    tensors: [t.dx, t.x, t.dout],
    params: uniform([
      n,
      t.dx.offset,
      t.x.offset,
      t.dout.offset,
      options.accumulate ? 1 : 0,
    ]),
    workgroups: grid(Math.ceil(n / 256)),
  });
}
