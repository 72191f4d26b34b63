/**
 * Test-only fixtures for the wiring's tests (`work_test.ts`,
 * `driver_test.ts`): a tiny job on real text, its genesis stored in memory,
 * a trainer on the JS backend and an identity.
 *
 * @module
 */
import { generateKeyPair } from "@libp2p/crypto/keys";
import { createJsBackend } from "../../kernels/js_backend.ts";
import { createCpuTrainer } from "../../kernels/trainer.ts";
import { cidToString } from "../../protocol/content/cid.ts";
import { chunkDataset } from "../../protocol/content/dataset.ts";
import {
  CHECKPOINT_CODEC,
  encodeRoundCheckpoint,
  genesisCheckpoint,
} from "../../protocol/round/round_checkpoint.ts";
import { defaultJobSpec } from "../../protocol/spec/job_spec.ts";
import type { Identity } from "../identity.ts";
import * as fake from "./services/_fakes.ts";
import { RoundTrainer } from "./trainer/inner_loop.ts";

export const DATASET = await chunkDataset(
  new TextEncoder().encode(
    "round work wires each action to its phase. ".repeat(40),
  ),
  256,
);
export const SPEC = defaultJobSpec({
  dataset: { cid: DATASET.id, valFraction: 0.2 },
  model: fake.MODEL,
  innerSteps: 2,
  batchSize: 2,
  minPeers: 3,
  rounds: 2,
});
export const JOB = await fake.cidOf("the job's spec");

/** The job's genesis checkpoint stored in `blocks`; its CID. */
export async function storeGenesis(blocks: fake.MemoryBlocks): Promise<string> {
  const bytes = encodeRoundCheckpoint(
    genesisCheckpoint(JOB, SPEC.model, SPEC.seed),
  );
  return cidToString(await blocks.put(bytes, CHECKPOINT_CODEC));
}

/** A trainer of the job's model on the JS backend. */
export function jsTrainer(): RoundTrainer {
  return new RoundTrainer({
    createTrainer: (init) => createCpuTrainer(createJsBackend(), init),
    spec: SPEC,
    dataset: DATASET,
    peerId: fake.PEERS[0],
  });
}

/** PEERS[0] with the test account. */
export async function identity(): Promise<Identity> {
  return {
    peerKey: await generateKeyPair("Ed25519"),
    peerId: fake.PEERS[0],
    accountKey: fake.TEST_KEY,
    address: fake.TEST_ADDRESS,
  };
}

/** Resolves once `ok()` holds (polling), or fails after 20 s. */
export async function until(ok: () => boolean): Promise<void> {
  const deadline = Date.now() + 20_000;
  while (!ok()) {
    if (Date.now() > deadline) throw new Error("timed out");
    await new Promise((r) => setTimeout(r, 5));
  }
}
