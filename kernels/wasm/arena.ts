/**
 * A bump arena over a shared `WebAssembly.Memory`: buffers are views of the
 * memory (so kernels never copy), freed in stack order with mark/release,
 * and the memory grows on demand. Growing a shared memory never detaches
 * old views, but views must be made from `memory.buffer` after growing.
 *
 * @module
 */
import { MAX_PAGES, PAGE_BYTES } from "./loader.ts";

/** Every buffer starts on a 64-byte boundary (a cache line). */
export const ARENA_ALIGN = 64;

const align = (x: number, a: number) => Math.ceil(x / a) * a;

/** The bump allocator of one backend. */
export class WasmArena {
  readonly memory: WebAssembly.Memory;
  readonly base: number;
  #top: number;
  /** End of the bytes ever handed out: past it, memory is still zero. */
  #dirtyEnd: number;
  /** Every SharedArrayBuffer this memory has had (one per growth). */
  #buffers = new WeakSet<ArrayBufferLike>();

  constructor(memory: WebAssembly.Memory, base: number) {
    this.memory = memory;
    this.base = align(base, ARENA_ALIGN);
    this.#top = this.base;
    this.#dirtyEnd = this.base;
    this.#buffers.add(memory.buffer);
  }

  /** Bytes in use above the base. */
  get used(): number {
    return this.#top - this.base;
  }

  /** The current position, to release back to. */
  mark(): number {
    return this.#top;
  }

  /** Frees every buffer allocated since `mark`. */
  release(mark: number): void {
    if (!Number.isInteger(mark) || mark < this.base || mark > this.#top) {
      throw new RangeError(
        `Cannot release to mark ${mark} as it is outside the arena (${this.base}..${this.#top}): marks must come from mark() and be released innermost first`,
      );
    }
    this.#top = mark;
  }

  /**
   * Reserves `bytes` bytes and returns their offset; they are zeroed
   * unless `zero` is false (then they hold what earlier buffers left).
   */
  reserve(bytes: number, zero = true): number {
    if (!Number.isInteger(bytes) || bytes < 0) {
      throw new RangeError(
        `Cannot allocate ${bytes} bytes: expected a non-negative integer`,
      );
    }
    const offset = this.#top;
    const end = align(offset + bytes, ARENA_ALIGN);
    this.#ensure(end);
    const dirty = Math.min(end, this.#dirtyEnd);
    if (zero && dirty > offset) {
      // Both ends are ARENA_ALIGN-aligned. V8 fills a shared buffer element
      // by element, so 8-byte elements zero ~4x faster than bytes.
      new Float64Array(this.memory.buffer, offset, (dirty - offset) / 8)
        .fill(0);
    }
    this.#dirtyEnd = Math.max(this.#dirtyEnd, end);
    this.#top = end;
    return offset;
  }

  /** A zeroed float32 buffer. */
  alloc(length: number): Float32Array {
    checkLength(length);
    const offset = this.reserve(length * 4); // may grow: take the buffer after
    return new Float32Array(this.memory.buffer, offset, length);
  }

  /** A float32 buffer holding whatever earlier buffers left there. */
  empty(length: number): Float32Array {
    checkLength(length);
    const offset = this.reserve(length * 4, false);
    return new Float32Array(this.memory.buffer, offset, length);
  }

  /** A zeroed int32 buffer. */
  allocInt32(length: number): Int32Array {
    checkLength(length);
    const offset = this.reserve(length * 4);
    return new Int32Array(this.memory.buffer, offset, length);
  }

  /** Whether `view` is a view of this arena's memory. */
  owns(view: ArrayBufferView): boolean {
    return this.#buffers.has(view.buffer);
  }

  /** Grows the memory so that bytes below `end` exist. */
  #ensure(end: number): void {
    const have = this.memory.buffer.byteLength;
    if (end <= have) return;
    const pages = Math.ceil((end - have) / PAGE_BYTES);
    if (have / PAGE_BYTES + pages > MAX_PAGES) {
      throw new RangeError(
        `Cannot allocate: the arena would need ${end} bytes and wasm memory is limited to 4 GiB`,
      );
    }
    this.memory.grow(pages);
    this.#buffers.add(this.memory.buffer);
  }
}

function checkLength(length: number): void {
  if (!Number.isInteger(length) || length < 0) {
    throw new RangeError(
      `Cannot allocate a buffer of length ${length}: expected a non-negative integer`,
    );
  }
}
