import { equal, throws } from "node:assert";
import { ARENA_ALIGN, WasmArena } from "./arena.ts";
import { createSharedMemory, PAGE_BYTES } from "./loader.ts";
import { withBackend } from "./_test_helpers.ts";

function arena(): WasmArena {
  return new WasmArena(createSharedMemory(PAGE_BYTES), 100);
}

Deno.test("arena: buffers are zeroed, aligned and disjoint", () => {
  const a = arena();
  const x = a.alloc(3), y = a.allocInt32(5), z = a.alloc(0);
  for (const v of [x, y, z]) equal(v.byteOffset % ARENA_ALIGN, 0);
  equal(x.byteOffset, 128);
  equal(y.byteOffset, x.byteOffset + ARENA_ALIGN);
  equal(y.length, 5);
  equal(z.length, 0);
  x.fill(1);
  y.fill(-1);
  equal(x.join(), "1,1,1");
});

Deno.test("arena: release frees back to a mark and reused memory is zeroed", () => {
  const a = arena();
  a.alloc(4);
  const mark = a.mark();
  const used = a.used;
  const x = a.alloc(100);
  x.fill(7);
  a.release(mark);
  equal(a.used, used);
  const y = a.alloc(100);
  equal(y.byteOffset, x.byteOffset);
  equal(y.every((v) => v === 0), true);
});

Deno.test("arena: empty() keeps stale bytes, and alloc() still zeroes after it", () => {
  const a = arena();
  const mark = a.mark();
  a.alloc(100).fill(7);
  a.release(mark);
  const stale = a.empty(100);
  equal(stale.every((v) => v === 7), true);
  a.release(mark);
  equal(a.alloc(100).every((v) => v === 0), true);
  throws(() => a.empty(-1), RangeError);
});

Deno.test("arena: bad lengths and marks throw", () => {
  const a = arena();
  throws(() => a.alloc(-1), RangeError);
  throws(() => a.alloc(1.5), RangeError);
  const mark = a.mark();
  a.alloc(1);
  throws(() => a.release(mark + 1000), /outside the arena/);
  throws(() => a.release(50), /outside the arena/);
  a.release(mark);
  equal(a.used, 0);
});

Deno.test("arena: grows the memory, keeping old views and their data", () => {
  const a = arena();
  const small = a.alloc(16);
  small.fill(3);
  const before = a.memory.buffer.byteLength;
  const big = a.alloc(5 * PAGE_BYTES); // 20 pages of floats
  equal(a.memory.buffer.byteLength > before, true);
  equal(big.length, 5 * PAGE_BYTES);
  equal(big.every((v) => v === 0), true);
  big[big.length - 1] = 9;
  equal(small.join(), new Array(16).fill(3).join());
  equal(a.owns(small), true);
  equal(a.owns(big), true);
  equal(a.owns(new Float32Array(4)), false);
});

Deno.test("backend arena: views made before growth still feed kernels", async () => {
  await withBackend("simd128", 2, (be) => {
    const x = be.alloc(1000).fill(2);
    const bytes = be.memory.buffer.byteLength;
    const y = be.alloc(bytes); // forces growth
    equal(be.memory.buffer.byteLength > bytes, true);
    y.fill(1);
    be.axpy(y, 3, x, 1000);
    equal(y[999], 7);
    equal(be.sumSquares(x, 1000), 4000);
    const mark = be.mark();
    be.alloc(10);
    be.release(mark);
    equal(be.mark(), mark);
  });
});
