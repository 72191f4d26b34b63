import { deepEqual, equal, throws } from "node:assert";
import { grid, slice, uniform } from "./context.ts";
import { gpuTest } from "./_test_gpu.ts";

Deno.test("grid folds workgroup counts past 65535 into y", () => {
  deepEqual(grid(0), [1, 1, 1]);
  deepEqual(grid(65535), [65535, 1, 1]);
  deepEqual(grid(65536), [65535, 2, 1]);
  deepEqual(grid(200_000), [65535, 4, 1]);
});

Deno.test("uniform packs u32 then f32 fields, padded to 16 bytes", () => {
  const data = uniform([1, 2, 3], [0.5, -2]);
  equal(data.byteLength, 32);
  deepEqual([...new Uint32Array(data, 0, 3)], [1, 2, 3]);
  deepEqual([...new Float32Array(data, 12, 2)], [0.5, -2]);
  equal(uniform([]).byteLength, 16);
});

gpuTest("slice views a range of a tensor and checks its bounds", (ctx) => {
  const t = ctx.tensor(10);
  const s = slice(slice(t, 2, 6), 1, 3);
  equal(s.offset, 3);
  equal(s.length, 3);
  throws(() => slice(t, 8, 3), /\[8, 11\) of a GPU tensor of 10 elements/);
});

gpuTest(
  "write and read round trip at an offset; oversized writes throw",
  async (ctx) => {
    const t = ctx.upload(new Float32Array(8));
    ctx.write(slice(t, 3, 5), Float32Array.of(1, 2, 3));
    deepEqual([...await ctx.readF32(t)], [0, 0, 0, 1, 2, 3, 0, 0]);
    deepEqual([...await ctx.readF32(slice(t, 4, 2))], [2, 3]);
    throws(
      () => ctx.write(slice(t, 0, 2), new Float32Array(3)),
      /3 elements into a GPU tensor of 2/,
    );
  },
);
