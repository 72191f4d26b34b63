/**
 * A GPT-2 style decoder-only transformer over bytes. All parameters are
 * named views over one flat float32 buffer (as are their gradients and the
 * optimizer state), so the optimizer step, gradient clipping, hashing,
 * checkpointing and transfer are single loops over one array.
 *
 * Dims legend: B batch, T time, C = dModel, NH heads, V vocab, L layers.
 *
 * @module
 */
import type { Backend } from "./backend.ts";
import { Rng } from "./data/rng.ts";
import * as op from "./ops.ts";
import { type Graph, Tensor } from "./tensor.ts";

/** Model shape. */
export interface GptConfig {
  vocabSize: number;
  contextLength: number;
  layers: number;
  dModel: number;
  heads: number;
}

/** Every field of a {@linkcode GptConfig}, in its order. */
export const GPT_CONFIG_KEYS = [
  "vocabSize",
  "contextLength",
  "layers",
  "dModel",
  "heads",
] as const satisfies readonly (keyof GptConfig)[];

/** How one parameter tensor is laid out and initialised. */
export interface ParamSpec {
  name: string;
  shape: number[];
  /** Gets weight decay (matrices and embeddings; not biases or norms). */
  decay: boolean;
  init: "normal" | "residual" | "zeros" | "ones";
}

/** Checks a config; throws a RangeError naming the bad field. */
export function validateGptConfig(c: GptConfig): GptConfig {
  for (const key of GPT_CONFIG_KEYS) {
    if (!Number.isInteger(c[key]) || c[key] < 1 || c[key] > 1 << 16) {
      throw new RangeError(
        `Cannot build a GPT as ${key} must be an integer in [1, 65536]: current value is ${
          c[key]
        }`,
      );
    }
  }
  if (c.dModel % c.heads !== 0) {
    throw new RangeError(
      `Cannot build a GPT as dModel (${c.dModel}) must be divisible by heads (${c.heads})`,
    );
  }
  return c;
}

/**
 * The parameters in buffer order: every decayed tensor first, then the
 * rest, so AdamW runs as two contiguous calls. Names follow Hugging Face's
 * GPT-2 (weights stored [in, out]), so other tools can read checkpoints.
 */
export function parameterSpecs(c: GptConfig): ParamSpec[] {
  const C = c.dModel;
  const decayed: ParamSpec[] = [
    {
      name: "wte.weight",
      shape: [c.vocabSize, C],
      decay: true,
      init: "normal",
    },
    {
      name: "wpe.weight",
      shape: [c.contextLength, C],
      decay: true,
      init: "normal",
    },
  ];
  const rest: ParamSpec[] = [];
  for (let l = 0; l < c.layers; l++) {
    const h = `h.${l}`;
    decayed.push(
      {
        name: `${h}.attn.c_attn.weight`,
        shape: [C, 3 * C],
        decay: true,
        init: "normal",
      },
      {
        name: `${h}.attn.c_proj.weight`,
        shape: [C, C],
        decay: true,
        init: "residual",
      },
      {
        name: `${h}.mlp.c_fc.weight`,
        shape: [C, 4 * C],
        decay: true,
        init: "normal",
      },
      {
        name: `${h}.mlp.c_proj.weight`,
        shape: [4 * C, C],
        decay: true,
        init: "residual",
      },
    );
    rest.push(
      { name: `${h}.ln_1.weight`, shape: [C], decay: false, init: "ones" },
      { name: `${h}.ln_1.bias`, shape: [C], decay: false, init: "zeros" },
      {
        name: `${h}.attn.c_attn.bias`,
        shape: [3 * C],
        decay: false,
        init: "zeros",
      },
      {
        name: `${h}.attn.c_proj.bias`,
        shape: [C],
        decay: false,
        init: "zeros",
      },
      { name: `${h}.ln_2.weight`, shape: [C], decay: false, init: "ones" },
      { name: `${h}.ln_2.bias`, shape: [C], decay: false, init: "zeros" },
      {
        name: `${h}.mlp.c_fc.bias`,
        shape: [4 * C],
        decay: false,
        init: "zeros",
      },
      { name: `${h}.mlp.c_proj.bias`, shape: [C], decay: false, init: "zeros" },
    );
  }
  rest.push(
    { name: "ln_f.weight", shape: [C], decay: false, init: "ones" },
    { name: "ln_f.bias", shape: [C], decay: false, init: "zeros" },
  );
  return [...decayed, ...rest];
}

const sizeOf = (shape: readonly number[]) => shape.reduce((a, b) => a * b, 1);

/** Where each parameter lives in the flat buffer. */
export interface ParameterLayout {
  /** Every parameter in buffer order, with its element offset and size. */
  entries: { spec: ParamSpec; offset: number; size: number }[];
  /** Elements in the flat buffer. */
  total: number;
  /** Elements [0, decayedSize) get weight decay; the rest do not. */
  decayedSize: number;
}

/**
 * The flat layout of {@linkcode parameterSpecs}: what every backend (the
 * WebGPU trainer included) uses, so parameters move between them as one
 * array.
 */
export function parameterLayout(c: GptConfig): ParameterLayout {
  const entries: ParameterLayout["entries"] = [];
  let offset = 0, decayedSize = 0;
  for (const spec of parameterSpecs(c)) {
    const size = sizeOf(spec.shape);
    entries.push({ spec, offset, size });
    offset += size;
    if (spec.decay) decayedSize = offset;
  }
  return { entries, total: offset, decayedSize };
}

/** The model: config, flat buffers, and named tensor views. */
export class Gpt {
  readonly config: GptConfig;
  readonly be: Backend;
  readonly specs: ParamSpec[];
  /** All parameters, in spec order. */
  readonly params: Float32Array;
  /** Their gradients, same layout. */
  readonly grads: Float32Array;
  /** Elements [0, decayedSize) get weight decay; the rest do not. */
  readonly decayedSize: number;
  readonly #tensors = new Map<string, Tensor>();

  /** Allocates a model with zeroed parameters; see {@linkcode initGpt}. */
  constructor(be: Backend, config: GptConfig) {
    this.config = validateGptConfig(config);
    this.be = be;
    const layout = parameterLayout(config);
    this.specs = layout.entries.map((e) => e.spec);
    this.params = be.alloc(layout.total);
    this.grads = be.alloc(layout.total);
    for (const { spec, offset, size } of layout.entries) {
      const data = this.params.subarray(offset, offset + size);
      const grad = this.grads.subarray(offset, offset + size);
      this.#tensors.set(spec.name, new Tensor(data, spec.shape, grad));
    }
    this.decayedSize = layout.decayedSize;
  }

  /** The parameter tensor called `name`. */
  param(name: string): Tensor {
    const t = this.#tensors.get(name);
    if (!t) throw new RangeError(`No parameter named "${name}" in this GPT`);
    return t;
  }

  /**
   * Logits [B, T, V] for token ids [B*T] (positions 0..T-1 in each row);
   * `positions` holds those position ids in backend memory.
   */
  logits(
    g: Graph,
    ids: Int32Array,
    positions: Int32Array,
    B: number,
    T: number,
  ): Tensor {
    const { layers, heads, contextLength } = this.config;
    if (
      T > contextLength || ids.length !== B * T || positions.length !== B * T
    ) {
      throw new RangeError(
        `Cannot run the GPT on B=${B}, T=${T} with ${ids.length} ids: T must be <= ${contextLength}`,
      );
    }
    const p = (name: string) => this.param(name);
    let x = op.add(
      g,
      op.embedding(g, p("wte.weight"), ids, [B, T]),
      op.embedding(g, p("wpe.weight"), positions, [B, T]),
    );
    for (let l = 0; l < layers; l++) {
      const h = `h.${l}`;
      const n1 = op.layernorm(g, x, p(`${h}.ln_1.weight`), p(`${h}.ln_1.bias`));
      const qkv = op.linear(
        g,
        n1,
        p(`${h}.attn.c_attn.weight`),
        p(`${h}.attn.c_attn.bias`),
      );
      const att = op.attention(g, qkv, heads);
      x = op.add(
        g,
        x,
        op.linear(
          g,
          att,
          p(`${h}.attn.c_proj.weight`),
          p(`${h}.attn.c_proj.bias`),
        ),
      );
      const n2 = op.layernorm(g, x, p(`${h}.ln_2.weight`), p(`${h}.ln_2.bias`));
      const fc = op.gelu(
        g,
        op.linear(g, n2, p(`${h}.mlp.c_fc.weight`), p(`${h}.mlp.c_fc.bias`)),
      );
      x = op.add(
        g,
        x,
        op.linear(
          g,
          fc,
          p(`${h}.mlp.c_proj.weight`),
          p(`${h}.mlp.c_proj.bias`),
        ),
      );
    }
    const xf = op.layernorm(g, x, p("ln_f.weight"), p("ln_f.bias"));
    // The output head shares the token embedding (weight tying).
    return op.matmul(g, xf, p("wte.weight"), { transB: true });
  }

  /** Mean cross-entropy of next-byte prediction over a batch. */
  loss(
    g: Graph,
    ids: Int32Array,
    targets: Int32Array,
    positions: Int32Array,
    B: number,
    T: number,
  ): Tensor {
    return op.crossEntropy(g, this.logits(g, ids, positions, B, T), targets);
  }
}

/**
 * Fills the parameters GPT-2 style from `seed`: normal(0, 0.02) weights,
 * residual projections scaled by 1/sqrt(2L), zero biases, unit norms.
 * Deterministic: the same seed gives the same bits on every backend.
 */
export function initGpt(model: Gpt, seed: number): void {
  const rng = new Rng(seed);
  const residualStd = 0.02 / Math.sqrt(2 * model.config.layers);
  for (const spec of model.specs) {
    const data = model.param(spec.name).data;
    switch (spec.init) {
      case "zeros":
        data.fill(0);
        break;
      case "ones":
        data.fill(1);
        break;
      default: {
        const std = spec.init === "residual" ? residualStd : 0.02;
        for (let i = 0; i < data.length; i++) data[i] = rng.normal() * std;
      }
    }
  }
}

/** Position ids [B*T]: 0..T-1 in every row. */
export function fillPositions(
  out: Int32Array,
  B: number,
  T: number,
): Int32Array {
  for (let b = 0; b < B; b++) for (let t = 0; t < T; t++) out[b * T + t] = t;
  return out;
}
