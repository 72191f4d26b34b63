import type { Backend } from "./backend.ts";

/**
 * A float32 tensor: a view of backend memory, its shape, and (once a
 * backward pass reaches it) a gradient buffer of the same size.
 */
export class Tensor {
  readonly data: Float32Array;
  readonly shape: readonly number[];
  /** The gradient; parameters get a view of the flat gradient buffer. */
  grad: Float32Array | null;

  constructor(
    data: Float32Array,
    shape: readonly number[],
    grad: Float32Array | null = null,
  ) {
    const size = shape.reduce((a, b) => a * b, 1);
    if (data.length !== size) {
      throw new RangeError(
        `Cannot make a tensor of shape [${shape}] as it needs ${size} elements: data has ${data.length}`,
      );
    }
    this.data = data;
    this.shape = shape;
    this.grad = grad;
  }

  /** Number of elements. */
  get size(): number {
    return this.data.length;
  }
}

/**
 * A tape-based autograd graph over one backend. Each op computes its output
 * at once and records a closure that pushes the output's gradient back to
 * its inputs; {@linkcode Graph.backward} runs the closures newest first.
 *
 * Activations and their gradients come from the backend's arena: a training
 * step marks the arena, runs forward and backward, and releases it.
 */
export class Graph {
  readonly be: Backend;
  #tape: Array<() => void> = [];

  constructor(backend: Backend) {
    this.be = backend;
  }

  /** A zeroed tensor of `shape` in backend memory. */
  zeros(shape: readonly number[]): Tensor {
    return new Tensor(this.be.alloc(shape.reduce((a, b) => a * b, 1)), shape);
  }

  /**
   * A tensor of `shape` with unspecified contents, for an op whose kernel
   * overwrites every element (see {@linkcode Backend.empty}).
   */
  empty(shape: readonly number[]): Tensor {
    return new Tensor(this.be.empty(shape.reduce((a, b) => a * b, 1)), shape);
  }

  /** Records a backward step; ops call this after computing their output. */
  record(backward: () => void): void {
    this.#tape.push(backward);
  }

  /** The gradient buffer of `t`, allocated (zeroed) on first use. */
  gradOf(t: Tensor): Float32Array {
    t.grad ??= this.be.alloc(t.size);
    return t.grad;
  }

  /** Back-propagates from a scalar: d(loss)/d(loss) = 1. */
  backward(loss: Tensor): void {
    if (loss.size !== 1) {
      throw new RangeError(
        `Cannot start backward from a tensor of shape [${loss.shape}]: it must be a scalar`,
      );
    }
    this.gradOf(loss)[0] = 1;
    for (let i = this.#tape.length - 1; i >= 0; i--) this.#tape[i]();
    this.#tape = [];
  }

  /** Forgets the recorded ops (inference, or after an aborted step). */
  clear(): void {
    this.#tape = [];
  }
}
