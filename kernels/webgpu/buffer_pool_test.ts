import { equal, notEqual, throws } from "node:assert";
import { BufferPool } from "./buffer_pool.ts";
import { gpuTest, testGpu } from "./_test_gpu.ts";

gpuTest(
  "buffer pool: reuses released buffers of the same size and usage",
  () => {
    const pool = new BufferPool(testGpu!.device);
    try {
      const a = pool.acquire(1000);
      equal(a.size, 1024, "sizes round up to 256 bytes");
      equal(pool.bytesInUse, 1024);
      pool.release(a);
      equal(pool.bytesPooled, 1024);
      equal(pool.acquire(900), a, "a near size shares the buffer");
      equal(pool.bytesPooled, 0);
      const staging = pool.acquire(
        1000,
        GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST,
      );
      notEqual(staging, a, "another usage gets its own buffer");
      pool.release(staging);
      throws(() => pool.release(staging), /not in use from this pool/);
    } finally {
      pool.destroy();
    }
    equal(pool.bytesInUse, 0);
    equal(pool.bytesPooled, 0);
  },
);

gpuTest("buffer pool: rejects negative and fractional sizes", () => {
  const pool = new BufferPool(testGpu!.device);
  throws(() => pool.acquire(-1), /-1 bytes: expected a non-negative integer/);
  throws(() => pool.acquire(1.5), RangeError);
  pool.destroy();
});
