import type { AdamW } from "./adamw.ts";
import type { Gpt } from "./gpt.ts";
import { Graph } from "./tensor.ts";

/** Token buffers of one batch, in backend memory. */
export interface Batch {
  /** Input ids [B*T]. */
  inputs: Int32Array;
  /** Next-byte targets [B*T]. */
  targets: Int32Array;
  /** Position ids [B*T]: 0..T-1 per row. */
  positions: Int32Array;
  B: number;
  T: number;
}

/** What one training step reports. */
export interface StepResult {
  loss: number;
  lr: number;
  gradNorm: number;
}

/**
 * One training step: forward, backward, clip, AdamW at `lr` (default: the
 * optimizer's schedule). Activations live in the backend arena only for
 * the duration of the step.
 */
export function trainStep(
  model: Gpt,
  opt: AdamW,
  batch: Batch,
  lr?: number,
): StepResult {
  const be = model.be;
  const mark = be.mark();
  const g = new Graph(be);
  try {
    model.grads.fill(0);
    const loss = model.loss(
      g,
      batch.inputs,
      batch.targets,
      batch.positions,
      batch.B,
      batch.T,
    );
    const value = loss.data[0];
    g.backward(loss);
    return { loss: value, ...opt.update(model, lr) };
  } finally {
    g.clear();
    be.release(mark);
  }
}

/** Mean loss over a batch without touching gradients or the optimizer. */
export function evalLoss(model: Gpt, batch: Batch): number {
  const be = model.be;
  const mark = be.mark();
  const g = new Graph(be);
  try {
    return model.loss(
      g,
      batch.inputs,
      batch.targets,
      batch.positions,
      batch.B,
      batch.T,
    )
      .data[0];
  } finally {
    g.clear();
    be.release(mark);
  }
}
