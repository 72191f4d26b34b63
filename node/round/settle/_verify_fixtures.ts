/**
 * Fixtures shared by the verifier's tests: a round's delta announcements,
 * a witness that saw them all long before the manifest, and what a
 * sharded round's leader publishes.
 *
 * @module
 */
import type { DeltaAnnounce } from "../../../protocol/messages/messages.ts";
import { WORK_FIELDS } from "../../../protocol/codec/_message_fixtures.ts";
import { cidOf, JOB, MODEL, SPEC, TEST_ADDRESS } from "../services/_fakes.ts";
import { Rng } from "../../../kernels/data/rng.ts";
import type { Witness } from "./manifest_check.ts";
import { cidForBytes, cidToString } from "../../../protocol/content/cid.ts";
import type { JobSpec } from "../../../protocol/spec/job_spec.ts";
import {
  encodeSliceScreenSums,
  groupScreenSums,
  type SliceScreenSums,
} from "../../../protocol/aggregation/slice_screen.ts";
import {
  dequantize,
  quantize,
} from "../../../protocol/aggregation/quantize.ts";
import { encodeQuantized } from "../../../protocol/aggregation/quantized_container.ts";
import {
  screenSharded,
  updateOfSlices,
  updateSlices,
} from "../../../protocol/round/slice_update.ts";
import {
  encodeRoundCheckpoint,
  genesisCheckpoint,
  type RoundCheckpoint,
  roundCheckpointCid,
} from "../../../protocol/round/round_checkpoint.ts";
import type { ManifestShards } from "../../../protocol/round/round_manifest.ts";
import { checkpointOfUpdate } from "../../../protocol/round/round_update.ts";

/** Round 0's delta announcements of `peers` after `parent`. */
export function announcements(
  peers: readonly string[],
  parent: string,
  tokens: number,
): Promise<DeltaAnnounce[]> {
  return Promise.all(peers.map(async (peer) => ({
    v: 1 as const,
    type: "delta" as const,
    peer,
    job: JOB,
    round: 0,
    parent,
    delta: await cidOf(`delta of ${peer}`),
    tokens,
    loss: 3,
    account: TEST_ADDRESS,
    ...WORK_FIELDS,
  })));
}

/** A witness that saw every one of `announced` long before, none in time to doubt. */
export function witnessOf(announced: readonly DeltaAnnounce[]): Witness {
  return {
    announced,
    expected: announced,
    preceding: announced,
    amendBy: 0,
    faultsBy: 0,
    steadySince: () => true,
    hasty: () => false,
    current: () => announced,
  };
}

/**
 * What a sharded round's leader publishes from whole `deltas` over
 * `parent` (its checkpoint and CID): the update slices and sums as blocks
 * by CID, the manifest's `shards` naming them, and C(r+1)'s CID;
 * `tamper` changes update slices or sums first.
 */
export async function publishSharded(
  spec: JobSpec,
  parent: { ckpt: RoundCheckpoint; cid: string },
  deltas: readonly { peer: string; tokens: number; delta: Float32Array }[],
  tamper: (update: Float32Array[], sums: SliceScreenSums[]) => void = () => {},
): Promise<{
  shards: ManifestShards;
  blocks: Map<string, Uint8Array>;
  checkpoint: string;
}> {
  const screen = screenSharded(deltas);
  const slices = updateSlices(spec, screen, deltas);
  const values = slices.map(dequantize);
  const sums = [...screen.sums];
  tamper(values, sums);
  const update = values.map((v) =>
    quantize(v, { bits: slices[0].bits, blockSize: slices[0].blockSize })
  );
  const blocks = new Map<string, Uint8Array>();
  const put = async (bytes: Uint8Array) => {
    const cid = cidToString(await cidForBytes(bytes));
    blocks.set(cid, bytes);
    return cid;
  };
  const next = checkpointOfUpdate(
    spec,
    parent.ckpt,
    parent.cid,
    updateOfSlices(screen.bounds, update),
  );
  return {
    shards: {
      slices: screen.slices,
      sums: await Promise.all(sums.map((x) => put(encodeSliceScreenSums(x)))),
      groups: await Promise.all(
        groupScreenSums(sums).map((x) => put(encodeSliceScreenSums(x))),
      ),
      update: await Promise.all(update.map((x) => put(encodeQuantized(x)))),
      backups: [],
    },
    blocks,
    checkpoint: cidToString(
      await roundCheckpointCid(encodeRoundCheckpoint(next)),
    ),
  };
}

/**
 * A job sharded by slices on a model of four pieces (two layers of d_model
 * 32), so that a round of 8 deltas or more is led by slices: its spec, C(0)
 * and `peers`' honest deltas (one shared direction plus a little of each
 * peer's own) and announcements after `parent`, drawn from `seed`.
 */
export async function fourPieceJob(
  peers: readonly string[],
  parent: string,
  tokens: number,
  seed: string,
) {
  const model = { ...MODEL, dModel: 32, layers: 2 };
  const spec: JobSpec = { ...SPEC, model, sharding: "slices" };
  const genesis = genesisCheckpoint(JOB, model, 0);
  const rng = new Rng(seed);
  const common = Float32Array.from(genesis.params, () => rng.normal());
  const deltas = new Map(peers.map((peer) => [
    peer,
    Float32Array.from(common, (v) => 1e-3 * (v + 0.2 * rng.normal())),
  ]));
  const announced = await announcements(peers, parent, tokens);
  return { spec, genesis, params: genesis.params.length, deltas, announced };
}
