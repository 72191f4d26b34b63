/**
 * Quick speed check of the wasm backend: matmul GFLOP/s at 256/512/1024
 * (plain and transposed layouts, both builds, 1 and 2 threads), a tiny-GPT
 * shape, and AdamW Mparam/s at 1M and 10M. Medians of repeated runs.
 *
 *   deno run -A tests/bench/wasm_matmul.ts [--quick]
 *
 * @module
 */
import { parseArgs } from "node:util";
import type { MatmulOptions } from "../../kernels/backend.ts";
import {
  relaxedSimdSupported,
  type SimdLevel,
} from "../../kernels/wasm/simd_level.ts";
import type { WasmBackend } from "../../kernels/wasm/wasm_backend.ts";
import { createWasmBackend } from "../../wasm/modules.ts";

const { values } = parseArgs({
  args: Deno.args,
  options: { quick: { type: "boolean" } },
});
const RUNS = values.quick ? 3 : 7;

/** Median milliseconds of one call of `fn`, each run lasting >= ~150 ms. */
function time(fn: () => void): number {
  fn(); // warm up (and tier up)
  let reps = 1;
  for (;;) {
    const t0 = performance.now();
    for (let i = 0; i < reps; i++) fn();
    if (performance.now() - t0 > 30) break;
    reps *= 2;
  }
  reps = Math.max(1, reps * 5);
  const samples: number[] = [];
  for (let r = 0; r < RUNS; r++) {
    const t0 = performance.now();
    for (let i = 0; i < reps; i++) fn();
    samples.push((performance.now() - t0) / reps);
  }
  samples.sort((a, b) => a - b);
  return samples[samples.length >> 1];
}

const LAYOUTS: [string, MatmulOptions][] = [
  ["A@B", {}],
  ["A^T@B", { transA: true }],
  ["A@B^T", { transB: true }],
  ["A^T@B^T", { transA: true, transB: true }],
];

function matmulRow(
  be: WasmBackend,
  m: number,
  k: number,
  n: number,
  opts: MatmulOptions,
): number {
  const mark = be.mark();
  const a = be.alloc(m * k).map(() => Math.random() - 0.5);
  const A = be.alloc(m * k), B = be.alloc(k * n), C = be.alloc(m * n);
  A.set(a);
  for (let i = 0; i < B.length; i++) B[i] = Math.random() - 0.5;
  const ms = time(() => be.matmul(C, A, B, m, k, n, opts));
  be.release(mark);
  return (2 * m * k * n) / ms / 1e6;
}

const levels: SimdLevel[] = relaxedSimdSupported()
  ? ["relaxed", "simd128"]
  : ["simd128"];
console.log(`runs ${RUNS}, median; cores ${navigator.hardwareConcurrency}`);
for (const simd of levels) {
  for (const threads of [1, 2]) {
    const be = await createWasmBackend({ simd, threads });
    try {
      const cells: string[] = [];
      for (const size of [256, 512, 1024]) {
        for (const [name, opts] of LAYOUTS) {
          cells.push(
            `${size} ${name} ${
              matmulRow(be, size, size, size, opts).toFixed(1)
            }`,
          );
        }
      }
      // Tiny GPT (BT 1024, C 128): qkv forward, its dW and dX.
      cells.push(
        `gpt fwd 1024x128@128x384 ${
          matmulRow(be, 1024, 128, 384, {}).toFixed(1)
        }`,
      );
      cells.push(
        `gpt dW 128x1024@1024x384 ${
          matmulRow(be, 128, 1024, 384, { transA: true }).toFixed(1)
        }`,
      );
      cells.push(
        `gpt dX 1024x384@384x128 ${
          matmulRow(be, 1024, 384, 128, { transB: true }).toFixed(1)
        }`,
      );
      console.log(`\nmatmul GFLOP/s, ${be.name} x${threads}`);
      for (const c of cells) console.log(`  ${c}`);

      for (const n of [1_000_000, 10_000_000]) {
        const mark = be.mark();
        const p = be.alloc(n),
          g = be.alloc(n),
          m = be.alloc(n),
          v = be.alloc(n);
        for (let i = 0; i < n; i++) g[i] = Math.random() - 0.5;
        let step = 0;
        const ms = time(() =>
          be.adamw(p, g, m, v, n, {
            lr: 1e-3,
            beta1: 0.9,
            beta2: 0.95,
            eps: 1e-8,
            weightDecay: 0.1,
            step: ++step,
          })
        );
        console.log(
          `  adamw ${n / 1e6}M: ${(n / ms / 1e3).toFixed(0)} Mparam/s`,
        );
        be.release(mark);
      }
    } finally {
      be.dispose();
    }
  }
}
