/**
 * A pool of GPU buffers keyed by (size, usage): a released buffer is handed
 * out again to the next request of the same size and usage instead of
 * being destroyed and re-created, which is costly on every driver. The
 * trainer allocates its activations from here, so changing the batch shape
 * (training vs evaluation batches, a new round) reuses memory.
 *
 * Sizes are rounded up to 256 bytes, so near sizes share buffers.
 *
 * @module
 */

const GRANULE = 256;

/** Reuses buffers of equal rounded size and usage. */
export class BufferPool {
  readonly #device: GPUDevice;
  readonly #free = new Map<string, GPUBuffer[]>();
  readonly #inUse = new Set<GPUBuffer>();
  #pooledBytes = 0;

  constructor(device: GPUDevice) {
    this.#device = device;
  }

  /**
   * A buffer of at least `bytes` bytes (contents undefined if reused);
   * by default a storage buffer that can be written and copied out.
   */
  acquire(
    bytes: number,
    usage: number = GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC |
      GPUBufferUsage.COPY_DST,
  ): GPUBuffer {
    if (!Number.isSafeInteger(bytes) || bytes < 0) {
      throw new RangeError(
        `Cannot allocate a GPU buffer of ${bytes} bytes: expected a non-negative integer`,
      );
    }
    const size = Math.max(GRANULE, Math.ceil(bytes / GRANULE) * GRANULE);
    const reused = this.#free.get(`${usage}:${size}`)?.pop();
    if (reused) this.#pooledBytes -= size;
    const buffer = reused ?? this.#device.createBuffer({ size, usage });
    this.#inUse.add(buffer);
    return buffer;
  }

  /** Returns a buffer from {@linkcode acquire} for reuse. */
  release(buffer: GPUBuffer): void {
    if (!this.#inUse.delete(buffer)) {
      throw new TypeError(
        `Cannot release a GPU buffer of ${buffer.size} bytes: it is not in use from this pool`,
      );
    }
    const key = `${buffer.usage}:${buffer.size}`;
    const list = this.#free.get(key) ?? [];
    list.push(buffer);
    this.#free.set(key, list);
    this.#pooledBytes += buffer.size;
  }

  /** Bytes in buffers handed out and not released. */
  get bytesInUse(): number {
    let sum = 0;
    for (const b of this.#inUse) sum += b.size;
    return sum;
  }

  /** Bytes in released buffers kept for reuse. */
  get bytesPooled(): number {
    return this.#pooledBytes;
  }

  /** Destroys every buffer, in use or pooled. */
  destroy(): void {
    for (const b of this.#inUse) b.destroy();
    for (const list of this.#free.values()) for (const b of list) b.destroy();
    this.#inUse.clear();
    this.#free.clear();
    this.#pooledBytes = 0;
  }
}
