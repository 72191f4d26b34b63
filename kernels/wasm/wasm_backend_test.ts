import { equal, throws as assertThrows } from "node:assert";
import {
  KERNEL_CASES,
  MATMUL_OPTIONS,
  MATMUL_SHAPES,
  matmulCase,
} from "../../tests/kernel_cases.ts";
import { Rng, simdLevels, withBackend } from "./_test_helpers.ts";
import { createWasmBackend } from "../../wasm/modules.ts";

for (const simd of simdLevels()) {
  for (const threads of [1, 2]) {
    Deno.test(`wasm-${simd} x${threads}: every kernel matches the float64 reference`, async (t) => {
      await withBackend(simd, threads, async (be) => {
        const rng = new Rng();
        for (const [name, check] of Object.entries(KERNEL_CASES)) {
          await t.step(name, () => {
            const mark = be.mark();
            check(be, rng);
            be.release(mark);
          });
        }
      });
    });

    Deno.test(`wasm-${simd} x${threads}: matmul, all layouts, accumulate and batch`, async (t) => {
      await withBackend(simd, threads, async (be) => {
        const rng = new Rng();
        for (const shape of MATMUL_SHAPES) {
          await t.step(shape.join("x"), () => {
            for (const opts of MATMUL_OPTIONS) {
              const mark = be.mark();
              matmulCase(shape, opts)(be, rng);
              be.release(mark);
            }
          });
        }
      });
    });
  }
}

Deno.test("wasm backend: names its build and thread count", async () => {
  await withBackend("simd128", 2, (be) => {
    if (
      be.name !== "wasm-simd128" || be.threads !== 2 || be.simd !== "simd128"
    ) {
      throw new Error(`unexpected ${be.name} x${be.threads}`);
    }
  });
});

Deno.test("wasm backend: rejects foreign, short and overlapping buffers", async () => {
  await withBackend("simd128", 1, (be) => {
    const a = be.alloc(6), b = be.alloc(6), out = be.alloc(4);
    assertThrows(
      () => be.matmul(out, new Float32Array(6), b, 2, 3, 2),
      TypeError,
    );
    assertThrows(
      () => be.matmul(out, a, b, 2, 4, 2),
      /a is too short: need 8 elements/,
    );
    assertThrows(
      () => be.matmul(a.subarray(2), a, b, 2, 3, 2),
      /out overlaps a/,
    );
    assertThrows(() => be.add(out, a, b, -1), /n = -1/);
    assertThrows(
      () => be.attention(be.alloc(10), be.alloc(10), be.alloc(30), 1, 1, 10, 3),
      /multiple of NH/,
    );
    assertThrows(
      () =>
        be.adamw(a, b, a, b, 6, {
          lr: 1,
          beta1: 0.9,
          beta2: 0.9,
          eps: 0,
          weightDecay: 0,
          step: 0,
        }),
      /1-based/,
    );
  });
});

Deno.test("wasm backend: out-of-range ids and targets throw before any write", async () => {
  await withBackend("simd128", 2, (be) => {
    const table = be.alloc(4 * 3),
      out = be.alloc(2 * 3),
      ids = be.allocInt32(2);
    ids.set([1, 4]);
    assertThrows(
      () => be.embedding(out, table, ids, 2, 3),
      /ids\[1\] = 4 is outside 0..3/,
    );
    ids.set([-1, 0]);
    assertThrows(
      () => be.embeddingBackward(table, out, ids, 2, 3),
      /ids\[0\] = -1/,
    );
    const probs = be.alloc(2 * 5),
      losses = be.alloc(2),
      targets = be.allocInt32(2);
    targets.set([0, 5]);
    assertThrows(
      () => be.crossEntropy(losses, probs, probs, targets, 2, 5),
      /targets\[1\] = 5/,
    );
    assertThrows(
      () => be.crossEntropyBackward(probs, probs, targets, 1, 2, 5),
      /targets\[1\] = 5/,
    );
  });
});

Deno.test("wasm backend: dispose is idempotent and later calls throw", async () => {
  const be = await createWasmBackend({ threads: 2 });
  const x = be.alloc(8);
  be.dispose();
  be.dispose();
  assertThrows(() => be.scale(x, 2, 8), /disposed/);
});

Deno.test("wasm backend: rejects bad options", async () => {
  for (const threads of [0, 1.5, 65]) {
    let threw = false;
    try {
      (await createWasmBackend({ threads })).dispose();
    } catch (error) {
      threw = error instanceof RangeError;
    }
    if (!threw) throw new Error(`threads = ${threads} was accepted`);
  }
});

Deno.test("wasm backend: empty sizes are no-ops, and k = 0 gives a zero product", async () => {
  await withBackend("simd128", 2, (be) => {
    const out = be.alloc(6).fill(5), x = be.alloc(6);
    be.matmul(out, x, x, 3, 0, 2);
    equal(out.join(), "0,0,0,0,0,0");
    out.fill(5);
    be.matmul(out, x, x, 3, 0, 2, { accumulate: true, transA: true });
    equal(out.join(), "5,5,5,5,5,5");
    be.matmul(out, x, x, 0, 3, 2);
    be.matmul(out, x, x, 3, 2, 0, { batch: 0 });
    be.add(out, x, x, 0);
    be.gelu(out, x, 0);
    be.layernorm(out, x, x, x, x, x, 0, 3);
    be.attention(out, x, x, 0, 2, 2, 1);
    be.crossEntropy(out, x, x, be.allocInt32(0), 0, 3);
    be.adamw(out, x, x, x, 0, {
      lr: 1,
      beta1: 0.9,
      beta2: 0.9,
      eps: 1e-8,
      weightDecay: 0,
      step: 1,
    });
    equal(be.sumSquares(x, 0), 0);
    equal(out.join(), "5,5,5,5,5,5");
  });
});
