/**
 * The memory a peer needs to train a job's model, before it takes a seat:
 * two trainers (its own, and the one an audit replays another peer's
 * work on), each holding the parameters, their gradients, AdamW's two
 * moments, Muon's scratch and the activations of a batch (the WebGPU
 * trainer's buffers, `webgpu/activations.ts`, exactly, each trainer its
 * own; the CPU trainers' autograd tape keeps more,
 * {@linkcode CPU_ACTIVATIONS_FACTOR} times as much, measured, but the two
 * take turns on one backend's arena, so their activations share one
 * high-water mark), and the float32 copies of the parameters the process
 * holds on the host, with the runtime. {@linkcode memoryFit} compares that
 * with what a backend offers: WebGPU's largest buffer and binding (the API
 * has no total to ask), the 4 GiB of a wasm32 memory, and the machine's
 * RAM.
 *
 * Pure: the caller reads the limits.
 *
 * @module
 */
import { type GptConfig, parameterLayout } from "./gpt.ts";
import { muonPlan } from "./muon.ts";
import { activationSizes } from "./webgpu/activations.ts";
import { sumSquaresGroups } from "./webgpu/reduce.ts";

/**
 * Float32 copies of the parameters a peer's process holds at its peak
 * besides its trainers: the checkpoint C(r) and the outer momentum, the
 * trained parameters, the pseudo-gradient, the carried moments, and the
 * states in flight (work-record states stored for audits, an audit's
 * start and end fetched, its replay queued behind the round's steps).
 * Measured with `bench live` (2 peers, WASM, every round audited): the
 * peaks less the runtime and the trainers held 25-26 copies at 12.8M and
 * 42.8M parameters, which heap snapshots account for (up to 14 reachable
 * at once, the rest freed and not yet collected); counted at 32, for the
 * spread of peaks from run to run.
 */
export const HOST_PARAM_COPIES = 32;

/**
 * The copies held where one is smaller than glibc's largest mmap
 * threshold ({@linkcode MMAP_THRESHOLD_BYTES}): freed, such arrays stay in
 * the allocator's arenas for the next, where larger ones go back to the
 * system. At 3.2M parameters (13 MB a copy) the peaks held 40-60 copies
 * (20% fewer with the threshold fixed at 128 kB); counted at 75.
 */
export const SMALL_HOST_PARAM_COPIES = 75;

/** glibc's largest dynamic mmap threshold on 64-bit Linux. */
export const MMAP_THRESHOLD_BYTES = 32 * 2 ** 20;

/**
 * Float32 copies of `params` parameters a peer's process holds at its peak
 * besides its trainers ({@linkcode HOST_PARAM_COPIES}, or
 * {@linkcode SMALL_HOST_PARAM_COPIES} for copies the allocator keeps).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { hostParamCopies } from "./memory_need.ts";
 * assert.equal(hostParamCopies(3_241_472), 75);
 * assert.equal(hostParamCopies(124_475_904), 32);
 * ```
 */
export function hostParamCopies(params: number): number {
  return 4 * params < MMAP_THRESHOLD_BYTES
    ? SMALL_HOST_PARAM_COPIES
    : HOST_PARAM_COPIES;
}

/**
 * Bytes of the process before any model: Deno, libp2p, the node (199-204
 * MB measured on WASM with a 21k-parameter model; a GPU driver adds its
 * own, 110 MB more on lavapipe).
 */
export const RUNTIME_BYTES = 256e6;

/**
 * The CPU trainers' activations (the tape's tensors and their gradients)
 * against the WebGPU trainer's buffers: the WASM trainer's memory grew by
 * 1.26x (16 x 64) to 1.44x (128 x 64) their bytes on the reference model;
 * `memory_need_test.ts` holds the estimate above what it takes.
 */
export const CPU_ACTIVATIONS_FACTOR = 1.5;

/** Trainers a peer runs: its own, and an auditor's replay. */
export const TRAINERS_PER_PEER = 2;

/** The most a wasm32 memory holds (both trainers share the backend's). */
export const WASM_MEMORY_BYTES = 2 ** 32;

/** What one trainer holds, in bytes. */
export interface TrainerMemory {
  /** Parameters, gradients and AdamW's two moments. */
  readonly state: number;
  /** Muon's scratch (0 without Muon). */
  readonly muon: number;
  /** The activations of one batch shape. */
  readonly activations: number;
  /**
   * Whether the trainers of one backend take turns on one memory for
   * their activations (the CPU trainers' arena) rather than each keeping
   * its own (WebGPU's buffers).
   */
  readonly sharedActivations: boolean;
  readonly total: number;
  /** The largest single buffer: one binding on WebGPU. */
  readonly largest: { readonly name: string; readonly bytes: number };
}

/** How a trainer runs. */
export interface TrainerKind {
  /** Muon for the hidden matrices (its scratch), or AdamW alone. */
  readonly muon: boolean;
  /** A CPU trainer (JS, WASM) rather than the WebGPU one. */
  readonly cpu: boolean;
}

/**
 * One trainer of `model` on batches of `batch` x `context` tokens.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { trainerMemory } from "./memory_need.ts";
 * const m = trainerMemory(
 *   { vocabSize: 256, contextLength: 64, dModel: 128, heads: 4, layers: 2 },
 *   16,
 *   64,
 *   { muon: false, cpu: false },
 * );
 * assert.equal(m.total, m.state + m.activations);
 * assert.ok(m.largest.bytes <= m.activations);
 * ```
 */
export function trainerMemory(
  model: GptConfig,
  batch: number,
  context: number,
  { muon, cpu }: TrainerKind,
): TrainerMemory {
  const layout = parameterLayout(model);
  const n = layout.total;
  const buffers: [string, number][] = [
    ["parameters", n],
    ["gradients", n],
    ["AdamW first moment", n],
    ["AdamW second moment", n],
  ];
  const state = 4 * 4 * n;
  let muonBytes = 0;
  if (muon) {
    const plan = muonPlan(layout);
    const range = plan.end - plan.start, side = plan.maxSide;
    const scratch: [string, number][] = [
      ["Muon input", range],
      ["Muon update", range],
      ["Muon Gram matrix", side * side],
      ["Muon polynomial", side * side],
      ["Muon norms", plan.matrices.length],
      ["Muon partial sums", sumSquaresGroups(n)],
    ];
    buffers.push(...scratch);
    muonBytes = 4 * scratch.reduce((s, [, e]) => s + e, 0);
  }
  let activations = 0;
  for (
    const [name, elements] of Object.entries(
      activationSizes(model, batch, context, n),
    )
  ) {
    buffers.push([`activation "${name}"`, elements]);
    activations += 4 * elements * (cpu ? CPU_ACTIVATIONS_FACTOR : 1);
  }
  const [name, elements] = buffers.reduce((a, b) => b[1] > a[1] ? b : a);
  return {
    state,
    muon: muonBytes,
    activations,
    sharedActivations: cpu,
    total: state + muonBytes + activations,
    largest: { name, bytes: 4 * elements },
  };
}

/** What a backend offers, as the node reads it. */
export type MemoryLimits =
  | {
    readonly kind: "webgpu";
    readonly maxBufferSize: number;
    readonly maxStorageBufferBindingSize: number;
    readonly ramBytes: number;
  }
  | { readonly kind: "wasm" | "js"; readonly ramBytes: number };

/** One need set against one limit. */
export interface MemoryCheck {
  /** What is needed: "one buffer (activation "att")", "WASM memory", "RAM for ...". */
  readonly what: string;
  readonly needBytes: number;
  readonly limitBytes: number;
  /** The limit's name: "maxStorageBufferBindingSize", "wasm32", "RAM". */
  readonly limit: string;
}

/** The verdict of {@linkcode memoryFit}. */
export interface MemoryFit {
  readonly fits: boolean;
  /** The check closest to its limit (the first one over it, if any). */
  readonly tightest: MemoryCheck;
  /** Bytes of the whole peer: its trainers and the host copies. */
  readonly peerBytes: number;
}

/**
 * Whether a peer with `trainer` (from {@linkcode trainerMemory}) and
 * `params` parameters fits `limits`: on WebGPU its largest buffer within
 * the device's buffer and binding limits and the host copies within RAM;
 * on WASM both trainers within a wasm32 memory and everything within
 * RAM; on JS everything within RAM.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { memoryFit, trainerMemory } from "./memory_need.ts";
 * const model = { vocabSize: 256, contextLength: 64, dModel: 32, heads: 2, layers: 1 };
 * const trainer = trainerMemory(model, 65536, 64, { muon: false, cpu: true });
 * const fit = memoryFit(trainer, 20_000, {
 *   kind: "wasm",
 *   ramBytes: 64e9,
 * });
 * assert.equal(fit.fits, false);
 * assert.equal(fit.tightest.limit, "wasm32");
 * ```
 */
export function memoryFit(
  trainer: TrainerMemory,
  params: number,
  limits: MemoryLimits,
): MemoryFit {
  const trainers = TRAINERS_PER_PEER * (trainer.state + trainer.muon) +
    (trainer.sharedActivations ? 1 : TRAINERS_PER_PEER) * trainer.activations;
  const host = RUNTIME_BYTES + hostParamCopies(params) * 4 * params;
  const checks: MemoryCheck[] = [];
  if (limits.kind === "webgpu") {
    const buffer = `one buffer (${trainer.largest.name})`;
    checks.push({
      what: buffer,
      needBytes: trainer.largest.bytes,
      limitBytes: limits.maxStorageBufferBindingSize,
      limit: "maxStorageBufferBindingSize",
    }, {
      what: buffer,
      needBytes: trainer.largest.bytes,
      limitBytes: limits.maxBufferSize,
      limit: "maxBufferSize",
    }, {
      what: "RAM for the process and its copies of the parameters",
      needBytes: host,
      limitBytes: limits.ramBytes,
      limit: "RAM",
    });
  } else {
    if (limits.kind === "wasm") {
      checks.push({
        what: "WASM memory",
        needBytes: trainers,
        limitBytes: WASM_MEMORY_BYTES,
        limit: "wasm32",
      });
    }
    checks.push({
      what:
        `RAM for ${TRAINERS_PER_PEER} trainers, the process and its copies of the parameters`,
      needBytes: trainers + host,
      limitBytes: limits.ramBytes,
      limit: "RAM",
    });
  }
  const over = checks.find((c) => c.needBytes > c.limitBytes);
  const ratio = (c: MemoryCheck) => c.needBytes / c.limitBytes;
  return {
    fits: over === undefined,
    tightest: over ?? checks.reduce((a, b) => ratio(b) > ratio(a) ? b : a),
    peerBytes: trainers + host,
  };
}
