import { FULL_TIER } from "../../tests/_tier.ts";
/**
 * Every kernel gives bit-identical results on 1, 2 and 3 threads: the same
 * seeded inputs go through backends that split every call (`alwaysSplit`),
 * and the outputs are compared byte for byte.
 */
import {
  KERNEL_CASES,
  type KernelCase,
  MATMUL_OPTIONS,
  MATMUL_SHAPES,
  matmulCase,
} from "../../tests/kernel_cases.ts";
import { assertBitIdentical, Rng, SEED, simdLevels } from "./_test_helpers.ts";
import type { WasmBackend } from "./wasm_backend.ts";
import { createWasmBackend } from "../../wasm/modules.ts";

const THREADS = [1, 2, 3];

const CASES: [string, KernelCase][] = [...Object.entries(KERNEL_CASES)];
for (
  const shape of [...MATMUL_SHAPES, [260, 520, 70] as [number, number, number]]
) {
  for (const opts of MATMUL_OPTIONS) {
    CASES.push([
      `matmul ${shape.join("x")} ${JSON.stringify(opts)}`,
      matmulCase(shape, opts),
    ]);
  }
}

for (const simd of simdLevels()) {
  Deno.test(
    `wasm-${simd}: results are bit-identical on 1, 2 and 3 threads`,
    FULL_TIER,
    async (t) => {
      const backends: WasmBackend[] = [];
      try {
        for (const threads of THREADS) {
          backends.push(
            await createWasmBackend({ simd, threads, alwaysSplit: true }),
          );
        }
        for (const [name, check] of CASES) {
          await t.step(name, () => {
            const runs = backends.map((be) => {
              const mark = be.mark();
              const outs = check(be, new Rng(SEED)).map((x) => x.slice());
              be.release(mark);
              return outs;
            });
            for (let i = 1; i < runs.length; i++) {
              runs[0].forEach((x, j) =>
                assertBitIdentical(
                  runs[i][j],
                  x,
                  `${name} x${THREADS[i]} vs x1, output ${j}`,
                )
              );
            }
          });
        }
      } finally {
        for (const be of backends) be.dispose();
      }
    },
  );
}
