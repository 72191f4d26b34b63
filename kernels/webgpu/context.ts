/**
 * The runtime under every WGSL kernel: tensors as views of GPU buffers, a
 * pipeline cache, recorded dispatches that are encoded again every step,
 * and the few transfers (upload, read back).
 *
 * Kernels bind whole buffers and take element offsets in their uniforms,
 * so a parameter can be any view of the one flat parameter buffer (whose
 * offsets need not meet WebGPU's 256-byte binding alignment).
 *
 * @module
 */
import { BufferPool } from "./buffer_pool.ts";

/** A view of `length` elements of a GPU buffer, from element `offset`. */
export interface GpuTensor {
  readonly buffer: GPUBuffer;
  /** First element, counted in the element type's size (4 bytes, 2 for f16). */
  readonly offset: number;
  readonly length: number;
}

/** A sub-view of `t`: `length` elements from `offset` within it. */
export function slice(t: GpuTensor, offset: number, length: number): GpuTensor {
  if (offset < 0 || length < 0 || offset + length > t.length) {
    throw new RangeError(
      `Cannot slice [${offset}, ${
        offset + length
      }) of a GPU tensor of ${t.length} elements`,
    );
  }
  return { buffer: t.buffer, offset: t.offset + offset, length };
}

/** A kernel launch, recorded once and encoded again every step. */
export interface Dispatch {
  readonly label: string;
  readonly pipeline: GPUComputePipeline;
  readonly bindGroup: GPUBindGroup;
  readonly workgroups: readonly [number, number, number];
  /** The uniform buffer this dispatch owns (null: shared or none). */
  readonly uniform: GPUBuffer | null;
}

/** What {@linkcode GpuContext.dispatch} records. */
export interface DispatchSpec {
  label: string;
  /** WGSL: storage bindings 0..n-1 in `tensors` order, then the uniform. */
  code: string;
  tensors: readonly GpuTensor[];
  /** The uniform's bytes (then owned), or a shared uniform buffer. */
  params: ArrayBuffer | GPUBuffer;
  workgroups: readonly [number, number, number];
}

/** Packs a uniform struct: the u32 fields, then the f32 fields. */
export function uniform(u32: readonly number[], f32: readonly number[] = []) {
  const words = Math.ceil((u32.length + f32.length) / 4) * 4;
  const data = new ArrayBuffer(Math.max(16, words * 4));
  new Uint32Array(data).set(u32);
  new Float32Array(data, u32.length * 4).set(f32);
  return data;
}

/** Most workgroups per dispatch dimension (WebGPU's default limit). */
const MAX_GROUPS = 65535;

/** A 1-D grid of `groups` workgroups folded into x and y. */
export function grid(groups: number): [number, number, number] {
  const x = Math.min(Math.max(groups, 1), MAX_GROUPS);
  return [x, Math.ceil(Math.max(groups, 1) / x), 1];
}

/** WGSL: the flat workgroup index of a {@linkcode grid}. */
export const GROUP_INDEX = /* wgsl */ `
fn groupIndex(wg: vec3<u32>, nwg: vec3<u32>) -> u32 { return wg.y * nwg.x + wg.x; }`;

/**
 * WGSL: `reduce(l, v, isMax)`, the sum (or max) of `v` over a workgroup of
 * `size` invocations (a power of two) by tree reduction in shared memory,
 * returned to every invocation. All of them must call it.
 */
export function workgroupReduce(size: number): string {
  return /* wgsl */ `
var<workgroup> sh: array<f32, ${size}>;
fn reduce(l: u32, v: f32, isMax: bool) -> f32 {
  sh[l] = v;
  workgroupBarrier();
  for (var s = ${size / 2}u; s > 0u; s = s >> 1u) {
    if (l < s) { sh[l] = select(sh[l] + sh[l + s], max(sh[l], sh[l + s]), isMax); }
    workgroupBarrier();
  }
  let total = sh[0];
  workgroupBarrier();
  return total;
}`;
}

/**
 * WGSL: the head of a 1-D kernel over elements, 256 invocations a
 * workgroup on a {@linkcode grid}: `fn main` with `i`, the element, and an
 * early return for `i >= limit` (a WGSL expression). The body and the
 * closing brace follow; the module must hold {@linkcode GROUP_INDEX}.
 */
export function flatMain(limit: string): string {
  return /* wgsl */ `@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) l: u32) {
  let i = groupIndex(wg, nwg) * 256u + l;
  if (i >= ${limit}) { return; }`;
}

/**
 * WGSL: the head of a kernel with one workgroup of `size` invocations per
 * row, on a {@linkcode grid}: `fn main` with `r`, the row, `l`, the
 * invocation in it, and an early return for `r >= p.rows`. The body and
 * the closing brace follow; the module must hold {@linkcode GROUP_INDEX}.
 */
export function rowMain(size: number): string {
  return /* wgsl */ `@compute @workgroup_size(${size})
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) l: u32) {
  let r = groupIndex(wg, nwg);
  if (r >= p.rows) { return; }`;
}

/**
 * WGSL: `workgroupSum(l, v)`, the sum of `v` (of WGSL type `type`) over a
 * workgroup of `size` invocations (a power of two), by tree reduction in
 * shared memory, returned to every invocation. All of them must call it.
 */
export function workgroupSum(size: number, type = "f32"): string {
  return /* wgsl */ `
var<workgroup> sums: array<${type}, ${size}>;
fn workgroupSum(l: u32, v: ${type}) -> ${type} {
  sums[l] = v;
  workgroupBarrier();
  for (var s = ${size / 2}u; s > 0u; s = s >> 1u) {
    if (l < s) { sums[l] = sums[l] + sums[l + s]; }
    workgroupBarrier();
  }
  let total = sums[0];
  workgroupBarrier();
  return total;
}`;
}

/** A device with its pipeline cache and buffer pool. */
export class GpuContext {
  readonly device: GPUDevice;
  readonly pool: BufferPool;
  readonly #pipelines = new Map<string, GPUComputePipeline>();
  /** Uniforms of dispatches not released yet; `destroy` frees them too. */
  readonly #uniforms = new Set<GPUBuffer>();

  constructor(device: GPUDevice) {
    this.device = device;
    this.pool = new BufferPool(device);
  }

  /** The compute pipeline of a WGSL source, compiled once. */
  pipeline(code: string): GPUComputePipeline {
    let p = this.#pipelines.get(code);
    if (!p) {
      const module = this.device.createShaderModule({ code });
      p = this.device.createComputePipeline({
        layout: "auto",
        compute: { module, entryPoint: "main" },
      });
      this.#pipelines.set(code, p);
    }
    return p;
  }

  /** A pooled tensor of `length` elements of `bytesPerElement` bytes. */
  tensor(length: number, bytesPerElement = 4): GpuTensor {
    return {
      buffer: this.pool.acquire(length * bytesPerElement),
      offset: 0,
      length,
    };
  }

  /** A new pooled tensor holding `data`. */
  upload(data: ArrayBufferView & { length: number }): GpuTensor {
    const t = this.tensor(data.length, data.byteLength / data.length || 4);
    this.write(t, data);
    return t;
  }

  /** Writes `data` into `t` from its first element (queue order). */
  write(t: GpuTensor, data: ArrayBufferView & { length: number }): void {
    if (data.length > t.length) {
      throw new RangeError(
        `Cannot write ${data.length} elements into a GPU tensor of ${t.length}`,
      );
    }
    const size = data.byteLength / Math.max(1, data.length);
    const view = new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
    // WebGPU writes whole 4-byte words (odd-length f16 data gets a zero
    // pad) and takes no views of shared memory (the WASM backend's).
    let bytes: Uint8Array<ArrayBuffer>;
    if (view.length % 4 === 0 && view.buffer instanceof ArrayBuffer) {
      bytes = view as Uint8Array<ArrayBuffer>;
    } else {
      bytes = new Uint8Array(Math.ceil(view.length / 4) * 4);
      bytes.set(view);
    }
    this.device.queue.writeBuffer(t.buffer, t.offset * size, bytes);
  }

  /** Returns a tensor from {@linkcode tensor} or {@linkcode upload} to the pool. */
  free(t: GpuTensor): void {
    this.pool.release(t.buffer);
  }

  /** Records a dispatch: pipeline, bind group and (owned) uniform. */
  dispatch(spec: DispatchSpec): Dispatch {
    const pipeline = this.pipeline(spec.code);
    let uniformBuffer: GPUBuffer;
    let owned: GPUBuffer | null = null;
    if (spec.params instanceof ArrayBuffer) {
      owned = uniformBuffer = this.device.createBuffer({
        label: spec.label,
        size: spec.params.byteLength,
        usage: GPUBufferUsage.UNIFORM | GPUBufferUsage.COPY_DST,
        mappedAtCreation: true,
      });
      new Uint8Array(owned.getMappedRange()).set(new Uint8Array(spec.params));
      owned.unmap();
      this.#uniforms.add(owned);
    } else {
      uniformBuffer = spec.params;
    }
    const entries: GPUBindGroupEntry[] = spec.tensors.map((t, i) => ({
      binding: i,
      resource: { buffer: t.buffer },
    }));
    entries.push({
      binding: spec.tensors.length,
      resource: { buffer: uniformBuffer },
    });
    const bindGroup = this.device.createBindGroup({
      label: spec.label,
      layout: pipeline.getBindGroupLayout(0),
      entries,
    });
    return {
      label: spec.label,
      pipeline,
      bindGroup,
      workgroups: spec.workgroups,
      uniform: owned,
    };
  }

  /** Encodes `dispatches` in order into one compute pass. */
  encode(encoder: GPUCommandEncoder, dispatches: readonly Dispatch[]): void {
    const pass = encoder.beginComputePass();
    for (const d of dispatches) {
      pass.setPipeline(d.pipeline);
      pass.setBindGroup(0, d.bindGroup);
      pass.dispatchWorkgroups(
        d.workgroups[0],
        d.workgroups[1],
        d.workgroups[2],
      );
    }
    pass.end();
  }

  /** Submits `dispatches` as one command buffer. */
  run(dispatches: readonly Dispatch[]): void {
    const encoder = this.device.createCommandEncoder();
    this.encode(encoder, dispatches);
    this.device.queue.submit([encoder.finish()]);
  }

  /** Destroys the uniform buffers that `dispatches` own. */
  release(dispatches: readonly Dispatch[]): void {
    for (const d of dispatches) {
      if (!d.uniform) continue;
      d.uniform.destroy();
      this.#uniforms.delete(d.uniform);
    }
  }

  /** Copies `t` back to the CPU once the queue has reached this point. */
  async read(t: GpuTensor, bytesPerElement = 4): Promise<ArrayBuffer> {
    const bytes = t.length * bytesPerElement;
    const staging = this.pool.acquire(
      bytes,
      GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST,
    );
    try {
      const encoder = this.device.createCommandEncoder();
      encoder.copyBufferToBuffer(
        t.buffer,
        t.offset * bytesPerElement,
        staging,
        0,
        Math.ceil(bytes / 4) * 4,
      );
      this.device.queue.submit([encoder.finish()]);
      await staging.mapAsync(GPUMapMode.READ, 0, Math.ceil(bytes / 4) * 4);
      return staging.getMappedRange(0, Math.ceil(bytes / 4) * 4).slice(
        0,
        bytes,
      );
    } finally {
      // Never back to the pool still mapped, whatever failed.
      if (staging.mapState === "mapped") staging.unmap();
      this.pool.release(staging);
    }
  }

  /** {@linkcode read} as float32 values. */
  async readF32(t: GpuTensor): Promise<Float32Array> {
    return new Float32Array(await this.read(t));
  }

  /** Frees every pooled buffer (pipelines go with the device). */
  destroy(): void {
    this.pool.destroy();
    for (const u of this.#uniforms) u.destroy();
    this.#uniforms.clear();
    this.#pipelines.clear();
  }
}
