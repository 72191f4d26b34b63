import { equal, ok, rejects } from "node:assert";
import { selectBackend } from "./backend_select.ts";
import { GpuUnavailableError } from "./webgpu/device.ts";
import { gpuSelfTest } from "./webgpu/self_test.ts";
import { gpuTest, testGpu } from "./webgpu/_test_gpu.ts";

Deno.test("selectBackend: wasm and js are taken as asked, without a GPU", async () => {
  for (const kind of ["wasm", "js"] as const) {
    const s = await selectBackend(kind);
    equal(s.kind, kind);
    equal(s.gpu, null);
  }
});

Deno.test("selectBackend: auto falls back to wasm where WebGPU is missing", async () => {
  const s = await selectBackend("auto", { gpu: undefined });
  equal(s.kind, "wasm");
  equal(s.reason, "no WebGPU adapter");
});

Deno.test("selectBackend: webgpu without an adapter says what to install", async () => {
  await rejects(
    () => selectBackend("webgpu", { gpu: undefined }),
    (e) =>
      e instanceof GpuUnavailableError && /mesa-vulkan-drivers/.test(e.message),
  );
});

gpuTest(
  "selectBackend: auto passes a software adapter over, webgpu takes it",
  async () => {
    const auto = await selectBackend("auto");
    if (testGpu!.info.software) {
      equal(auto.kind, "wasm");
      ok(/software adapter, slower than WASM/.test(auto.reason), auto.reason);
      equal(auto.adapter?.software, true);
    } else {
      equal(auto.kind, "webgpu", auto.reason);
      auto.gpu?.device.destroy();
    }
    const forced = await selectBackend("webgpu");
    equal(forced.kind, "webgpu");
    ok(forced.gpu !== null && forced.reason.includes("self-test passed"));
    forced.gpu.device.destroy();
  },
);

gpuTest(
  "the startup self-test passes on this device, and can fail",
  async () => {
    equal(await gpuSelfTest(testGpu!.device), null);
    // Float32 never matches the float64 reference exactly: with nothing
    // allowed, the first product is reported by its size.
    const failed = await gpuSelfTest(testGpu!.device, 0);
    ok(failed?.startsWith("matmul 67x45x33 is off by"), String(failed));
  },
);

gpuTest(
  "selectBackend: a device failing the self-test is refused for --backend webgpu",
  async () => {
    await rejects(
      selectBackend("webgpu", { selfTest: (device) => gpuSelfTest(device, 0) }),
      (err: unknown) =>
        err instanceof GpuUnavailableError &&
        /failed the self-test: matmul 67x45x33 is off by/.test(err.message) &&
        /use --backend wasm/.test(err.message),
    );
    // A self-test that throws is a failure too, not an escaping error.
    await rejects(
      selectBackend("webgpu", {
        selfTest: () => Promise.reject(new Error("device lost")),
      }),
      (err: unknown) =>
        err instanceof GpuUnavailableError &&
        /failed the self-test: it threw device lost/.test(err.message),
    );
  },
);
