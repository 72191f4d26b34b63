/**
 * The WGSL source of the matmul kernel (`matmul.ts` records dispatches),
 * one variant per layout, alignment, tile, storage type and epilogue.
 *
 * The kernel: a workgroup of 16x16 threads computes a TILE x TILE block of
 * out (64x64 with 4x4 per thread, or 128x128 with 8x8 per thread, as two
 * 4-wide groups spaced 64 apart so shared-memory reads are vec4 and
 * conflict-free). Each K step of 8 stages an A and a B tile in workgroup
 * memory, k-major, whatever the transposes; the next step's global loads
 * are issued into registers before the current step's FMAs (software
 * prefetch). Global loads are vec4 along each operand's contiguous
 * dimension when its size and offset are multiples of 4 (scalar with
 * bounds checks otherwise), and so are the stores. With `f16`, a and b are
 * stored as f16 (`shader-f16`) and accumulated in f32.
 *
 * Every output element sums its k terms in order 0..k-1 with one FMA
 * each, whatever the tile, so results are deterministic and identical
 * across tile sizes.
 *
 * @module
 */

/** One compiled form of the kernel. */
export interface MatmulVariant {
  transA: boolean;
  transB: boolean;
  vecA: boolean;
  vecB: boolean;
  vecOut: boolean;
  tile: 64 | 128;
  f16: boolean;
  bias: boolean;
  residual: boolean;
}

/** Elements of k staged per step (a K tile). */
const BK = 8;

/** The WGSL of one variant. */
export function matmulShader(v: MatmulVariant): string {
  const T = v.tile, G = T / 64;
  const st = v.f16 ? "f16" : "f32";
  const outT = v.vecOut ? "vec4<f32>" : "f32";
  let binding = 3;
  const extra = [
    v.bias
      ? `@group(0) @binding(${binding++}) var<storage, read> Bias: array<f32>;`
      : "",
    v.residual
      ? `@group(0) @binding(${binding++}) var<storage, read> R: array<${outT}>;`
      : "",
  ].join("\n");
  return /* wgsl */ `
${v.f16 ? "enable f16;" : ""}
struct Params { M: u32, K: u32, N: u32, aOff: u32, bOff: u32, oOff: u32, biasOff: u32, resOff: u32, accumulate: u32 }
@group(0) @binding(0) var<storage, read_write> O: array<${outT}>;
@group(0) @binding(1) var<storage, read> A: array<${
    v.vecA ? `vec4<${st}>` : st
  }>;
@group(0) @binding(2) var<storage, read> B: array<${
    v.vecB ? `vec4<${st}>` : st
  }>;
${extra}
@group(0) @binding(${binding}) var<uniform> p: Params;

var<workgroup> As: array<vec4<f32>, ${BK * T / 4}>; // [BK][TILE] k-major
var<workgroup> Bs: array<vec4<f32>, ${BK * T / 4}>; // [BK][TILE] k-major

${loader("A", v.transA, v.vecA, T, "p.M", "p.K")}
${loader("B", !v.transB, v.vecB, T, "p.N", "p.K")}

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) l: u32) {
  let m0 = wg.y * ${T}u;
  let n0 = wg.x * ${T}u;
  let aBase = p.aOff + wg.z * p.M * p.K;
  let bBase = p.bOff + wg.z * p.K * p.N;
  let tx = l % 16u;
  let ty = l / 16u;
  var acc: array<vec4<f32>, ${4 * G * G}>;
  let tiles = (p.K + ${BK - 1}u) / ${BK}u;
  var ra = loadA(aBase, m0, 0u, l);
  var rb = loadB(bBase, n0, 0u, l);
  for (var t = 0u; t < tiles; t++) {
    storeA(l, ra);
    storeB(l, rb);
    workgroupBarrier();
    if (t + 1u < tiles) {
      ra = loadA(aBase, m0, (t + 1u) * ${BK}u, l);
      rb = loadB(bBase, n0, (t + 1u) * ${BK}u, l);
    }
${computeBlock(G, T)}
    workgroupBarrier();
  }
  let oBase = p.oOff + wg.z * p.M * p.N;
  let rBase = p.resOff + wg.z * p.M * p.N;
${epilogue(v, G)}
}
`;
}

/**
 * loadX/storeX for one operand. `contiguousInTile`: the operand's memory
 * runs along the tile dimension (m for A, n for B), else along k. One unit
 * is 4 consecutive elements along the contiguous dimension.
 */
function loader(
  X: "A" | "B",
  contiguousInTile: boolean,
  vec: boolean,
  T: number,
  tileDim: string,
  kDim: string,
): string {
  const units = (T * BK) / 4;
  const read = (index: string, guard: string) =>
    vec
      ? `if (${guard}) { v = vec4<f32>(${X}[(${index}) / 4u]); }`
      : [0, 1, 2, 3].map((j) =>
        `if (${
          guard.replace("@", `${j}u`)
        }) { v[${j}] = f32(${X}[${index} + ${j}u]); }`
      ).join("\n      ");
  if (contiguousInTile) {
    // Stored [k][tileDim]: unit = (kk, quad of the tile dim).
    return /* wgsl */ `
fn load${X}(base: u32, t0: u32, k0: u32, l: u32) -> vec4<f32> {
  var v = vec4<f32>(0.0);
  if (l < ${units}u) {
    let gk = k0 + l / ${T / 4}u;
    let gt = t0 + (l % ${T / 4}u) * 4u;
    if (gk < ${kDim}) {
      ${
      read(
        `base + gk * ${tileDim} + gt`,
        vec ? `gt < ${tileDim}` : `gt + @ < ${tileDim}`,
      )
    }
    }
  }
  return v;
}
fn store${X}(l: u32, v: vec4<f32>) {
  if (l < ${units}u) { ${X}s[l] = v; }
}`;
  }
  // Stored [tileDim][k]: unit = (row of the tile dim, quad of k).
  return /* wgsl */ `
fn load${X}(base: u32, t0: u32, k0: u32, l: u32) -> vec4<f32> {
  var v = vec4<f32>(0.0);
  if (l < ${units}u) {
    let gt = t0 + l / ${BK / 4}u;
    let gk = k0 + (l % ${BK / 4}u) * 4u;
    if (gt < ${tileDim}) {
      ${
    read(`base + gt * ${kDim} + gk`, vec ? `gk < ${kDim}` : `gk + @ < ${kDim}`)
  }
    }
  }
  return v;
}
fn store${X}(l: u32, v: vec4<f32>) {
  if (l < ${units}u) {
    let row = l / ${BK / 4}u;
    let kk = (l % ${BK / 4}u) * 4u;
    ${
    [0, 1, 2, 3].map((j) =>
      `${X}s[(kk + ${j}u) * ${T / 4}u + row / 4u][row % 4u] = v[${j}];`
    ).join("\n    ")
  }
  }
}`;
}

/** The unrolled FMAs of one K step of 8. */
function computeBlock(G: number, T: number): string {
  const lines: string[] = [];
  for (let kk = 0; kk < BK; kk++) {
    lines.push("    {");
    for (let g = 0; g < G; g++) {
      lines.push(`      let a${g} = As[${kk * T / 4}u + ${g * 16}u + ty];`);
      lines.push(`      let b${g} = Bs[${kk * T / 4}u + ${g * 16}u + tx];`);
    }
    for (let gi = 0; gi < G; gi++) {
      for (let i = 0; i < 4; i++) {
        for (let gj = 0; gj < G; gj++) {
          const r = ((gi * 4 + i) * G) + gj;
          lines.push(
            `      acc[${r}] = fma(vec4<f32>(a${gi}[${i}]), b${gj}, acc[${r}]);`,
          );
        }
      }
    }
    lines.push("    }");
  }
  return lines.join("\n");
}

/** Adds accumulate/bias/residual and stores, vec4 or scalar. */
function epilogue(v: MatmulVariant, G: number): string {
  const lines: string[] = [];
  for (let gi = 0; gi < G; gi++) {
    for (let i = 0; i < 4; i++) {
      lines.push(`  {
    let row = m0 + ${gi * 64 + i}u + ty * 4u;
    if (row < p.M) {`);
      for (let gj = 0; gj < G; gj++) {
        const r = ((gi * 4 + i) * G) + gj;
        lines.push(`      {
        let col = n0 + ${gj * 64}u + tx * 4u;
        let v = acc[${r}];`);
        if (v.vecOut) {
          lines.push(`        if (col < p.N) {
          let idx = (oBase + row * p.N + col) / 4u;
          var x = v;
          if (p.accumulate != 0u) { x = O[idx] + x; }
          ${
            v.bias
              ? "x = x + vec4<f32>(Bias[p.biasOff + col], Bias[p.biasOff + col + 1u], Bias[p.biasOff + col + 2u], Bias[p.biasOff + col + 3u]);"
              : ""
          }
          ${v.residual ? "x = x + R[(rBase + row * p.N + col) / 4u];" : ""}
          O[idx] = x;
        }`);
        } else {
          for (let j = 0; j < 4; j++) {
            lines.push(`        if (col + ${j}u < p.N) {
          let idx = oBase + row * p.N + col + ${j}u;
          var x = v[${j}];
          if (p.accumulate != 0u) { x = O[idx] + x; }
          ${v.bias ? `x = x + Bias[p.biasOff + col + ${j}u];` : ""}
          ${v.residual ? `x = x + R[rBase + row * p.N + col + ${j}u];` : ""}
          O[idx] = x;
        }`);
          }
        }
        lines.push("      }");
      }
      lines.push("    }\n  }");
    }
  }
  return lines.join("\n");
}
