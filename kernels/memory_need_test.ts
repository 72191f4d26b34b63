import assert from "node:assert/strict";
import { DEFAULT_ADAMW } from "./adamw.ts";
import { type GptConfig, parameterLayout } from "./gpt.ts";
import {
  hostParamCopies,
  memoryFit,
  RUNTIME_BYTES,
  trainerMemory,
} from "./memory_need.ts";
import { createCpuTrainer, initialParameters } from "./trainer.ts";
import { createWasmBackend } from "../wasm/modules.ts";
import { GpuLimitError } from "./webgpu/device.ts";
import { allocActivations, freeActivations } from "./webgpu/activations.ts";
import { gpuTest } from "./webgpu/_test_gpu.ts";

const MODEL: GptConfig = {
  vocabSize: 256,
  contextLength: 64,
  dModel: 128,
  heads: 4,
  layers: 2,
};

const batch = (B: number, T: number) => {
  const ids = new Int32Array(B * T).map((_, i) => i % 256);
  return { inputs: ids, targets: ids, B, T };
};

Deno.test("memoryFit() holds two WASM trainers stepping in turn: above what they take, by at most a third", async () => {
  const params = initialParameters(MODEL, 1);
  for (const B of [16, 64]) {
    const be = await createWasmBackend({ threads: 1 });
    try {
      const before = be.memory.buffer.byteLength;
      for (let i = 0; i < 2; i++) {
        const t = createCpuTrainer(be, {
          model: MODEL,
          adamw: DEFAULT_ADAMW,
          params,
        });
        await t.step(batch(B, MODEL.contextLength));
      }
      // The memory grows exactly as the arena asks and never shrinks.
      const took = be.memory.buffer.byteLength - before;
      const trainer = trainerMemory(MODEL, B, MODEL.contextLength, {
        muon: false,
        cpu: true,
      });
      const host = RUNTIME_BYTES +
        hostParamCopies(parameterLayout(MODEL).total) * 4 *
          parameterLayout(MODEL).total;
      const need = memoryFit(trainer, parameterLayout(MODEL).total, {
        kind: "wasm",
        ramBytes: Infinity,
      }).peerBytes - host;
      assert.ok(need >= took, `${B}: estimate ${need} < ${took} taken`);
      assert.ok(need <= 1.35 * took, `${B}: estimate ${need} > 1.35 x ${took}`);
    } finally {
      be.dispose();
    }
  }
});

Deno.test("memoryFit(): a 124M GPT at 16 x 512 exceeds a wasm32 memory; its parameters, gradients and moments alone take 16 bytes each", () => {
  const gpt2: GptConfig = {
    vocabSize: 50257,
    contextLength: 1024,
    dModel: 768,
    heads: 12,
    layers: 12,
  };
  const n = parameterLayout(gpt2).total;
  assert.ok(n > 124e6 && n < 125e6, `${n}`);
  const cpu = trainerMemory(gpt2, 16, 512, { muon: true, cpu: true });
  assert.equal(cpu.state, 16 * n);
  const onWasm = memoryFit(cpu, n, { kind: "wasm", ramBytes: 1e12 });
  assert.equal(onWasm.fits, false);
  assert.equal(onWasm.tightest.limit, "wasm32");
  // Two trainers' states, and one arena's activations they take turns on.
  assert.equal(
    onWasm.tightest.needBytes,
    2 * (cpu.state + cpu.muon) + cpu.activations,
  );
  // On a GPU that binds 2 GiB, its attention scores of 16 x 12 x 512 x 512
  // per layer, for 12 layers, are one buffer too many.
  const gpu = trainerMemory(gpt2, 16, 512, { muon: true, cpu: false });
  const onGpu = memoryFit(gpu, n, {
    kind: "webgpu",
    maxBufferSize: 2 ** 31,
    maxStorageBufferBindingSize: 2 ** 31 - 4,
    ramBytes: 64e9,
  });
  assert.equal(onGpu.fits, false);
  assert.equal(onGpu.tightest.what, 'one buffer (activation "att")');
  assert.equal(onGpu.tightest.needBytes, 4 * 12 * 16 * 12 * 512 * 512);
  // At 4 x 512 it fits, the host's copies within 64 GB of RAM.
  const small = memoryFit(
    trainerMemory(gpt2, 4, 512, { muon: true, cpu: false }),
    n,
    {
      kind: "webgpu",
      maxBufferSize: 2 ** 31,
      maxStorageBufferBindingSize: 2 ** 31 - 4,
      ramBytes: 64e9,
    },
  );
  assert.equal(small.fits, true);
  // On a GPU the host holds the process and its copies, not the trainers.
  const host = memoryFit(
    trainerMemory(gpt2, 4, 512, { muon: true, cpu: false }),
    n,
    {
      kind: "webgpu",
      maxBufferSize: 2 ** 31,
      maxStorageBufferBindingSize: 2 ** 31 - 4,
      ramBytes: 8e9,
    },
  );
  assert.equal(host.fits, false);
  assert.equal(host.tightest.limit, "RAM");
  assert.equal(
    host.tightest.what,
    "RAM for the process and its copies of the parameters",
  );
  assert.equal(host.tightest.needBytes, 256e6 + 32 * 4 * n);
  // 16.2 GB: a machine of 16 GiB holds it (counted at 60 copies, as the
  // peaks of 3.2M parameters had it, 30 GB; measured: 25-26 at 12.8M and
  // 42.8M), and four such peers the H200 machine's 128 GiB.
  assert.equal(
    memoryFit(
      trainerMemory(gpt2, 4, 512, { muon: true, cpu: false }),
      n,
      {
        kind: "webgpu",
        maxBufferSize: 2 ** 31,
        maxStorageBufferBindingSize: 2 ** 31 - 4,
        ramBytes: 16 * 2 ** 30,
      },
    ).fits,
    true,
  );
});

gpuTest(
  "memoryFit() refuses exactly the batch whose buffer the GPU trainer cannot bind",
  (ctx) => {
    const device = ctx.device;
    const model = { ...MODEL, dModel: 32, heads: 2, layers: 1 };
    const n = parameterLayout(model).total;
    const limits = {
      kind: "webgpu" as const,
      maxBufferSize: device.limits.maxBufferSize,
      maxStorageBufferBindingSize: device.limits.maxStorageBufferBindingSize,
      ramBytes: 1e12,
    };
    // The logits of B x 64 tokens over 256 values: the largest buffer.
    const over = Math.ceil(limits.maxStorageBufferBindingSize / (64 * 256 * 4));
    for (const B of [4, over - 1, over]) {
      const need = trainerMemory(model, B, 64, { muon: false, cpu: false });
      const fit = memoryFit(need, n, limits);
      // What the trainer allocates for a batch shape, and checks first.
      let refused: unknown = null;
      try {
        freeActivations(ctx, allocActivations(ctx, model, B, 64, n));
      } catch (err) {
        refused = err;
      }
      assert.equal(fit.fits, refused === null, `${B}: ${refused}`);
      if (!fit.fits) {
        assert.ok(refused instanceof GpuLimitError);
        assert.equal(fit.tightest.what, 'one buffer (activation "logits")');
        assert.match(refused.message, /activation "logits"/);
      }
    }
  },
);
